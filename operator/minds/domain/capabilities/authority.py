"""May this mind use this capability, with these parameters, on this target, now?

The decision order is fixed and every stage is recorded, so an auditor can replay why:

1. the capability is registered and not locked by the mind;
2. its parameters pass the capability's schema (unknown parameters refused);
3. the namespace fence: a mind acts only in its own namespace. A workload in another
   namespace is out of reach unless a live grant *held in that namespace* names this mind
   (``spec.mind: NAMESPACE/NAME``) and covers capability, target and parameters: only someone
   entitled to create grants there can have written it. That grant is consumed once if the
   action goes ahead; it opens the fence and nothing more (the mind's own commitments, policy
   and approvals still apply);
4. commitments: a matching ``refrain`` denies; with ``unlessApproval`` it requires approval;
5. the mind's capability policy (first matching rule wins, else the capability's default);
6. a live grant of the mind's own namespace covering capability, target and parameters turns
   "approve" into "allow" (never "deny" into anything), and is consumed once if the action goes
   ahead. Grants reach only the namespace they are held in, so these never cover a target the
   fence let through;
7. ``require_approval`` (a step or a commitment-bound intention asks for it) forces approval
   for a writing capability even where policy or a grant allows.

Approval history is never an input. A check (an observation made to verify an outcome) never
asks a person: where the answer would be "approve", a check is "not observable".
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from enum import StrEnum
from fnmatch import fnmatchcase
from typing import Any

from pydantic import ValidationError

from minds.domain.base import Model
from minds.domain.capabilities.policy import GrantView, decide, target_matches
from minds.domain.capabilities.registry import (
    REGISTRY,
    CapabilityRegistry,
    CapabilitySpec,
    Targeting,
    WorkloadParameters,
)
from minds.domain.resources.mind import (
    Access,
    Commitment,
    CommitmentMode,
    MindSpec,
    PolicyDecision,
    Risk,
)


class Stage(StrEnum):
    REGISTERED = "registered"
    LOCKED = "locked"
    PARAMETERS = "parameters"
    NAMESPACE = "namespace"
    COMMITMENTS = "commitments"
    POLICY = "policy"
    GRANT = "grant"
    REQUIRE_APPROVAL = "require_approval"
    CHECK = "check"


class StageResult(Model):
    stage: Stage
    decision: PolicyDecision
    reason: str


class AuthorityDecision(Model):
    """The answer, the trail that produced it, and what it relies on."""

    decision: PolicyDecision
    trail: tuple[StageResult, ...]
    target: str = ""
    grant: str | None = None
    grant_namespace: str | None = None
    """Where ``grant`` is held when it is not the mind's own namespace (the fence's grant)."""
    parameters: dict[str, Any] | None = None

    @property
    def reason(self) -> str:
        return self.trail[-1].reason if self.trail else ""


class Crossing(Model):
    """A grant held in another namespace that names this mind as ``NAMESPACE/NAME``."""

    namespace: str
    grant: GrantView
    limits: dict[str, Any] = {}


def mind_reference(namespace: str, mind: str) -> str:
    """How a grant in another namespace names a mind."""
    return f"{namespace}/{mind}"


def target_namespace(spec: CapabilitySpec, parameters: Model) -> str | None:
    """The namespace a capability acts in, or None for targets outside the cluster's
    namespaces (the controller's host, a web site)."""
    if spec.targeting is Targeting.WORKLOAD:
        assert isinstance(parameters, WorkloadParameters)
        return parameters.namespace
    return None


def requested_namespace(
    capability: str, parameters: Mapping[str, Any] | None, registry: CapabilityRegistry = REGISTRY
) -> str | None:
    """The namespace raw parameters ask to act in, before validation: where to look for
    crossing grants. The decision itself re-derives it from validated parameters."""
    spec = registry.get(capability)
    if spec is None or spec.targeting is not Targeting.WORKLOAD:
        return None
    value = (parameters or {}).get("namespace")
    return value if isinstance(value, str) else None


def _fence(
    trail: list[StageResult],
    *,
    namespace: str,
    where: str | None,
    capability: str,
    target: str,
    values: Mapping[str, Any],
    aliases: Mapping[str, str],
    crossings: Sequence[Crossing],
    now: datetime,
) -> Crossing | AuthorityDecision | None:
    """Stage 3: None when the target is in reach without a crossing, the crossing grant that
    lets the mind reach it, or the denial."""
    if where is None or where == namespace:
        return None
    refusals: list[str] = []
    for crossing in crossings:
        if crossing.namespace != where:
            continue
        grant = crossing.grant
        if not (grant.live(now) and grant.covers(capability, target)):
            continue
        problems = limit_problems(crossing.limits, values, aliases)
        if problems:
            refusals.append(f"grant {where}/{grant.name} does not cover: {'; '.join(problems)}")
            continue
        trail.append(
            StageResult(
                stage=Stage.NAMESPACE,
                decision=PolicyDecision.ALLOW,
                reason=f"grant {where}/{grant.name}, held in {where}, lets this mind of "
                f"{namespace} use {capability} on {target}",
            )
        )
        return crossing
    reason = (
        f"{target} is in namespace {where}, outside the mind's namespace {namespace}: a mind "
        f"acts only in its own namespace unless a live CapabilityGrant held in {where} names it "
        f"({namespace}/NAME) for {capability} on {target}"
    )
    return _deny(trail, Stage.NAMESPACE, "; ".join([reason, *refusals]), target)


def risk_of(spec: CapabilitySpec) -> Risk:
    """Reads are low risk; writes medium; writes that cannot safely be repeated are high."""
    if spec.read_only:
        return Risk.LOW
    return Risk.MEDIUM if spec.idempotent else Risk.HIGH


def commitment_applies(
    commitment: Commitment, spec: CapabilitySpec, target: str, now: datetime
) -> bool:
    if commitment.expires_at is not None and now >= commitment.expires_at:
        return False
    if not fnmatchcase(spec.name, commitment.capability):
        return False
    if not target_matches(commitment.target, target):
        return False
    if commitment.access is Access.READ and not spec.read_only:
        return False
    if commitment.access is Access.WRITE and spec.read_only:
        return False
    return commitment.risk is Risk.ANY or commitment.risk is risk_of(spec)


def _json_equal(value: Any, limit: Any) -> bool:
    """Python's ``True == 1`` would let a boolean limit admit a number and the reverse."""
    return isinstance(value, bool) == isinstance(limit, bool) and value == limit


def limit_problems(
    limits: Mapping[str, Any],
    parameters: Mapping[str, Any],
    aliases: Mapping[str, str] | None = None,
) -> list[str]:
    """How parameters exceed a grant's limits. A number is a maximum, a list the allowed values,
    anything else must be equal (as JSON compares: ``true`` is not ``1``). ``aliases`` maps
    field names to the spelling ``parameters`` uses, so a limit may name a parameter either way
    (``since_seconds`` or ``sinceSeconds``), as planning accepts both. A limit on a parameter
    the capability does not have fails closed: the grant's author meant to bound something we
    cannot see."""
    problems: list[str] = []
    for key, limit in limits.items():
        name = key if key in parameters else (aliases or {}).get(key, key)
        if name not in parameters:
            problems.append(f"{key}: limited by the grant but not a parameter of this capability")
            continue
        value = parameters[name]
        if isinstance(limit, bool) or not isinstance(limit, int | float | list):
            if not _json_equal(value, limit):
                problems.append(f"{key}: {value!r} is not the granted {limit!r}")
        elif isinstance(limit, list):
            if not any(_json_equal(value, allowed) for allowed in limit):
                problems.append(f"{key}: {value!r} is not one of the granted {limit!r}")
        elif not isinstance(value, int | float) or isinstance(value, bool) or value > limit:
            problems.append(f"{key}: {value!r} exceeds the granted maximum {limit!r}")
    return problems


def _deny(
    trail: list[StageResult], stage: Stage, reason: str, target: str = ""
) -> AuthorityDecision:
    trail.append(StageResult(stage=stage, decision=PolicyDecision.DENY, reason=reason))
    return AuthorityDecision(decision=PolicyDecision.DENY, trail=tuple(trail), target=target)


def authorize(
    *,
    namespace: str,
    mind: MindSpec,
    capability: str,
    parameters: Mapping[str, Any] | None,
    grants: Sequence[GrantView],
    grant_limits: Mapping[str, Mapping[str, Any]],
    now: datetime,
    crossings: Sequence[Crossing] = (),
    require_approval: bool = False,
    check: bool = False,
    registry: CapabilityRegistry = REGISTRY,
) -> AuthorityDecision:
    """The decision for one invocation by a mind of ``namespace``. ``grants`` are the grants
    held in ``namespace`` for this mind and ``grant_limits`` maps their names to parameter
    limits; ``crossings`` are grants held elsewhere that name it."""
    trail: list[StageResult] = []
    spec = registry.get(capability)
    if spec is None:
        return _deny(trail, Stage.REGISTERED, f"{capability} is not a registered capability")
    trail.append(
        StageResult(stage=Stage.REGISTERED, decision=PolicyDecision.ALLOW, reason="registered")
    )
    if capability in mind.locked_capabilities:
        return _deny(trail, Stage.LOCKED, f"{capability} is locked by the mind")

    try:
        parsed = spec.parse(parameters)
    except ValidationError as exc:
        refused = "; ".join(
            f"{'.'.join(str(p) for p in e['loc']) or 'parameters'}: {e['msg']}"
            for e in exc.errors()
        )
        return _deny(trail, Stage.PARAMETERS, f"parameters refused: {refused}")
    target = spec.target_of(parsed)
    values = parsed.model_dump(mode="json", by_alias=True)
    aliases = {n: f.alias for n, f in spec.parameters.model_fields.items() if f.alias}

    fence = _fence(
        trail,
        namespace=namespace,
        where=target_namespace(spec, parsed),
        capability=capability,
        target=target,
        values=values,
        aliases=aliases,
        crossings=crossings,
        now=now,
    )
    if isinstance(fence, AuthorityDecision):
        return fence

    needs_approval: list[str] = []
    # A person's revocation lifts a revocable refrain; an irrevocable one (a kept promise
    # included) binds whatever the list says.
    revoked = {r.commitment for r in mind.commitment_revocations}
    for index, commitment in enumerate(mind.commitments):
        if commitment.mode is not CommitmentMode.REFRAIN:
            continue
        if commitment.revocable and commitment.name in revoked:
            continue
        if not commitment_applies(commitment, spec, target, now):
            continue
        where = commitment.label(index)
        if not commitment.unless_approval:
            return _deny(
                trail, Stage.COMMITMENTS, f"{where} refrains from {capability} on {target}", target
            )
        needs_approval.append(f"{where} refrains from {capability} on {target} unless approved")
    if needs_approval:
        trail.append(
            StageResult(
                stage=Stage.COMMITMENTS,
                decision=PolicyDecision.APPROVE,
                reason="; ".join(needs_approval),
            )
        )

    policy = decide(mind.capability_policy, capability, target, registry)
    trail.append(StageResult(stage=Stage.POLICY, decision=policy.decision, reason=policy.reason))
    if policy.decision is PolicyDecision.DENY:
        return AuthorityDecision(decision=PolicyDecision.DENY, trail=tuple(trail), target=target)
    decision = PolicyDecision.APPROVE if needs_approval else policy.decision

    grant: str | None = None
    if decision is PolicyDecision.APPROVE and fence is None:
        for candidate in grants:
            if not (candidate.live(now) and candidate.covers(capability, target)):
                continue
            problems = limit_problems(grant_limits.get(candidate.name, {}), values, aliases)
            if problems:
                trail.append(
                    StageResult(
                        stage=Stage.GRANT,
                        decision=PolicyDecision.APPROVE,
                        reason=f"grant {candidate.name} does not cover: {'; '.join(problems)}",
                    )
                )
                continue
            grant = candidate.name
            decision = PolicyDecision.ALLOW
            trail.append(
                StageResult(
                    stage=Stage.GRANT,
                    decision=decision,
                    reason=f"grant {grant} covers {capability} on {target}",
                )
            )
            break

    if require_approval and not spec.read_only and decision is PolicyDecision.ALLOW:
        grant = None  # the approval, not the grant, is what the action will rely on
        decision = PolicyDecision.APPROVE
        trail.append(
            StageResult(
                stage=Stage.REQUIRE_APPROVAL,
                decision=decision,
                reason="the step requires approval for a writing capability",
            )
        )

    if check and decision is not PolicyDecision.ALLOW:
        return _deny(trail, Stage.CHECK, "not observable: a check never asks for approval", target)

    if fence is not None:
        # The fence's grant is relied on (and consumed) whatever opened the rest of the way.
        return AuthorityDecision(
            decision=decision,
            trail=tuple(trail),
            target=target,
            grant=fence.grant.name,
            grant_namespace=fence.namespace,
            parameters=values,
        )
    return AuthorityDecision(
        decision=decision, trail=tuple(trail), target=target, grant=grant, parameters=values
    )

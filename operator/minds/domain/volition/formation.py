"""Formation: whether an active approach want becomes an intention.

The score weighs, with every term recorded:

| term             | contribution                                                             |
|------------------|--------------------------------------------------------------------------|
| strength         | the want's decayed strength                                              |
| urgency          | + `URGENCY_GAIN` x urgency                                               |
| goal             | + `GOAL_GAIN` x the goal's priority, when the want serves a goal         |
| commitment       | + `COMMITMENT_GAIN`, when the want carries a commitment                  |
| expected utility | + `UTILITY_GAIN` x the chance the planner's strategy achieves it         |
| risk             | - the mind's caution x `RISK_LEVEL` of the means (reads are low risk)    |
| cost             | - `COST_GAIN` x expected seconds / `COST_SCALE_SECONDS` (at most 1)      |
| privacy          | - `PRIVACY_GAIN` x how much personal data the means may expose           |
| autonomy         | + `AUTONOMY_GAIN` when the mind may act without a person's attention     |

A want is formed into an intention unless one of these holds; the first that holds is the one
reason recorded:

1. `duplicate`: a live intention about the same subject exists (one at a time per subject,
   whether it acts, waits for a person or is suspended), or the intention formed for this
   want has ended but is not settled yet (settlement comes first in the next cycle), or a
   want to look at a subject was answered by an investigation of it (see `coverage.answers`);
2. `covered`: an open Plan, whoever wrote it, already acts on the subject (see `coverage`);
3. `forbidden_by_commitment`: an absolute `refrain` commitment covers the means;
4. `unavailable`: the means' capability is unregistered or locked, or its parameters invalid;
5. `denied`: the mind's policy denies the means;
6. `deferred`: an open conflict defers the want (a value weighs more);
7. `below_threshold`: the score is below `FORMATION_THRESHOLD`;
8. `capacity`: the mind already holds `capacity` top-level intentions that can act (see
   `lapse`: blocked and suspended ones take no room).

The ninth reason, `no_possible_plan`, comes after forming: when the planner finds no plan for
a freshly formed intention, `abandon_without_plan` abandons it and suppresses its want.

A formed intention starts with the strategies that failed on its subject within
`FAILURE_MEMORY` (`failed`, see `settlement`), so the planner does not try them again.

A formed intention requires approval when a `refrain ... unlessApproval` commitment covers its
means, or a conflict let it win only with that constraint. Formation reads authority through
`authorize` and never widens it: the executor asks the capability layer again for every step.
A want without means forms an investigation of its subject; the planner's diagnosis and the
capability layer then judge each read.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from datetime import datetime
from enum import StrEnum
from typing import Any, Final, NamedTuple

from pydantic import model_validator

from minds.domain.base import Model
from minds.domain.capabilities.authority import AuthorityDecision, Stage, authorize, risk_of
from minds.domain.capabilities.policy import GrantView
from minds.domain.capabilities.registry import REGISTRY, CapabilityRegistry
from minds.domain.intentions import (
    LIVE_STATUSES,
    IntentionKind,
    IntentionRecord,
    IntentionStatus,
    intention_id,
    transitioned,
)
from minds.domain.planning.strategies import (
    DIAGNOSE_CONFIDENCE,
    READ_CONFIDENCE,
    RESTART,
    RESTART_CONFIDENCE,
    UNVERIFIED_WRITE_CONFIDENCE,
)
from minds.domain.resources.mind import MindSpec, PolicyDecision, Risk
from minds.domain.volition.conflicts import Conflict, ConflictOutcome, Constraint
from minds.domain.volition.coverage import OpenPlan, answered_by, covering
from minds.domain.volition.decisions import DecisionKind, Term, TermOp, VolitionDecision, total
from minds.domain.volition.lapse import acting
from minds.domain.volition.wants import Valence, Want, WantStatus, decayed_strength, suppress

__all__ = [
    "AUTONOMY_GAIN",
    "COMMITMENT_GAIN",
    "COST_GAIN",
    "COST_SCALE_SECONDS",
    "DEFAULT_CAPACITY",
    "FORMATION_THRESHOLD",
    "GOAL_GAIN",
    "INVESTIGATION_EXPOSURE",
    "INVESTIGATION_SECONDS",
    "PRIVACY_EXPOSURE",
    "PRIVACY_GAIN",
    "RISK_LEVEL",
    "URGENCY_GAIN",
    "UTILITY_GAIN",
    "Abandoned",
    "Formation",
    "NotFormed",
    "abandon_without_plan",
    "form",
]

#: A want forms an intention when its score reaches this. A moderate want (about 0.5) with
#: ordinary urgency forms; a weak one, or a risky act for a cautious mind, does not.
FORMATION_THRESHOLD: Final = 0.5
#: Live top-level intentions per mind: each may hold operator attention (approvals, requests),
#: which is capped at five open requests by default.
DEFAULT_CAPACITY: Final = 3
URGENCY_GAIN: Final = 0.3
GOAL_GAIN: Final = 0.2
COMMITMENT_GAIN: Final = 0.2
UTILITY_GAIN: Final = 0.2
#: Risk by the capability layer's levels (reads low; writes medium; unrepeatable writes high),
#: multiplied by the mind's caution: with caution 1 a restart (high) costs 0.6.
RISK_LEVEL: Final[Mapping[Risk, float]] = {Risk.LOW: 0.1, Risk.MEDIUM: 0.3, Risk.HIGH: 0.6}
COST_GAIN: Final = 0.1
#: Expected seconds that count as full cost: five minutes of work.
COST_SCALE_SECONDS: Final = 300
#: A diagnosis is a handful of bounded reads and a summary.
INVESTIGATION_SECONDS: Final = 15
PRIVACY_GAIN: Final = 0.2
#: How much personal data a capability may expose (logs carry identifiers, process command
#: lines secrets, pages anything); others expose none.
PRIVACY_EXPOSURE: Final[Mapping[str, float]] = {
    "logs.query": 1.0,
    "host.process.list": 0.5,
    "browser.read": 0.5,
}
#: A diagnosis may read logs, masked by default.
INVESTIGATION_EXPOSURE: Final = 0.5
AUTONOMY_GAIN: Final = 0.1


class NotFormed(StrEnum):
    FORBIDDEN_BY_COMMITMENT = "forbidden_by_commitment"
    DENIED = "denied"
    UNAVAILABLE = "unavailable"
    NO_POSSIBLE_PLAN = "no_possible_plan"
    COVERED = "covered"
    BELOW_THRESHOLD = "below_threshold"
    CAPACITY = "capacity"
    DUPLICATE = "duplicate"
    DEFERRED = "deferred"


class Formation(Model):
    """Formed (with the intention to store) or not formed (with exactly one reason)."""

    want: str
    intention: IntentionRecord | None = None
    reason: NotFormed | None = None
    explanation: str
    score: float
    terms: tuple[Term, ...]
    decision: VolitionDecision

    @model_validator(mode="after")
    def _one_answer(self) -> Formation:
        if (self.intention is None) == (self.reason is None):
            raise ValueError("a formation has either an intention or a reason, not both")
        return self

    @property
    def formed(self) -> bool:
        return self.intention is not None

    @property
    def requires_approval(self) -> bool:
        return self.intention is not None and self.intention.requires_approval


_UNAVAILABLE_STAGES: Final = frozenset({Stage.REGISTERED, Stage.LOCKED, Stage.PARAMETERS})


def _expected_utility(want: Want, registry: CapabilityRegistry) -> float:
    """The planner's own prior that its strategy achieves the intention."""
    if want.means is None:
        return DIAGNOSE_CONFIDENCE
    spec = registry.get(want.means.capability)
    if spec is None:
        return 0.0
    if spec.name == RESTART:
        return RESTART_CONFIDENCE
    return READ_CONFIDENCE if spec.read_only else UNVERIFIED_WRITE_CONFIDENCE


def _penalty(name: str, amount: float) -> Term:
    return Term(name=name, op=TermOp.ADD, value=-amount if amount else 0.0)


def _terms(
    want: Want,
    spec: MindSpec,
    authority: AuthorityDecision | None,
    requires_approval: bool,
    now: datetime,
    registry: CapabilityRegistry,
) -> tuple[Term, ...]:
    capability = registry.get(want.means.capability) if want.means else None
    risk = risk_of(capability) if capability else Risk.LOW
    seconds = capability.expected_seconds if capability else INVESTIGATION_SECONDS
    if want.means is None:
        exposure = INVESTIGATION_EXPOSURE
    else:
        exposure = PRIVACY_EXPOSURE.get(want.means.capability, 0.0)
    autonomous = not requires_approval and (
        authority is None or authority.decision is PolicyDecision.ALLOW
    )
    goal = next((g for g in spec.goals if g.name == want.goal), None)
    terms = [
        Term(name="strength", op=TermOp.SET, value=decayed_strength(want, now)),
        Term(name="urgency", op=TermOp.ADD, value=URGENCY_GAIN * want.urgency),
    ]
    if goal is not None:
        terms.append(Term(name=f"goal:{goal.name}", op=TermOp.ADD, value=GOAL_GAIN * goal.priority))
    if want.commitment is not None:
        terms.append(
            Term(name=f"commitment:{want.commitment}", op=TermOp.ADD, value=COMMITMENT_GAIN)
        )
    utility = _expected_utility(want, registry)
    terms += [
        Term(name="expected_utility", op=TermOp.ADD, value=UTILITY_GAIN * utility),
        _penalty(f"risk:{risk.value}", spec.caution * RISK_LEVEL[risk]),
        _penalty("cost", COST_GAIN * min(1.0, seconds / COST_SCALE_SECONDS)),
        _penalty("privacy", PRIVACY_GAIN * exposure),
        Term(name="autonomy", op=TermOp.ADD, value=AUTONOMY_GAIN if autonomous else 0.0),
    ]
    return tuple(terms)


class _Refusal(NamedTuple):
    reason: NotFormed
    explanation: str
    grounds: str  # what stays the same while the refusal does: see `_basis`


def _refusal(
    subject: str,
    authority: AuthorityDecision | None,
    conflicts: Sequence[Conflict],
    existing: Sequence[IntentionRecord],
    capacity: int,
    score: float,
    covered: OpenPlan | None,
    serving: str | None,
    answered: IntentionRecord | None = None,
) -> _Refusal | None:
    """The one reason not to form, the first that holds (see the module notes)."""
    if serving is not None:
        why = f"intention {serving} formed for this want is not settled yet"
        return _Refusal(NotFormed.DUPLICATE, why, serving)
    for intention in existing:
        if intention.status in LIVE_STATUSES and intention.subject == subject:
            why = f"intention {intention.id} is already about {subject}"
            return _Refusal(NotFormed.DUPLICATE, why, intention.id)
    if answered is not None:
        why = f"investigation {answered.id} of {subject} answered it already"
        return _Refusal(NotFormed.DUPLICATE, why, answered.id)
    if covered is not None:
        why = f"open plan {covered.name} ({covered.origin.value}) already acts on {subject}"
        return _Refusal(NotFormed.COVERED, why, covered.name)
    if authority is not None and authority.decision is PolicyDecision.DENY:
        stage = authority.trail[-1].stage
        if stage is Stage.COMMITMENTS:
            reason = NotFormed.FORBIDDEN_BY_COMMITMENT
        elif stage in _UNAVAILABLE_STAGES:
            reason = NotFormed.UNAVAILABLE
        else:
            reason = NotFormed.DENIED
        return _Refusal(reason, authority.reason, authority.reason)
    for conflict in conflicts:
        if conflict.open and conflict.outcome is ConflictOutcome.DEFERRED:
            why = f"deferred by conflict {conflict.id} with {conflict.avoid}"
            return _Refusal(NotFormed.DEFERRED, why, conflict.id)
    if score < FORMATION_THRESHOLD:
        why = f"score {score:.3f} is below {FORMATION_THRESHOLD}"
        return _Refusal(NotFormed.BELOW_THRESHOLD, why, "")
    live = acting(existing)
    if live >= capacity:
        why = f"{live} intentions can act; the capacity is {capacity}"
        return _Refusal(NotFormed.CAPACITY, why, "")
    return None


def _basis(want: Want, refusal: _Refusal) -> str:
    """A refusal is recorded once per want state: a cycle that refuses again for the same
    reason, on no new evidence, adds no row. A duplicate is recorded once per intention, and
    coverage once per plan, however often the want is reinforced."""
    if refusal.reason in (NotFormed.DUPLICATE, NotFormed.COVERED):
        return json.dumps([refusal.reason.value, refusal.grounds])
    return json.dumps([want.last_reinforced_at.isoformat(), refusal.reason.value, refusal.grounds])


def form(
    want: Want,
    mind_spec: MindSpec,
    existing_intentions: Sequence[IntentionRecord],
    capacity: int,
    now: datetime,
    *,
    conflicts: Sequence[Conflict] = (),
    grants: Sequence[GrantView] = (),
    grant_limits: Mapping[str, Mapping[str, Any]] | None = None,
    registry: CapabilityRegistry = REGISTRY,
    open_plans: Sequence[OpenPlan] = (),
    failed: Sequence[str] = (),
) -> Formation:
    """Form an intention from an active approach want, or say why not (see the module notes).
    `conflicts` may hold any of the mind's conflicts; those about this want count; `open_plans`
    the open Plans that may cover it; `failed` the strategies remembered as failed on its
    subject. Same inputs, same result."""
    if want.valence is not Valence.APPROACH or want.status is not WantStatus.ACTIVE:
        raise ValueError("only an active approach want can form an intention")
    ours = [c for c in conflicts if c.open and c.approach == want.id]
    authority = None
    if want.means is not None:
        authority = authorize(
            namespace=want.namespace,
            mind=mind_spec,
            capability=want.means.capability,
            parameters=want.means.parameters,
            grants=grants,
            grant_limits=grant_limits or {},
            now=now,
            registry=registry,
        )
    subject = (authority.target if authority else "") or want.target or want.subject
    approvals = [
        s.reason
        for s in (authority.trail if authority else ())
        if s.stage is Stage.COMMITMENTS and s.decision is PolicyDecision.APPROVE
    ] + [
        f"conflict {c.id}: the approach won only with approval"
        for c in ours
        if c.constraint is Constraint.REQUIRE_APPROVAL
    ]
    terms = _terms(want, mind_spec, authority, bool(approvals), now, registry)
    score = total(terms)
    capability = registry.get(want.means.capability) if want.means else None
    acts = capability is not None and not capability.read_only
    covered = covering(subject, acts, open_plans, existing_intentions)
    refused = _refusal(
        subject,
        authority,
        ours,
        existing_intentions,
        capacity,
        score,
        covered,
        want.intention,
        answered_by(want, existing_intentions),
    )
    inputs: dict[str, Any] = {
        "subject": subject,
        "means": want.means.model_dump(mode="json") if want.means else None,
        "authority": (
            {"decision": authority.decision.value, "trail": [s.reason for s in authority.trail]}
            if authority
            else None
        ),
        "approvalReasons": approvals,
        "conflicts": [c.id for c in ours],
        "capacity": capacity,
        "coveredBy": covered.name if covered else None,
        "failedStrategies": list(failed),
    }
    scores = {"score": score, "threshold": FORMATION_THRESHOLD}
    if refused is not None:
        decision = VolitionDecision(
            namespace=want.namespace,
            mind=want.mind,
            kind=DecisionKind.FORMATION,
            subjects={"want": want.id},
            outcome=refused.reason.value,
            reason=refused.explanation,
            inputs=inputs,
            scores=scores,
            terms=terms,
            at=now,
            basis=_basis(want, refused),
        )
        return Formation(
            want=want.id,
            reason=refused.reason,
            explanation=refused.explanation,
            score=score,
            terms=terms,
            decision=decision,
        )
    means = want.means
    kind = IntentionKind.ACTION if means else IntentionKind.INVESTIGATION
    objective = (
        f"{means.capability} on {subject}: {want.summary}"
        if means
        else f"investigate {subject}: {want.summary}"
    )
    intention = IntentionRecord(
        id=intention_id("want", want.id, now.isoformat()),
        namespace=want.namespace,
        mind=want.mind,
        objective=objective[:500],
        kind=kind,
        subject=subject,
        means_capability=means.capability if means else None,
        means_parameters=(authority.parameters if authority else None) or None,
        requires_approval=bool(approvals),
        failed_strategies=list(failed),
        created_at=now,
        updated_at=now,
    )
    explanation = f"formed {kind.value} with score {score:.3f}" + (
        "; requires approval: " + "; ".join(approvals) if approvals else ""
    )
    decision = VolitionDecision(
        namespace=want.namespace,
        mind=want.mind,
        kind=DecisionKind.FORMATION,
        subjects={"want": want.id, "intention": intention.id},
        outcome="formed",
        reason=explanation,
        inputs={**inputs, "objective": intention.objective, "kind": kind.value},
        scores=scores,
        terms=terms,
        at=now,
    )
    return Formation(
        want=want.id,
        intention=intention,
        explanation=explanation,
        score=score,
        terms=terms,
        decision=decision,
    )


class Abandoned(NamedTuple):
    intention: IntentionRecord
    want: Want
    decisions: tuple[VolitionDecision, ...]


def abandon_without_plan(
    intention: IntentionRecord, want: Want, planning_reason: str, now: datetime
) -> Abandoned:
    """A freshly formed intention the planner has no possible plan for is abandoned, and the
    want it serves suppressed for `SUPPRESSION_PERIOD`, so it is not formed again every cycle."""
    reason = f"no possible plan: {planning_reason}"[:2000]
    abandoned = transitioned(intention, IntentionStatus.ABANDONED, reason, now)
    if abandoned is None:
        raise ValueError(f"intention {intention.id} is {intention.status.value}: cannot abandon")
    suppressed, suppression = suppress(want, now, f"intention {intention.id}: {reason}")
    suppressed = suppressed.model_copy(update={"intention": None})  # settled here
    decision = VolitionDecision(
        namespace=want.namespace,
        mind=want.mind,
        kind=DecisionKind.FORMATION,
        subjects={"want": want.id, "intention": intention.id},
        outcome=NotFormed.NO_POSSIBLE_PLAN.value,
        reason=reason,
        inputs={"planning": planning_reason[:2000]},
        at=now,
    )
    return Abandoned(abandoned, suppressed, (decision, suppression))

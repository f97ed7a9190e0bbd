"""Policy decisions as pure functions: may a mind use a capability on a target?

Rules are evaluated in order and the **first matching rule wins**, as in a firewall: a reader of
the Mind's YAML sees the answer by reading top to bottom, and a narrow exception is written
above the broad rule it overrides. When no rule matches, the capability's own default applies
(see `CapabilitySpec.default_decision`): `service.status`, `host.disk.usage` and
`host.memory.status` are allowed as bounded reads; everything else asks for approval. An
unregistered capability is always denied.

Target patterns are shell globs. A pattern without `/` is matched against the last segment of
a workload target, so `atlas-*` means "a workload named atlas-something in any namespace",
while `prod/atlas-*` and `*/payments` also constrain the namespace.

A live grant turns an `approve` answer into `allow` for its capability and target pattern. It
never overrides `deny`: a grant widens what approval would have allowed, not what policy
forbids.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from fnmatch import fnmatchcase
from typing import Annotated

from pydantic import Field

from minds.domain.base import Model
from minds.domain.capabilities.registry import REGISTRY, CapabilityRegistry
from minds.domain.resources.mind import PolicyDecision, PolicyRule

__all__ = [
    "GrantView",
    "PolicyDecision",
    "PolicyOutcome",
    "PolicyRule",
    "decide",
    "decide_with_grants",
    "live_grant_for",
    "target_matches",
]


def target_matches(pattern: str, target: str) -> bool:
    """Whether a target glob covers a target (see the module notes on `/`)."""
    if fnmatchcase(target, pattern):
        return True
    if "/" not in pattern and "/" in target:
        return fnmatchcase(target.rsplit("/", 1)[1], pattern)
    return False


@dataclass(frozen=True, slots=True)
class PolicyOutcome:
    """A decision and where it came from: a rule's index, a grant, or the default."""

    decision: PolicyDecision
    reason: str
    rule: int | None = None
    grant: str | None = None


def decide(
    rules: Sequence[PolicyRule],
    capability: str,
    target: str,
    registry: CapabilityRegistry = REGISTRY,
) -> PolicyOutcome:
    """The policy answer for `capability` on `target`; first matching rule wins."""
    spec = registry.get(capability)
    if spec is None:
        return PolicyOutcome(PolicyDecision.DENY, f"{capability} is not a registered capability")
    for index, rule in enumerate(rules):
        if fnmatchcase(capability, rule.capability) and target_matches(rule.target, target):
            return PolicyOutcome(
                rule.decision,
                f"capabilityPolicy[{index}] ({rule.capability} on {rule.target}) says "
                f"{rule.decision.value}",
                rule=index,
            )
    return PolicyOutcome(
        spec.default_decision,
        f"no rule matches; the default for {capability} is {spec.default_decision.value}",
    )


class GrantView(Model):
    """What planning and policy need to know of a `CapabilityGrant`."""

    name: Annotated[str, Field(max_length=253)]
    namespace: Annotated[str, Field(min_length=1, max_length=63)]
    """Where the grant is held: the only namespace whose workloads it can cover."""
    capability: str
    target_pattern: str
    not_before: datetime | None = None
    expires_at: datetime
    operations_remaining: Annotated[int, Field(ge=0)]
    revoked: bool = False

    def live(self, now: datetime) -> bool:
        started = self.not_before is None or self.not_before <= now
        return (
            started and now < self.expires_at and self.operations_remaining > 0 and not self.revoked
        )

    def covers(self, capability: str, target: str) -> bool:
        """A workload target (``NAMESPACE/NAME``) of another namespace is never covered,
        whatever the pattern says: ``*`` held in one namespace means every workload of that
        namespace, not of the cluster."""
        if "/" in target and target.split("/", 1)[0] != self.namespace:
            return False
        return self.capability == capability and target_matches(self.target_pattern, target)


def live_grant_for(
    grants: Sequence[GrantView], capability: str, target: str, now: datetime
) -> GrantView | None:
    """The first live grant covering the capability on the target, if any."""
    return next(
        (g for g in grants if g.live(now) and g.covers(capability, target)),
        None,
    )


def decide_with_grants(
    rules: Sequence[PolicyRule],
    grants: Sequence[GrantView],
    capability: str,
    target: str,
    now: datetime,
    registry: CapabilityRegistry = REGISTRY,
) -> PolicyOutcome:
    """Policy, then live grants: a grant turns `approve` into `allow`, never `deny`."""
    outcome = decide(rules, capability, target, registry)
    if outcome.decision is not PolicyDecision.APPROVE:
        return outcome
    grant = live_grant_for(grants, capability, target, now)
    if grant is None:
        return outcome
    return PolicyOutcome(
        PolicyDecision.ALLOW,
        f"grant {grant.name} covers {capability} on {target}",
        rule=outcome.rule,
        grant=grant.name,
    )

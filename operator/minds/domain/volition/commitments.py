"""Commitments: promises about means, and where each one stands.

A commitment (on the Mind: `do` or `refrain`, with capability, target, access and risk
matchers, optional `unlessApproval`, `due`, `expiresAt`, `revocable`) constrains what the mind
may do and never grants authority: a `refrain` is enforced by the capability layer
(`authorize`), and formation turns a `refrain ... unlessApproval` that covers an action into an
intention that requires approval.

`commitment_state` judges one commitment; the first rule that applies wins:

| state         | when                                                                          |
|---------------|-------------------------------------------------------------------------------|
| `fulfilled`   | the ledger records it fulfilled (an intention that carried it was fulfilled); |
|               | a recurring one until the first period boundary after that fulfilment         |
| `revoked`     | the ledger records it revoked, or a person revoked it (`spec.commitment-      |
|               | Revocations`) and it is `revocable`; the reason names the person. Revoking an |
|               | irrevocable commitment is refused (by admission too) and changes nothing      |
| `expired`     | `expiresAt` has come                                                          |
| `superseded`  | a later commitment in the list has the same mode and the same four matchers   |
| `conflicting` | a live commitment of the opposite mode overlaps it on all four matchers and   |
|               | the `refrain` side is absolute (with `unlessApproval` both can be kept)       |
| `impossible`  | `do`: every registered capability it names is locked, or denied by policy on  |
|               | its target (or it names none)                                                 |
| `overdue`     | `do`: `OVERDUE_GRACE` after `due`                                             |
| `due`         | `do`: `due` has come, or it has no due time (a promise without a deadline)    |
| `active`      | otherwise                                                                     |

A recurring `do` commitment (`everySeconds`) is a schedule anchored on `due`: period k starts
at `due + k * everySeconds`, and `due_at` is the start of the period `now` falls in; the rules
above read `due` as that start. A fulfilment holds until the first period boundary after it is
recorded, so the commitment acts once per period:

- the schedule does not drift: boundaries stay where `due` put them, however long acting took;
- a plan that ran past a boundary kept the period it ended in, and the next act waits for the
  next boundary: a period missed while a plan ran long is not made up by a second act right
  after the first (two restarts back to back is the repeat a schedule must never cause);
- an act that failed fulfils nothing: the period stays due (then overdue), its want is
  suppressed for an hour and its evidence (the period's start) is not new again, so it is
  tried once per period, and the next period starts on time.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime, timedelta
from enum import StrEnum
from fnmatch import fnmatchcase
from typing import Final, NamedTuple

from pydantic import Field, ValidationError

from minds.domain.base import Model
from minds.domain.capabilities.policy import decide, target_matches
from minds.domain.capabilities.registry import REGISTRY, CapabilityRegistry, Targeting
from minds.domain.planning.views import Means
from minds.domain.resources.mind import (
    Access,
    Commitment,
    CommitmentMode,
    MindSpec,
    PolicyDecision,
    Risk,
)
from minds.domain.volition.decisions import DecisionKind, VolitionDecision

__all__ = [
    "OVERDUE_GRACE",
    "Assessment",
    "CommitmentContext",
    "CommitmentState",
    "check_commitments",
    "commitment_state",
    "concrete_means",
    "due_at",
]

#: A due commitment becomes overdue this long after its due time: a few cycles at the default
#: interval for the want to form an intention and its plan to start.
OVERDUE_GRACE: Final = timedelta(minutes=15)


class CommitmentState(StrEnum):
    ACTIVE = "active"
    DUE = "due"
    OVERDUE = "overdue"
    IMPOSSIBLE = "impossible"
    CONFLICTING = "conflicting"
    SUPERSEDED = "superseded"
    FULFILLED = "fulfilled"
    REVOKED = "revoked"
    EXPIRED = "expired"


class CommitmentContext(Model):
    """What judging a commitment needs besides the clock: the Mind's spec (its commitments,
    locks and policy), the states the ledger records, and revocations an operator asked for."""

    spec: MindSpec
    recorded: dict[str, CommitmentState] = Field(default_factory=dict)
    #: Commitment name -> who revoked it and why (``spec.commitmentRevocations``).
    revocations: dict[str, str] = Field(default_factory=dict)
    #: Commitment name -> when its fulfilment was recorded (what a recurring one's next period
    #: is counted from).
    fulfilled_at: dict[str, datetime] = Field(default_factory=dict)


class Assessment(NamedTuple):
    state: CommitmentState
    reason: str


def _matchers(c: Commitment) -> tuple[str, str, Access, Risk]:
    return c.capability, c.target, c.access, c.risk


def _overlap(a: Commitment, b: Commitment) -> bool:
    """Whether two commitments can cover the same use of a capability (patterns are compared
    each against the other, so `atlas-*` overlaps `ops/atlas-worker`)."""
    return (
        (fnmatchcase(a.capability, b.capability) or fnmatchcase(b.capability, a.capability))
        and (target_matches(a.target, b.target) or target_matches(b.target, a.target))
        and (a.access == b.access or Access.ANY in (a.access, b.access))
        and (a.risk == b.risk or Risk.ANY in (a.risk, b.risk))
    )


def _live(c: Commitment, now: datetime, context: CommitmentContext) -> bool:
    # A recurring commitment kept for this period is still a promise: it recurs.
    ended = {CommitmentState.REVOKED} | (
        {CommitmentState.FULFILLED} if c.every_seconds is None else set()
    )
    expired = c.expires_at is not None and now >= c.expires_at
    return not expired and context.recorded.get(c.name) not in ended


def _impossible(c: Commitment, spec: MindSpec, registry: CapabilityRegistry) -> str | None:
    names = [n for n in registry.names() if fnmatchcase(n, c.capability)]
    if not names:
        return f"{c.capability} matches no registered capability"
    blocked = []
    for name in names:
        if name in spec.locked_capabilities:
            blocked.append(f"{name} is locked")
        elif (
            decide(spec.capability_policy, name, c.target, registry).decision is PolicyDecision.DENY
        ):
            blocked.append(f"{name} is denied by policy on {c.target}")
    return "; ".join(blocked) if len(blocked) == len(names) else None


def due_at(commitment: Commitment, now: datetime) -> datetime | None:
    """When `commitment` is due at `now`: its `due`, or for a recurring one that has begun,
    the start of the period `now` falls in."""
    due, every = commitment.due, commitment.every_seconds
    if due is None or every is None or now < due:
        return due
    period = timedelta(seconds=every)
    return due + ((now - due) // period) * period


def _fulfilled(commitment: Commitment, now: datetime, context: CommitmentContext) -> bool:
    """Whether the recorded fulfilment holds at `now`: always for a one-off commitment; for a
    recurring one, while `now` is in the period the fulfilment was recorded in (a fulfilment
    whose time is unknown holds, as a one-off's would)."""
    if context.recorded.get(commitment.name) is not CommitmentState.FULFILLED:
        return False
    start, at = due_at(commitment, now), context.fulfilled_at.get(commitment.name)
    return commitment.every_seconds is None or start is None or at is None or at >= start


def commitment_state(
    commitment: Commitment,
    now: datetime,
    context: CommitmentContext,
    registry: CapabilityRegistry = REGISTRY,
) -> Assessment:
    """Where one commitment stands at `now` (see the module notes for the rules)."""
    c, spec = commitment, context.spec
    recorded = context.recorded.get(c.name)
    due = due_at(c, now)
    if _fulfilled(c, now, context):
        if c.every_seconds is None or due is None:
            return Assessment(CommitmentState.FULFILLED, "recorded as fulfilled")
        again = due + timedelta(seconds=c.every_seconds)
        return Assessment(
            CommitmentState.FULFILLED,
            f"fulfilled for the period from {due.isoformat()}; due again at {again.isoformat()}",
        )
    if recorded is CommitmentState.REVOKED:
        return Assessment(CommitmentState.REVOKED, "recorded as revoked")
    refused = ""
    if c.name in context.revocations:
        if c.revocable:
            return Assessment(CommitmentState.REVOKED, context.revocations[c.name])
        refused = " (revocation refused: the commitment is not revocable)"
    if c.expires_at is not None and now >= c.expires_at:
        return Assessment(
            CommitmentState.EXPIRED, f"expired at {c.expires_at.isoformat()}{refused}"
        )
    commitments = list(spec.commitments)
    position = next((i for i, other in enumerate(commitments) if other.name == c.name), -1)
    for later in commitments[position + 1 :] if position >= 0 else ():
        if later.mode is c.mode and _matchers(later) == _matchers(c) and _live(later, now, context):
            return Assessment(CommitmentState.SUPERSEDED, f"superseded by {later.name}{refused}")
    for other in commitments:
        if other.name == c.name or other.mode is c.mode or not _live(other, now, context):
            continue
        refrain = c if c.mode is CommitmentMode.REFRAIN else other
        if _overlap(c, other) and not refrain.unless_approval:
            return Assessment(
                CommitmentState.CONFLICTING,
                f"conflicts with {other.name} ({other.mode.value} {other.capability} on "
                f"{other.target}){refused}",
            )
    if c.mode is CommitmentMode.REFRAIN:
        return Assessment(CommitmentState.ACTIVE, f"refraining{refused}")
    blocked = _impossible(c, spec, registry)
    if blocked is not None:
        return Assessment(CommitmentState.IMPOSSIBLE, blocked + refused)
    if due is not None and now >= due + OVERDUE_GRACE:
        return Assessment(CommitmentState.OVERDUE, f"due at {due.isoformat()}{refused}")
    if due is None or now >= due:
        when = due.isoformat() if due else "from the start (no due time)"
        return Assessment(CommitmentState.DUE, f"due {when}{refused}")
    return Assessment(CommitmentState.ACTIVE, f"due at {due.isoformat()}{refused}")


def check_commitments(
    now: datetime,
    context: CommitmentContext,
    *,
    namespace: str,
    mind: str,
    registry: CapabilityRegistry = REGISTRY,
    told: Mapping[str, CommitmentState] | None = None,
) -> tuple[dict[str, Assessment], tuple[VolitionDecision, ...]]:
    """Every commitment's state, and a decision for each that differs from the one the ledger
    holds: ``told``, when the context's ``recorded`` leaves out what an earlier Mind object
    recorded (it is judged afresh, and told only if it changes)."""
    states: dict[str, Assessment] = {}
    decisions: list[VolitionDecision] = []
    held = context.recorded if told is None else told
    for commitment in context.spec.commitments:
        assessed = commitment_state(commitment, now, context, registry)
        states[commitment.name] = assessed
        if held.get(commitment.name) is assessed.state:
            continue
        decisions.append(
            VolitionDecision(
                namespace=namespace,
                mind=mind,
                kind=DecisionKind.COMMITMENT_STATE,
                subjects={"commitment": commitment.name},
                outcome=assessed.state.value,
                reason=assessed.reason,
                inputs={
                    "commitment": commitment.model_dump(mode="json", by_alias=True),
                    "was": (held.get(commitment.name) or "unrecorded"),
                },
                at=now,
            )
        )
    return states, tuple(decisions)


def concrete_means(
    commitment: Commitment, registry: CapabilityRegistry = REGISTRY
) -> tuple[Means, str] | None:
    """The means a `do` commitment names exactly (one registered capability, one workload or
    the host), with its target; None when it names a pattern."""
    spec = registry.get(commitment.capability)
    if spec is None:
        return None
    parameters: Mapping[str, str]
    if spec.targeting is Targeting.WORKLOAD and "/" in commitment.target:
        namespace, name = commitment.target.split("/", 1)
        parameters = {"namespace": namespace, "name": name}
    elif spec.targeting is Targeting.HOST and target_matches(commitment.target, "host"):
        parameters = {}
    else:
        return None
    try:
        parsed = spec.parse(parameters)
    except ValidationError:
        return None  # a glob is not a valid name
    return Means(capability=spec.name, parameters=dict(parameters)), spec.target_of(parsed)

"""What an invocation of a capability is, what comes of it, and how the ledger is told of it:
shared by the service that authorises and acts and the one that asks a person."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from enum import StrEnum
from typing import Any

from pydantic import JsonValue

from minds.domain.capabilities.authority import AuthorityDecision
from minds.domain.capabilities.results import DriverResult
from minds.domain.executions import ExecutionOrigin
from minds.domain.ledger import EventRecord, SubjectRef, idempotency_key
from minds.domain.resources.approval import ApprovalOrigin, Explanation, GrantRequest
from minds.domain.resources.mind import PolicyDecision


class OutcomeKind(StrEnum):
    EXECUTED = "executed"
    PENDING = "pending"
    DENIED = "denied"
    FAILED = "failed"
    #: The operator-attention cap is reached; ask again later.
    DEFERRED = "deferred"


@dataclass(frozen=True)
class Origin:
    """Who asks: a plan step (plan, uid, step, attempt), or a mind's cycle for checks."""

    mind: str
    intention: str | None = None
    plan: str | None = None
    plan_uid: str | None = None
    step: str | None = None
    attempt: int = 1
    cycle: str | None = None

    def execution(self) -> ExecutionOrigin:
        return ExecutionOrigin(
            plan=self.plan,
            plan_uid=self.plan_uid,
            step=self.step,
            attempt=self.attempt if self.step else None,
            cycle=self.cycle,
        )

    def approval(self) -> ApprovalOrigin:
        return ApprovalOrigin(
            mind=self.mind,
            intention=self.intention,
            plan=self.plan,
            plan_uid=self.plan_uid,
            step=self.step,
            attempt=self.attempt,
        )


@dataclass(frozen=True)
class Routine:
    """A read a mind takes again and again (its cycle's look at a goal): when it finds what
    the last look found, it extends a series instead of writing rows of its own (see
    ``minds.domain.series``). ``scope`` names whose look it is (``goal NAME``); ``facts`` add
    what else must be equal (the Mind's uid, the goal); ``conclude`` says what the result would
    do to the belief it is evidence about: the conclusion to compare, and whether it changes
    the belief (then the look is never routine)."""

    scope: str
    facts: dict[str, JsonValue]
    conclude: Callable[[DriverResult], tuple[JsonValue, bool]]


@dataclass(frozen=True)
class Invocation:
    namespace: str
    capability: str
    parameters: dict[str, Any]
    origin: Origin
    explanation: Explanation
    evidence: dict[str, JsonValue] = field(default_factory=dict)
    require_approval: bool = False
    #: A check observes to verify an outcome; it never asks a person.
    check: bool = False
    batch_key: str | None = None
    #: How long its Approval waits for a person; None: the service's (the controller's
    #: configured ``approvals.ttlSeconds``).
    approval_ttl: timedelta | None = None
    #: A read-only look that may be routine; None: always recorded in full.
    routine: Routine | None = None


@dataclass(frozen=True)
class CapabilityRequest:
    """A request for temporary, scoped authority: becomes an Approval of kind grant."""

    namespace: str
    capability: str
    origin: Origin
    grant: GrantRequest
    explanation: Explanation
    batch_key: str | None = None
    approval_ttl: timedelta | None = None


@dataclass(frozen=True)
class InvocationOutcome:
    kind: OutcomeKind
    reason: str
    result: DriverResult | None = None
    approval: str | None = None
    execution_id: int | None = None
    decision: AuthorityDecision | None = None
    #: Not executed because the Approval that allowed it moved (expired, withdrawn) between
    #: the executor reading it and recording it: nothing was written, nothing ran.
    approval_moved: bool = False
    #: A routine look's series (its subject), extended or opened by it; None for any other.
    series: str | None = None
    #: It extended its series: no row of its own (``execution_id`` is None).
    routine: bool = False


@dataclass(frozen=True)
class Preview:
    decision: PolicyDecision
    trail: list[dict[str, Any]]
    dry_run: DriverResult | None = None


def subject_of(inv: Invocation) -> SubjectRef:
    """What the ledger files an invocation's rows under: its Plan, or else its Mind."""
    if inv.origin.plan:
        return SubjectRef(kind="Plan", name=inv.origin.plan, uid=inv.origin.plan_uid)
    return SubjectRef(kind="Mind", name=inv.origin.mind)


def told_row(
    inv: Invocation,
    type_: str,
    key: str,
    payload: dict[str, JsonValue],
    at: datetime,
) -> EventRecord:
    """One ledger row of an invocation, once per ``key`` for its type."""
    return EventRecord(
        mind=inv.origin.mind,
        namespace=inv.namespace,
        type=type_,
        subject=subject_of(inv),
        payload=payload,
        occurred_at=at,
        idempotency_key=idempotency_key("capability", type_, key),
    )

"""The Approval lifecycle as pure rules: names, phases, what each transition records, and
whether an Approval authorises a step now.

Pending -> Approved | Denied (a person decided) | Expired (nobody decided in time) |
Withdrawn (the mind no longer needs it, or its plan is gone or finished); Approved ->
Executed (the executor did the approved thing: the action ran, or the grant was created) or
Withdrawn (its plan went away first, or the person who approved is no longer an approver of
the Mind). A decision exists only in ``spec`` (written by a person, checked by the admission
policy). The controller records what follows from it in the ledger (:func:`next_transition`),
and the phase in ``status`` is a function of that record alone (:func:`status_of`), kept for
people to read: a phase someone else wrote into ``status`` is put back, and never authorises,
overturns or completes anything. What authorises acting is :func:`authorises`: the decision in
``spec``, the ledger's record of when the controller first saw it (before ``expiresAt``, or
not at all), and the Approval's bond to one plan's uid, step and attempt.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from enum import StrEnum

from minds.domain.ledger import EventRecord, idempotency_key
from minds.domain.resources.approval import (
    ApprovalKind,
    ApprovalOrigin,
    ApprovalPhase,
    ApprovalSpec,
    ApprovalStatus,
    Approvers,
    Decision,
)
from minds.domain.resources.common import Condition, ConditionStatus

#: How long a request waits for a person unless the caller says otherwise.
DEFAULT_TTL = timedelta(hours=24)

OPEN = frozenset({ApprovalPhase.PENDING})
FINAL = frozenset(
    {ApprovalPhase.DENIED, ApprovalPhase.EXPIRED, ApprovalPhase.WITHDRAWN, ApprovalPhase.EXECUTED}
)

_NOT_DNS = re.compile(r"[^a-z0-9-]+")


def _dns(text: str, limit: int) -> str:
    cleaned = _NOT_DNS.sub("-", text.lower()).strip("-")
    return cleaned[:limit].strip("-") or "x"


def approval_name(origin: ApprovalOrigin, kind: ApprovalKind) -> str:
    """Deterministic from the origin: a creation retried after a crash finds the Approval it
    already made instead of asking the person twice. Readable prefix, unique hash suffix."""
    digest = idempotency_key(
        "approval",
        kind.value,
        origin.mind,
        origin.intention or "",
        origin.plan or "",
        # The uid, so that a Plan re-created under the same name asks under another name
        # instead of adopting the old plan's Approval (and its decision).
        origin.plan_uid or "",
        origin.step or "",
        str(origin.attempt),
    )[:10]
    readable = "-".join(_dns(p, 40) for p in (origin.mind, origin.step or kind.value) if p)
    return f"{readable}-{digest}"


def label_value(text: str) -> str:
    """A label-safe rendering (63 characters, alphanumeric ends)."""
    cleaned = re.sub(r"[^A-Za-z0-9._-]+", "-", text).strip("-._")
    if len(cleaned) <= 63:
        return cleaned or "none"
    return f"{cleaned[:52].rstrip('-._')}-{idempotency_key(text)[:10]}"


# -- the lifecycle, as the ledger records it ------------------------------------------------

#: The ledger events of an Approval's lifecycle. Written by the controller alone, they are the
#: only source of its phase: ``status`` is derived from them, and put back when someone else
#: wrote it.
REQUESTED = "approval_requested"
APPROVED = "approval_approved"
DENIED = "approval_denied"
EXPIRED = "approval_expired"
LATE = "approval_decision_late"
REFUSED = "approval_decision_refused"
WITHDRAWN = "approval_withdrawn"
EXECUTED = "approval_executed"
NOT_EXECUTED = "approval_not_executed"
IGNORED = "approval_decision_ignored"

LIFECYCLE = (
    REQUESTED,
    APPROVED,
    DENIED,
    EXPIRED,
    LATE,
    REFUSED,
    WITHDRAWN,
    EXECUTED,
    NOT_EXECUTED,
    IGNORED,
)

#: The phase each event leads to; when several are recorded, the one latest in _PRECEDENCE
#: holds (an action that ran while its plan was being closed is Executed, not Withdrawn).
_PHASE_OF: Mapping[str, ApprovalPhase] = {
    APPROVED: ApprovalPhase.APPROVED,
    DENIED: ApprovalPhase.DENIED,
    EXPIRED: ApprovalPhase.EXPIRED,
    LATE: ApprovalPhase.EXPIRED,
    REFUSED: ApprovalPhase.WITHDRAWN,
    WITHDRAWN: ApprovalPhase.WITHDRAWN,
    # Refused by the re-check before acting: it will never act, so it never lingers Approved.
    NOT_EXECUTED: ApprovalPhase.WITHDRAWN,
    EXECUTED: ApprovalPhase.EXECUTED,
}
_PRECEDENCE = (
    ApprovalPhase.PENDING,
    ApprovalPhase.APPROVED,
    ApprovalPhase.DENIED,
    ApprovalPhase.EXPIRED,
    ApprovalPhase.WITHDRAWN,
    ApprovalPhase.EXECUTED,
)


@dataclass(frozen=True)
class Recorded:
    """What the ledger holds about one Approval object (its uid): the controller's own
    derivation, which nobody but the controller writes. ``approved_at`` is when the controller
    first saw the approval (its observation, not a time anyone else wrote)."""

    approved_at: datetime | None = None
    expired: bool = False
    withdrawn: bool = False
    phase: ApprovalPhase = ApprovalPhase.PENDING
    decided_at: datetime | None = None
    executed_at: datetime | None = None
    execution: str | None = None
    message: str | None = None
    types: frozenset[str] = frozenset()
    #: The first row of all: the request, usually.
    first_at: datetime | None = None


def _text(event: EventRecord) -> str | None:
    for key in ("message", "outcome", "reason"):
        value = event.payload.get(key)
        if isinstance(value, str) and value:
            return value[:4096]
    return None


def recorded(events: Iterable[EventRecord]) -> Recorded:
    """Fold an Approval's ledger events (any order) into what acting and status depend on."""
    first: dict[str, EventRecord] = {}
    for event in sorted(events, key=lambda e: e.occurred_at):
        first.setdefault(event.type, event)
    phase = max(
        (_PHASE_OF[t] for t in first if t in _PHASE_OF),
        key=_PRECEDENCE.index,
        default=ApprovalPhase.PENDING,
    )
    defining = [first[t] for t in first if _PHASE_OF.get(t) is phase]
    decided = first.get(APPROVED) or first.get(DENIED)
    executed = first.get(EXECUTED)
    approved = first.get(APPROVED)
    execution = executed.payload.get("execution") if executed is not None else None
    return Recorded(
        approved_at=approved.occurred_at if approved is not None else None,
        expired=EXPIRED in first or LATE in first,
        withdrawn=WITHDRAWN in first or REFUSED in first,
        phase=phase,
        decided_at=decided.occurred_at if decided is not None else None,
        executed_at=executed.occurred_at if executed is not None else None,
        execution=execution if isinstance(execution, str) else None,
        # The latest word on the phase: a late decision after the expiry says what to do.
        message=_text(defining[-1]) if defining else None,
        types=frozenset(first),
        first_at=min((e.occurred_at for e in first.values()), default=None),
    )


def status_of(recorded: Recorded, observed_generation: int | None = None) -> ApprovalStatus:
    """The status an Approval shows: a function of the ledger alone. Whatever else ``status``
    says (someone with the status subresource wrote it) is replaced by this."""
    return ApprovalStatus(
        phase=recorded.phase,
        decided_at=recorded.decided_at,
        executed_at=recorded.executed_at,
        execution=recorded.execution,
        message=recorded.message,
        observed_generation=observed_generation,
        conditions=conditions_of(recorded, observed_generation),
    )


DECIDED, EXECUTED_CONDITION = "Decided", "Executed"

#: Why an Approval has not run (yet), by phase: the reason of its ``Executed`` condition.
_NOT_EXECUTED: Mapping[ApprovalPhase, str] = {
    ApprovalPhase.APPROVED: "AwaitingExecution",
    ApprovalPhase.DENIED: "Denied",
    ApprovalPhase.EXPIRED: "Expired",
    ApprovalPhase.WITHDRAWN: "Withdrawn",
}


def conditions_of(recorded: Recorded, generation: int | None = None) -> list[Condition]:
    """``Decided`` and ``Executed``, from the ledger as the phase is, with the ledger's times:
    a person's decision counts once the controller recorded it (a decision refused, late or
    withdrawn before anyone decided is none), and execution once the action ran. Nothing is
    said while the request is pending: it shows the schema's default with no status write (one
    per approval would double an approved action's writes), and ``kubectl wait`` waits for a
    condition to appear."""
    if recorded.first_at is None or recorded.phase is ApprovalPhase.PENDING:
        return []
    phase, message = recorded.phase, recorded.message or recorded.phase.value
    # False since the request: an expiry or a withdrawal leaves it False, so no transition.
    since = recorded.first_at
    if recorded.decided_at is not None:
        denied = DENIED in recorded.types
        decided = Condition(
            type=DECIDED, status=ConditionStatus.TRUE, reason="Denied" if denied else "Approved",
            message=message, last_transition_time=recorded.decided_at,
            observed_generation=generation,
        )  # fmt: skip
    else:
        decided = Condition(
            type=DECIDED, status=ConditionStatus.FALSE, reason=phase.value, message=message,
            last_transition_time=since, observed_generation=generation,
        )  # fmt: skip
    if recorded.executed_at is not None:
        executed = Condition(
            type=EXECUTED_CONDITION, status=ConditionStatus.TRUE, reason="Executed",
            message=message, last_transition_time=recorded.executed_at,
            observed_generation=generation,
        )  # fmt: skip
    else:
        executed = Condition(
            type=EXECUTED_CONDITION, status=ConditionStatus.FALSE,
            reason=_NOT_EXECUTED.get(phase, phase.value), message=message,
            last_transition_time=recorded.first_at, observed_generation=generation,
        )  # fmt: skip
    return [decided, executed]


@dataclass(frozen=True)
class Transition:
    """A fact to record: the ledger event, and what it says."""

    event: str
    message: str


def _late(spec: ApprovalSpec, now: datetime) -> Transition:
    return Transition(
        LATE,
        f"approved by {spec.decided_by}, but the controller first saw the decision at "
        f"{now.isoformat()}, not before the request expired at {spec.expires_at.isoformat()}: "
        "nothing runs; approve a fresh request",
    )


def _pending(spec: ApprovalSpec, now: datetime, refusal: str | None) -> Transition | None:
    if spec.decision is Decision.APPROVED and now >= spec.expires_at:
        return _late(spec, now)
    if spec.decision is Decision.APPROVED and refusal is not None:
        return Transition(REFUSED, refusal)
    if spec.decision is Decision.APPROVED:
        return Transition(APPROVED, f"approved by {spec.decided_by}")
    if spec.decision is Decision.DENIED:
        return Transition(
            DENIED, f"denied by {spec.decided_by}" + (f": {spec.note}" if spec.note else "")
        )
    if now >= spec.expires_at:
        return Transition(EXPIRED, "nobody decided in time")
    return None


def _approved(spec: ApprovalSpec, now: datetime, refusal: str | None) -> Transition | None:
    # Authority is checked again for as long as nothing acted: an approver removed from the
    # Mind since (or a Mind deleted) no longer authorises anything.
    return Transition(REFUSED, refusal) if refusal is not None else None


def _ended(spec: ApprovalSpec, now: datetime, refusal: str | None) -> Transition | None:
    if spec.decision is None:
        return None
    return Transition(
        IGNORED,
        f"{spec.decision.value} by {spec.decided_by} on an Approval already ended: not acted on",
    )


def _expired(spec: ApprovalSpec, now: datetime, refusal: str | None) -> Transition | None:
    # Expired first, decided after (a status write lagging behind let admission through).
    return _late(spec, now) if spec.decision is Decision.APPROVED else _ended(spec, now, refusal)


_NEXT: Mapping[ApprovalPhase, Callable[[ApprovalSpec, datetime, str | None], Transition | None]] = {
    ApprovalPhase.PENDING: _pending,
    ApprovalPhase.APPROVED: _approved,
    ApprovalPhase.EXPIRED: _expired,
    ApprovalPhase.WITHDRAWN: _ended,
}


#: How long an approval may go unshown while the plan that asked acts on it (see
#: ``shown_later``): the executor acts within a second when nothing holds it back.
APPROVED_SHOWN_AFTER = timedelta(seconds=5)


def shown_later(recorded: Recorded, shown: str | None) -> bool:
    """Whether the status write of a fresh approval can wait: the ledger says Approved and the
    status still shows Pending. The executor of the asking plan, woken by the same decision, is
    about to act and show Executed; writing Approved first would cost a write the action makes
    moot. If the action has not come after ``APPROVED_SHOWN_AFTER`` (its target held, its plan
    blocked), Approved is shown then. Every other change is shown at once."""
    return recorded.phase is ApprovalPhase.APPROVED and shown in (None, ApprovalPhase.PENDING)


def next_transition(
    spec: ApprovalSpec, recorded: Recorded, now: datetime, refusal: str | None = None
) -> Transition | None:
    """The one fact that follows from what a person wrote in ``spec``, what the ledger already
    holds and the clock, if it is not recorded yet. ``refusal``: why the decider is not
    authority for the Mind now (see :func:`decider_refused`), None when they are.

    Nobody can prove when a decision was written (managed fields are client-writable), only
    when the controller first saw it: an approval first seen at or after ``expiresAt`` fails
    closed and is recorded as late. A denial counts whenever it is seen; without a decision the
    request expires at ``expiresAt``.
    """
    rule = _NEXT.get(recorded.phase)
    found = rule(spec, now, refusal) if rule is not None else None
    if found is None or found.event in recorded.types:
        return None
    if found.event == IGNORED and REFUSED in recorded.types:
        return None  # the refusal already named the decision
    return found


def withdrawable(spec: ApprovalSpec, recorded: Recorded) -> bool:
    """A mind may withdraw its own request while nobody has decided it."""
    return recorded.phase is ApprovalPhase.PENDING and spec.decision is None


#: Phases in which an Approval may still lead to acting; abandoning it ends that.
_UNSPENT = frozenset({ApprovalPhase.PENDING, ApprovalPhase.APPROVED})


def abandonable(recorded: Recorded) -> bool:
    """Its plan is gone, replaced or finished: nothing will ever act on this Approval, so it
    is withdrawn whether or not a person decided (a decision on it is recorded, never acted
    on). Denied, Expired, Executed and Withdrawn stay as they are."""
    return recorded.phase in _UNSPENT


def decider_refused(
    spec: ApprovalSpec, mind: Approvers | None, author: str | None = None
) -> str | None:
    """Why the person who approved is not authority for the Mind now, or None.

    The admission policy checked the decider against the approvers copied into the Approval;
    this checks that copy against the Mind as it is now. The decider's groups are not known
    here (only admission sees them), so a decision through a group stands only while every
    group the Approval names is still one of the Mind's. ``mind``: None when the Mind is gone.
    ``author``: the person who wrote the asking Plan, when four eyes apply.
    """
    by = spec.decided_by or ""
    if mind is None:
        return f"approved by {by}, but mind {spec.mind} is gone: not acted on"
    if author is not None and by == author:
        return (
            f"approved by {by}, who wrote the plan that asks: someone else must approve "
            "(four eyes); approve a fresh request"
        )
    if by in spec.approvers.users:
        held = by in mind.users
    else:
        held = bool(spec.approvers.groups) and set(spec.approvers.groups) <= set(mind.groups)
    if held:
        return None
    return (
        f"approved by {by}, who is not an approver of mind {spec.mind} (spec.approvers): "
        "not acted on"
    )


def releaser_refused(by: str, mind: str | None, approvers: Approvers | None) -> str | None:
    """Why ``by`` may not release a step of a plan of ``mind``, or None.

    Admission checked the requester against the Mind's approvers, groups included; this
    checks the name again against the Mind as it is now. Group membership is known only to
    admission, so a Mind that names groups is trusted to it. ``approvers``: None when the Mind
    is gone or unreadable (fails closed)."""
    if not mind:
        return "the plan names no mind, so nobody is an approver of it"
    if approvers is None:
        return f"mind {mind} is gone: nobody may release a step of its plans"
    if by in approvers.users or approvers.groups:
        return None
    return f"{by} is not an approver of mind {mind} (spec.approvers)"


# -- does this Approval authorise this step now? --------------------------------------------


class Verdict(StrEnum):
    WAIT = "wait"  # nobody decided yet, or the decision is not recorded yet
    ACT = "act"  # approved in time, for exactly this step: the executor may act
    DENIED = "denied"
    EXPIRED = "expired"
    WITHDRAWN = "withdrawn"
    NOT_OURS = "not_ours"  # bound to another plan, step, attempt or request


@dataclass(frozen=True)
class Asker:
    """The step that asked, as the executor knows it from the Plan it runs."""

    plan_uid: str
    step: str
    attempt: int
    kind: ApprovalKind
    capability: str
    target: str


@dataclass(frozen=True)
class Ruling:
    verdict: Verdict
    reason: str


def _ownership(spec: ApprovalSpec, owners: Sequence[str], asker: Asker) -> str | None:
    origin = spec.origin
    if origin.plan_uid != asker.plan_uid:
        return "it was raised by another plan (its plan uid differs)"
    if asker.plan_uid not in owners:
        return "it is not owned by this plan (ownerReferences name another uid, or none)"
    if origin.step != asker.step or origin.attempt != asker.attempt:
        return f"it was raised for {origin.step} attempt {origin.attempt}"
    if (spec.kind, spec.capability, spec.target) != (asker.kind, asker.capability, asker.target):
        return (
            f"it asks for {spec.kind.value} {spec.capability} on {spec.target}, not for "
            f"{asker.kind.value} {asker.capability} on {asker.target}"
        )
    return None


def authorises(
    spec: ApprovalSpec, owners: Sequence[str], asker: Asker, recorded: Recorded, now: datetime
) -> Ruling:
    """Whether this Approval lets ``asker`` act now. ``owners``: the uids of the Plans named
    in its ownerReferences. Fails closed: every doubt is a reason not to act.

    The approval counts only when the controller recorded it in the ledger before the
    deadline (:func:`next_transition` records it); a withdrawal or an expiry recorded for this
    object ends it for good, whatever ``spec`` or ``status`` say later.
    """
    foreign = _ownership(spec, owners, asker)
    if foreign is not None:
        return Ruling(Verdict.NOT_OURS, f"not this step's approval: {foreign}")
    if recorded.withdrawn:
        return Ruling(Verdict.WITHDRAWN, recorded.message or "withdrawn before it was acted on")
    if recorded.expired:
        return Ruling(Verdict.EXPIRED, recorded.message or "expired: nobody decided in time")
    if spec.decision is Decision.DENIED:
        note = f": {spec.note}" if spec.note else ""
        return Ruling(Verdict.DENIED, f"{spec.decided_by}{note}")
    if spec.decision is Decision.APPROVED:
        if recorded.approved_at is None:
            if now >= spec.expires_at:
                return Ruling(Verdict.EXPIRED, "approved, but not recorded before it expired")
            return Ruling(Verdict.WAIT, "approved; the decision is not recorded yet")
        if recorded.approved_at >= spec.expires_at:
            return Ruling(Verdict.EXPIRED, "approved, but only read after it expired")
        return Ruling(Verdict.ACT, f"approved by {spec.decided_by}")
    if now >= spec.expires_at:
        return Ruling(Verdict.EXPIRED, "expired: nobody decided in time")
    return Ruling(Verdict.WAIT, "waiting for a person")


#: Plan phases after which nothing a Plan asked can still be acted on.
_FINISHED_PLAN = frozenset({"completed", "failed", "replanning", "superseded", "abandoned"})


def orphaned(origin: ApprovalOrigin, plan_uid: str | None, plan_phase: str | None) -> str | None:
    """Why an Approval can no longer lead to acting because of its plan, or None. ``plan_uid``
    and ``plan_phase`` describe the Plan now under the origin's plan name (None: there is
    none). Without a cluster garbage collector, this is what ends the Approvals of deleted
    plans."""
    if origin.plan is None:
        return None
    if plan_uid is None:
        return f"its plan {origin.plan} was deleted"
    if origin.plan_uid is not None and plan_uid != origin.plan_uid:
        return f"its plan {origin.plan} was deleted (a new plan has the same name and asks anew)"
    if plan_phase in _FINISHED_PLAN:
        return f"its plan {origin.plan} is {plan_phase}"
    return None

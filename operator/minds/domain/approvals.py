"""The Approval lifecycle as pure rules: names, phases, what each transition records, and
whether an Approval authorises a step now.

Pending -> Approved | Denied (a person decided) | Expired (nobody decided in time) |
Withdrawn (the mind no longer needs it, or its plan is gone or finished); Approved ->
Executed (the executor did the approved thing: the action ran, or the grant was created) or
Withdrawn (its plan went away first). A decision exists only in ``spec`` (written by a person,
checked by the admission policy); the phase in ``status`` is the controller's reading of it,
kept for people to read. What authorises acting is never ``status`` (anyone with the status
subresource could write it) but :func:`authorises`: the decision in ``spec``, the ledger's
record of when the controller first saw it, and the Approval's bond to one plan's uid, step
and attempt.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from enum import StrEnum

from minds.domain.ledger import idempotency_key
from minds.domain.resources.approval import (
    ApprovalKind,
    ApprovalOrigin,
    ApprovalPhase,
    ApprovalSpec,
    ApprovalStatus,
    Decision,
)

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


@dataclass(frozen=True)
class Transition:
    status: ApprovalStatus
    event: str
    message: str


def next_transition(spec: ApprovalSpec, status: ApprovalStatus, now: datetime) -> Transition | None:
    """The one transition that follows from what a person wrote and the clock, if any.

    Nobody can prove when a decision was written (managed fields are client-writable), only
    when the controller first read it: an approval first read at or after ``expiresAt`` fails
    closed and expires. A denial counts whenever it is read; without a decision the request
    expires at ``expiresAt``.
    """
    if status.phase is not ApprovalPhase.PENDING:
        return None
    if spec.decision is Decision.APPROVED and now >= spec.expires_at:
        return Transition(
            status.model_copy(
                update={
                    "phase": ApprovalPhase.EXPIRED,
                    "message": "approved, but only read after it expired: not acted on",
                }
            ),
            "approval_expired",
            f"approved by {spec.decided_by} after the deadline: expired, nothing runs",
        )
    if spec.decision is Decision.APPROVED:
        return Transition(
            status.model_copy(update={"phase": ApprovalPhase.APPROVED, "decided_at": now}),
            "approval_approved",
            f"approved by {spec.decided_by}",
        )
    if spec.decision is Decision.DENIED:
        return Transition(
            status.model_copy(update={"phase": ApprovalPhase.DENIED, "decided_at": now}),
            "approval_denied",
            f"denied by {spec.decided_by}" + (f": {spec.note}" if spec.note else ""),
        )
    if now >= spec.expires_at:
        return Transition(
            status.model_copy(
                update={"phase": ApprovalPhase.EXPIRED, "message": "nobody decided in time"}
            ),
            "approval_expired",
            "expired without a decision",
        )
    return None


def recorded_as(spec: ApprovalSpec, status: ApprovalStatus, now: datetime) -> Transition | None:
    """The ledger record of the phase a status already shows, for writing it again
    idempotently: if the controller stopped after the status write and before the ledger line,
    acting (which trusts only the ledger) would otherwise wait forever. Only what ``spec`` and
    the clock justify is recorded: a phase that someone wrote into ``status`` by hand (the
    status subresource is not authority) never reaches the ledger."""
    if status.phase is ApprovalPhase.PENDING:
        return None
    justified = next_transition(
        spec, status.model_copy(update={"phase": ApprovalPhase.PENDING}), now
    )
    if justified is None or justified.status.phase is not status.phase:
        return None
    return Transition(status, justified.event, justified.message)


def withdrawn(status: ApprovalStatus, spec: ApprovalSpec, reason: str) -> ApprovalStatus | None:
    """A mind may withdraw its own request while nobody has decided it."""
    if status.phase is not ApprovalPhase.PENDING or spec.decision is not None:
        return None
    return status.model_copy(update={"phase": ApprovalPhase.WITHDRAWN, "message": reason})


#: Phases in which an Approval may still lead to acting; abandoning it ends that.
_UNSPENT = frozenset({ApprovalPhase.PENDING, ApprovalPhase.APPROVED})


def abandoned(status: ApprovalStatus, reason: str) -> ApprovalStatus | None:
    """Its plan is gone, replaced or finished: nothing will ever act on this Approval, so it
    is withdrawn whether or not a person decided (a decision on it is recorded, never acted
    on). Denied, Expired, Executed and Withdrawn stay as they are."""
    if status.phase not in _UNSPENT:
        return None
    return status.model_copy(update={"phase": ApprovalPhase.WITHDRAWN, "message": reason})


def ignored_decision(spec: ApprovalSpec, status: ApprovalStatus) -> str | None:
    """A decision that arrived on an Approval already withdrawn or expired (a race with the
    withdrawal, or a status rewritten to let it through admission): worth a ledger line naming
    who decided, never an action. None when there is nothing to say."""
    if spec.decision is None or status.phase not in (
        ApprovalPhase.WITHDRAWN,
        ApprovalPhase.EXPIRED,
    ):
        return None
    return (
        f"{spec.decision.value} by {spec.decided_by} on an Approval already "
        f"{status.phase.value.lower()}: not acted on"
    )


def executed(status: ApprovalStatus, now: datetime, execution: str, message: str) -> ApprovalStatus:
    """The executor acted on it. Also from Withdrawn: if the action ran while the plan was
    being closed, the status says what happened rather than what was meant to."""
    return status.model_copy(
        update={
            "phase": ApprovalPhase.EXECUTED,
            "executed_at": now,
            "execution": execution,
            "message": message,
        }
    )


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
class Recorded:
    """What the ledger holds about this Approval object (its uid): the controller's own
    derivation, which nobody but the controller writes."""

    approved_at: datetime | None = None
    expired: bool = False
    withdrawn: bool = False


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
        return Ruling(Verdict.WITHDRAWN, "withdrawn before it was acted on")
    if recorded.expired:
        return Ruling(Verdict.EXPIRED, "expired: nobody decided in time")
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

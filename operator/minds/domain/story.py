"""What ``kubectl describe`` tells: the reasons of our Kubernetes Events, and which ledger rows
become an Event on the Mind or on the Plan they are about.

Kubernetes reasons are CamelCase words (``BackOff``, ``Scheduled``); every reason the controller
posts is a member of ``Reason``, so the style is kept in one place and a test can hold it.

The ledger is the record; the Events are its short story for a person. A Plan's tell its own
life (valid, completed, failed); the Mind's tell what needs a person: failed plans, what it
escalated and what waits for someone. Not every check or cycle: a person reading ``kubectl
describe`` should see at a glance what happened.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import Final

from minds.domain.ledger import EventRecord

CAMEL_CASE: Final = re.compile(r"^[A-Z][a-z0-9]+(?:[A-Z][a-z0-9]+)*$")


class Reason(StrEnum):
    """Every reason of an Event the controller posts."""

    # Mind
    REGISTERED = "Registered"
    UPDATED = "Updated"
    DELETED = "Deleted"
    INVALID_SPEC = "InvalidSpec"
    PROMISE_KEPT = "PromiseKept"
    PLAN_FAILED = "PlanFailed"
    APPROVAL_REQUESTED = "ApprovalRequested"
    # Plan
    VALIDATED = "Validated"
    COMPLETED = "Completed"
    INVALID_PLAN = "InvalidPlan"
    FAILED = "Failed"
    REPLANNED = "Replanned"
    ESCALATED = "Escalated"
    STEP_FAILED = "StepFailed"
    STEP_BLOCKED = "StepBlocked"
    AWAITING_APPROVAL = "AwaitingApproval"
    AWAITING_GRANT = "AwaitingGrant"
    RELEASED = "Released"
    RESUMED = "Resumed"
    RELEASE_IGNORED = "ReleaseIgnored"
    RELEASE_REFUSED = "ReleaseRefused"
    CANCELLED = "Cancelled"
    # Approval
    REQUESTED = "Requested"
    APPROVED = "Approved"
    DENIED = "Denied"
    EXPIRED = "Expired"
    DECISION_LATE = "DecisionLate"
    DECISION_REFUSED = "DecisionRefused"
    DECISION_IGNORED = "DecisionIgnored"
    WITHDRAWN = "Withdrawn"
    EXECUTED = "Executed"
    NOT_EXECUTED = "NotExecuted"
    STATUS_NOT_SHOWN = "StatusNotShown"
    # CapabilityGrant (its phases)
    PENDING = "Pending"
    ACTIVE = "Active"
    EXHAUSTED = "Exhausted"
    REVOKED = "Revoked"


def is_reason(text: str) -> bool:
    """A reason we post: in the table, and CamelCase."""
    return text in Reason.__members__.values() and CAMEL_CASE.fullmatch(text) is not None


class Teller(StrEnum):
    """Whose Events tell a row: the Mind's, or the row's subject's (the Plan)."""

    MIND = "Mind"
    SUBJECT = "subject"


@dataclass(frozen=True)
class Told:
    """An Event told of one ledger row, on the Mind or on the row's subject."""

    type_: str
    reason: Reason
    message: str
    on: Teller = Teller.MIND


def _payload(row: EventRecord, key: str) -> str:
    value = row.payload.get(key)
    return f": {str(value)[:300]}" if value else ""


def _validated(row: EventRecord) -> Told:
    strategy = row.payload.get("strategy")
    by = "a person's plan" if row.payload.get("origin") == "operator" else "the mind's plan"
    message = f"{by} ({strategy}) is valid and will run"
    return Told("Normal", Reason.VALIDATED, message, Teller.SUBJECT)


def _completed(row: EventRecord) -> Told:
    done = row.payload.get("progress")
    said = f" ({done} steps)" if done else ""
    return Told("Normal", Reason.COMPLETED, f"completed{said}", Teller.SUBJECT)


def _failed(row: EventRecord) -> Told:
    message = f"plan {row.subject.name} failed{_payload(row, 'reason')}"
    return Told("Warning", Reason.PLAN_FAILED, message)


def _replanned(row: EventRecord) -> Told:
    new = row.payload.get("to")
    then = f" as {new}" if new else ""
    return Told("Normal", Reason.REPLANNED, f"plan {row.subject.name} replanned{then}")


def _escalated(row: EventRecord) -> Told:
    step = row.payload.get("step")
    message = f"plan {row.subject.name} step {step} needs a person{_payload(row, 'note')}"
    return Told("Warning", Reason.ESCALATED, message)


def _blocked(row: EventRecord) -> Told:
    step = row.payload.get("step")
    message = f"plan {row.subject.name} step {step} is blocked{_payload(row, 'reason')}"
    return Told("Warning", Reason.STEP_BLOCKED, message)


def _cancelled(row: EventRecord) -> Told:
    message = (
        f"plan {row.subject.name} cancelled by {row.payload.get('by')}{_payload(row, 'reason')}"
    )
    return Told("Normal", Reason.CANCELLED, message)


def _resumed(row: EventRecord) -> Told:
    message = f"plan {row.subject.name}'s intention resumed{_payload(row, 'reason')}"
    return Told("Normal", Reason.RESUMED, message)


def _asked(row: EventRecord) -> Told:
    what = f"{row.payload.get('capability')} on {row.payload.get('target')}"
    return Told("Normal", Reason.APPROVAL_REQUESTED, f"asked approval {row.subject.name}: {what}")


#: Which ledger rows of a mind become an Event, on whom, and what it says. A plan tells its own
#: story (``kubectl describe plan``): that it is valid (a draft never runs) and that it
#: completed; a plan that failed also has its own ``Failed`` Event. The Mind tells what a person
#: acts on: failures, replans and cancellations, escalations, blocked steps, resumptions and
#: approvals asked. Checks, observations and cycles stay in the ledger. A Mind's approved
#: restart is so told in four Events: Validated and Completed on the Plan, ApprovalRequested on
#: the Mind, Approved on the Approval.
STORY: Final[Mapping[str, Callable[[EventRecord], Told]]] = {
    "plan_validated": _validated,
    "plan_completed": _completed,
    "plan_failed": _failed,
    "plan_replanned": _replanned,
    "plan_cancelled": _cancelled,
    "operator_notified": _escalated,
    "plan_step_blocked": _blocked,
    "plan_resumed": _resumed,
    "approval_requested": _asked,
}


def told(row: EventRecord) -> Told | None:
    """The Event that ``row`` becomes, or None when it stays in the ledger."""
    tell = STORY.get(row.type)
    return tell(row) if tell is not None else None

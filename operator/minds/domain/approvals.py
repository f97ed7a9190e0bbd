"""The Approval lifecycle as pure rules: names, phases and what each transition records.

Pending -> Approved | Denied (a person decided) | Expired (nobody decided in time) |
Withdrawn (the mind no longer needs it); Approved -> Executed (the approved thing was done:
the action ran, or the grant was created). A decision exists only in ``spec`` (written by a
person, checked by the admission policy); the phase in ``status`` is the controller's reading
of it, so a person cannot fake "Executed" and the controller cannot fake a decision.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime, timedelta

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

    A decision that arrived before the deadline counts even if we read it late; without a
    decision the request expires at ``expiresAt``.
    """
    if status.phase is not ApprovalPhase.PENDING:
        return None
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


def withdrawn(status: ApprovalStatus, spec: ApprovalSpec, reason: str) -> ApprovalStatus | None:
    """A mind may withdraw its own request while nobody has decided it."""
    if status.phase is not ApprovalPhase.PENDING or spec.decision is not None:
        return None
    return status.model_copy(update={"phase": ApprovalPhase.WITHDRAWN, "message": reason})


def executed(status: ApprovalStatus, now: datetime, execution: str, message: str) -> ApprovalStatus:
    return status.model_copy(
        update={
            "phase": ApprovalPhase.EXECUTED,
            "executed_at": now,
            "execution": execution,
            "message": message,
        }
    )

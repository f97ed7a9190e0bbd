"""The Approval lifecycle, applied: phases follow what a person decided, the clock and the
fate of the Plan that asked. This service never acts on the world.

Each transition is one ledger event naming the authenticated approver (the admission policy
guarantees ``decidedBy`` is the caller, and that the caller is one of the Mind's approvers),
then a status write showing it. The ledger events are the controller's own derivation, which
:func:`~minds.domain.approvals.authorises` trusts; ``status`` is only their reflection for
people to read, computed from the ledger alone and put back whenever it says anything else.
Carrying out an approved action is the executor's alone (one owner of acting); it tells this
service when it did, through :meth:`ApprovalService.executed`.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Final, Protocol

from pydantic import JsonValue, ValidationError

from minds.domain.approvals import (
    APPROVED,
    APPROVED_SHOWN_AFTER,
    DENIED,
    EXECUTED,
    EXPIRED,
    IGNORED,
    LATE,
    LIFECYCLE,
    NOT_EXECUTED,
    REFUSED,
    REQUESTED,
    WITHDRAWN,
    Recorded,
    Transition,
    abandonable,
    decider_refused,
    label_value,
    next_transition,
    orphaned,
    recorded,
    shown_later,
    status_of,
    withdrawable,
)
from minds.domain.errors import NotFound, Refused
from minds.domain.ledger import EventRecord, SubjectRef, idempotency_key
from minds.domain.resources.approval import (
    ApprovalOrigin,
    ApprovalPhase,
    ApprovalSpec,
    ApprovalStatus,
    Decision,
    MindApprovers,
)
from minds.domain.resources.common import parse_timestamp
from minds.domain.resources.kinds import APPROVAL, MIND, PLAN
from minds.domain.resources.mind import MindSpec
from minds.engine.asking import LABEL_PLAN_UID
from minds.engine.conditional import write_status
from minds.engine.mind_story import tell_story
from minds.engine.plan_authors import plan_author
from minds.engine.ports import (
    Clock,
    EventPort,
    JournalLock,
    LedgerPort,
    ResourcePort,
    Transactional,
)
from minds.engine.telemetry import NO_TELEMETRY, Telemetry

__all__ = ["APPROVED", "DECISIONS", "EXPIRED", "WITHDRAWN", "ApprovalLedger", "ApprovalService"]

log = logging.getLogger(__name__)

#: The ledger events that end a wait for a person, and the outcome each counts as.
DECISIONS: Final[Mapping[str, str]] = {
    APPROVED: "approved",
    DENIED: "denied",
    EXPIRED: "expired",
    LATE: "expired",
    REFUSED: "withdrawn",
    WITHDRAWN: "withdrawn",
}

#: How each recorded fact is told on the Approval (a Kubernetes Event): type and reason.
_TOLD: Final[Mapping[str, tuple[str, str]]] = {
    APPROVED: ("Normal", "Approved"),
    DENIED: ("Normal", "Denied"),
    EXPIRED: ("Normal", "Expired"),
    LATE: ("Warning", "DecisionLate"),
    REFUSED: ("Warning", "DecisionRefused"),
    IGNORED: ("Warning", "DecisionIgnored"),
    WITHDRAWN: ("Normal", "Withdrawn"),
    NOT_EXECUTED: ("Warning", "NotExecuted"),
}


class ApprovalLedger(LedgerPort, JournalLock, Transactional, Protocol):
    def events(
        self, *, subject_uid: str | None = None, type: str | Iterable[str] | None = None
    ) -> list[EventRecord]: ...


#: Step statuses in which a plan's executor follows its Approval.
_FOLLOWING: Final = frozenset({"awaiting_approval", "awaiting_grant"})
#: First sights of decisions kept at most (see ``ApprovalService._seen``).
_SEEN_AT_MOST: Final = 10_000


@dataclass(frozen=True)
class Deferred:
    """An approval the asking plan's executor saw and has not recorded yet: it records it with
    the action it allows, in one transaction, or alone."""

    body: dict[str, Any]
    spec: ApprovalSpec
    #: When the controller first saw the decision.
    seen_at: datetime
    #: Why the decider is not authority for the Mind now (None: they are), as read.
    refusal: str | None


class ApprovalService:
    def __init__(
        self,
        *,
        resources: ResourcePort,
        ledger: ApprovalLedger,
        events: EventPort,
        clock: Clock,
        telemetry: Telemetry = NO_TELEMETRY,
    ) -> None:
        self._resources = resources
        self._ledger = ledger
        self._events = events
        self._clock = clock
        self._telemetry = telemetry
        self._first_seen: dict[tuple[str, str], datetime] = {}
        self._seen_lock = threading.Lock()

    @contextmanager
    def _lifecycle(self, body: dict[str, Any]) -> Iterator[None]:
        """One transaction under the lock of the Mind's journal, in which every fact of an
        Approval is read, decided and recorded: two recorders (the Approval's own work and the
        asking plan's, or two controllers) never both decide on the same history, so approved
        and expired, or approved and withdrawn, are never both recorded. What the block
        records is told (Events, metrics) once it is committed, never before."""
        with self._ledger.transaction():
            self._ledger.hold_journal(body["metadata"]["namespace"], _mind(body))
            yield

    def _record(
        self,
        body: dict[str, Any],
        type_: str,
        payload: dict[str, JsonValue],
        at: datetime | None = None,
    ) -> bool:
        """One lifecycle event, once per Approval object (keyed by its uid), inside
        ``_lifecycle``. ``at``: when the controller saw what the event records (for a
        decision: its observation time, the one acting compares with ``expiresAt``)."""
        now = at or self._clock()
        row = self._row(body, type_, payload, now)
        new = self._ledger.append_event(row)
        if new:
            self._ledger.after_commit(lambda: self._tell(body, row, now))
        return new

    def _row(
        self, body: dict[str, Any], type_: str, payload: dict[str, JsonValue], at: datetime
    ) -> EventRecord:
        meta = body["metadata"]
        spec = body.get("spec") or {}
        return EventRecord(
            mind=_mind(body),
            namespace=meta["namespace"],
            type=type_,
            subject=SubjectRef(kind=APPROVAL.kind, name=meta["name"], uid=meta.get("uid")),
            payload={
                "capability": spec.get("capability"),
                "target": spec.get("target"),
                "kind": spec.get("kind"),
                "origin": spec.get("origin"),
                **payload,
            },
            occurred_at=at,
            idempotency_key=idempotency_key("approval", type_, meta["uid"]),
        )

    def _tell(self, body: dict[str, Any], row: EventRecord, at: datetime) -> None:
        tell_story(self._events, self._resources, [row])
        told = _TOLD.get(row.type)
        if told is not None:
            message = str(row.payload.get("message") or row.payload.get("reason") or "")
            self._events.post(body, type_=told[0], reason=told[1], message=message)
        # Counted when the ledger line is new, so a replay or a second controller adds none.
        if row.type in DECISIONS:
            self._telemetry.approval_decided(
                row.namespace, row.mind, DECISIONS[row.type], _waited(body["metadata"], at)
            )

    def recorded(self, uid: str) -> Recorded:
        """What the ledger says about this Approval object: the facts acting depends on."""
        return recorded(self._ledger.events(subject_uid=uid, type=LIFECYCLE))

    def reconcile(
        self, namespace: str, name: str, *, owner_checked: bool = False
    ) -> dict[str, Any]:
        """Record what follows from the decision in ``spec``, the ledger and the clock, and show
        it in ``status``; returns the Approval as last read or written. ``owner_checked``: the
        caller knows the Plan is alive, so it is not looked up again. Raises NotFound."""
        body, _ = self.settle(namespace, name, owner_checked=owner_checked)
        return self._show(namespace, name) or body

    def decided(self, namespace: str, name: str) -> tuple[dict[str, Any], datetime | None]:
        """What the Approval's handler does on each change: settle, then show, except a fresh
        approval (``shown_later``), returned as the ledger has it but not written, with the
        time to show it if the executor has not by then. An approval the asking plan waits on
        is the plan's to record (one owner: ``settle_to_act``); this records it only if the
        plan has not when that time comes. Raises NotFound."""
        body = self._resources.get(APPROVAL, namespace, name)
        spec = ApprovalSpec.model_validate(body["spec"])
        uid = body["metadata"]["uid"]
        history = self.recorded(uid)
        if (
            spec.decision is Decision.APPROVED
            and history.phase is ApprovalPhase.PENDING
            and REQUESTED in history.types
            and self._followed(namespace, body, spec)
        ):
            seen = self._seen(uid, spec)
            row = self._row(body, APPROVED, {"decidedBy": spec.decided_by}, seen)
            derived = status_of(
                self._with(uid, row), (body.get("status") or {}).get("observedGeneration")
            )
            return {**body, "status": derived.to_k8s()}, seen + APPROVED_SHOWN_AFTER
        body, history = self.settle(namespace, name)
        status = body.get("status") or {}
        if shown_later(history, status.get("phase")):
            derived = status_of(history, status.get("observedGeneration"))
            return {**body, "status": derived.to_k8s()}, self._clock() + APPROVED_SHOWN_AFTER
        return self._show(namespace, name) or body, None

    def settle(
        self, namespace: str, name: str, *, owner_checked: bool = False
    ) -> tuple[dict[str, Any], Recorded]:
        """Record what follows from the decision in ``spec``, the ledger and the clock, without
        showing it: the Approval as read and the ledger's account of it. Raises NotFound."""
        body, history, _ = self._settle(namespace, name, owner_checked=owner_checked)
        return body, history

    def settle_to_act(
        self, namespace: str, name: str
    ) -> tuple[dict[str, Any], Recorded, Deferred | None]:
        """What the executor of the asking Plan does before it acts: as ``settle``, except that
        an approval not recorded yet is left to the executor (``Deferred``), which records it
        in the transaction of the write-ahead row of the action it allows (``approve_within``),
        or alone when it does not act on it now (``approve_now``); the history returned counts
        it already. It leaves ``status`` to ``executed``: a status write between a person's
        decision and the action it allows would only delay the action. Raises NotFound."""
        return self._settle(namespace, name, owner_checked=True, defer=True)

    def _settle(
        self, namespace: str, name: str, *, owner_checked: bool, defer: bool = False
    ) -> tuple[dict[str, Any], Recorded, Deferred | None]:
        body = self._resources.get(APPROVAL, namespace, name)
        spec = ApprovalSpec.model_validate(body["spec"])
        uid = body["metadata"]["uid"]
        # Whether the decider is authority is read before the lock (it may read the API), on
        # the history as it is now: it only matters while the request may still lead to acting.
        events = self._ledger.events(subject_uid=uid, type=LIFECYCLE)
        history = recorded(events)
        refusal = self._refusal(namespace, spec, history)
        now = self._at(uid, spec, history)
        transition = next_transition(spec, history, now, refusal)
        deferred = None
        if REQUESTED in history.types and (
            transition is None or (defer and transition.event == APPROVED)
        ):
            # Nothing to write, so no lock to take: a deferred approval is decided again under
            # it when it is written (``approve_within``). This is the approved action's path.
            if transition is not None:
                deferred = Deferred(body, spec, now, refusal)
                row = self._row(body, APPROVED, _payload(spec, transition), now)
                history = recorded([*events, row])
        else:
            history, deferred = self._write(body, spec, refusal, defer)
        if not owner_checked:
            why = orphaned(spec.origin, *self._owner(namespace, spec.origin))
            if why is not None and self._abandon(body, why):
                history = self.recorded(uid)
        return body, history, deferred

    def _write(
        self, body: dict[str, Any], spec: ApprovalSpec, refusal: str | None, defer: bool
    ) -> tuple[Recorded, Deferred | None]:
        """Read, decide and record under the lock of the Mind's journal."""
        uid = body["metadata"]["uid"]
        deferred = None
        with self._lifecycle(body):
            history = self.recorded(uid)
            now = self._at(uid, spec, history)
            if REQUESTED not in history.types:
                # Told once, by the asker: the Mind's ApprovalRequested (or the Plan's
                # AwaitingApproval when no Mind asks); the Approval itself reads Pending.
                self._record(body, REQUESTED, {}, now)
            transition = next_transition(spec, history, now, refusal)
            if transition is not None and defer and transition.event == APPROVED:
                deferred = Deferred(body, spec, now, refusal)
                row = self._row(body, APPROVED, _payload(spec, transition), now)
                history = self._with(uid, row)
            elif transition is not None:
                self._record(body, transition.event, _payload(spec, transition), now)
                history = self.recorded(uid)
        return history, deferred

    def _with(self, uid: str, row: EventRecord) -> Recorded:
        """The history with a row not written yet."""
        return recorded([*self._ledger.events(subject_uid=uid, type=LIFECYCLE), row])

    def _at(self, uid: str, spec: ApprovalSpec, history: Recorded) -> datetime:
        """The time of what is recorded next: the first sight of an undecided request's
        decision, else now (a fact about a decision already recorded happens now)."""
        if history.phase is ApprovalPhase.PENDING:
            return self._seen(uid, spec)
        with self._seen_lock:
            for decision in Decision:
                self._first_seen.pop((uid, decision.value), None)
        return self._clock()

    def _seen(self, uid: str, spec: ApprovalSpec) -> datetime:
        """When this controller first saw the decision in ``spec`` (now, for none): whoever
        records it later (the asking plan, or the Approval's own work when the plan has not)
        records the first sight, which is what is compared with ``expiresAt``. Kept in memory
        only: a controller that restarts sees it anew, later, which can only fail closed."""
        now = self._clock()
        if spec.decision is None:
            return now
        key = (uid, spec.decision.value)
        with self._seen_lock:
            if len(self._first_seen) >= _SEEN_AT_MOST:
                self._first_seen.clear()  # a bound, not a cache: forgetting fails closed
            return self._first_seen.setdefault(key, now)

    def approve_within(self, deferred: Deferred) -> str | None:
        """Inside the caller's transaction (the write-ahead row's): record the deferred
        approval under the lock of the Mind's journal, unless the history moved meanwhile
        (expired, withdrawn). None: it stands (recorded now or already); else why not."""
        body, spec = deferred.body, deferred.spec
        self._ledger.hold_journal(body["metadata"]["namespace"], _mind(body))
        history = self.recorded(body["metadata"]["uid"])
        transition = next_transition(spec, history, deferred.seen_at, deferred.refusal)
        if transition is not None and transition.event == APPROVED:
            self._record(body, APPROVED, _payload(spec, transition), deferred.seen_at)
            return None
        if transition is None and history.phase is ApprovalPhase.APPROVED:
            return None
        return (transition.message if transition else history.message) or (
            f"the approval is {history.phase.value}"
        )

    def approve_now(self, deferred: Deferred) -> None:
        """Record the deferred approval alone: the executor does not act on it now (its
        target is held, its claim was lost, a re-check refused it), and a person's decision is
        on record whatever comes of it."""
        with self._ledger.transaction():
            self.approve_within(deferred)

    def _refusal(self, namespace: str, spec: ApprovalSpec, history: Recorded) -> str | None:
        """Why an approval in ``spec`` is not authority for its Mind now (None: it is, or
        there is no approval to check). Read only while it could still lead to acting."""
        if spec.decision is not Decision.APPROVED or history.phase not in (
            ApprovalPhase.PENDING,
            ApprovalPhase.APPROVED,
        ):
            return None
        approvers = self.mind_approvers(namespace, spec.mind)
        author = (
            plan_author(self._resources, namespace, spec.origin, approvers)
            if approvers is not None
            else None
        )
        return decider_refused(spec, approvers, author)

    def mind_approvers(self, namespace: str, mind: str) -> MindApprovers | None:
        """The Mind's approvers now; None when it is gone or unreadable (fails closed)."""
        try:
            body = self._resources.get(MIND, namespace, mind)
            return MindSpec.model_validate(body.get("spec") or {}).approvers
        except (NotFound, ValidationError):
            return None

    def _show(self, namespace: str, name: str) -> dict[str, Any] | None:
        """Write the status the ledger justifies, when it says anything else (or nothing yet):
        a phase written by someone else is put back. None: the Approval is gone.

        The ledger is read after the object, for the object read: whoever writes a status
        records it in the ledger first, so the history is never older than the status shown
        (an older one would write back a phase the other settlement moved past, which the
        status guard refuses), and a re-created Approval is shown its own history."""

        def compute(current: dict[str, Any]) -> tuple[dict[str, Any] | None, None]:
            history = self.recorded(current["metadata"]["uid"])
            shown = current.get("status") or {}
            derived = status_of(history, shown.get("observedGeneration"))
            try:
                same = bool(shown.get("phase")) and ApprovalStatus.model_validate(shown) == derived
            except ValidationError:
                same = False
            return (None if same else derived.to_k8s()), None

        try:
            written, _ = write_status(self._resources, APPROVAL, namespace, name, compute)
        except NotFound:
            return None
        except Refused as refusal:
            return self._unshown(namespace, name, refusal)
        return written

    def _unshown(self, namespace: str, name: str, refusal: Refused) -> dict[str, Any] | None:
        """The status guard kept a phase the ledger does not record: a terminal one written
        with the controller's own token outside the controller (or while its ledger was
        another). It cannot be put back, and it decides nothing: the ledger does. Said as a
        Warning each time the Approval changes (no traceback: nothing failed), and the
        Approval is returned as the ledger has it, so its expiry is still timed."""
        try:
            current = self._resources.get(APPROVAL, namespace, name)
        except NotFound:
            return None
        history = self.recorded(current["metadata"]["uid"])
        shown = (current.get("status") or {}).get("phase")
        message = (
            f"status.phase shows {shown}, which the ledger does not record (it records "
            f"{history.phase}); the status guard keeps it, and the ledger decides: "
            f"{refusal}"
        )[:1024]
        log.warning("approval %s/%s: %s", namespace, name, message)
        self._events.post(current, type_="Warning", reason="StatusNotShown", message=message)
        derived = status_of(history, (current.get("status") or {}).get("observedGeneration"))
        return {**current, "status": derived.to_k8s()}

    def _followed(self, namespace: str, body: dict[str, Any], spec: ApprovalSpec) -> bool:
        """The Plan that asked is alive and one of its steps waits on this Approval: its
        executor, woken by the same change, records and acts on the decision."""
        plan = self._live_plan(namespace, spec.origin)
        if plan is None or plan["metadata"].get("uid") != spec.origin.plan_uid:
            return False
        name = body["metadata"]["name"]
        steps = (plan.get("status") or {}).get("steps") or []
        return any(s.get("approvalRef") == name and s.get("status") in _FOLLOWING for s in steps)

    def _owner(self, namespace: str, origin: ApprovalOrigin) -> tuple[str | None, str | None]:
        """The uid and phase of the Plan the origin names, (None, None) when there is none."""
        plan = self._live_plan(namespace, origin)
        if plan is None:
            return None, None
        return plan["metadata"].get("uid"), (plan.get("status") or {}).get("phase")

    def _live_plan(self, namespace: str, origin: ApprovalOrigin) -> dict[str, Any] | None:
        """The Plan the origin names, None when there is none or it is being deleted (being
        deleted is deleted: it will never act again)."""
        if not origin.plan:
            return None
        try:
            plan = self._resources.get(PLAN, namespace, origin.plan)
        except NotFound:
            return None
        return None if plan["metadata"].get("deletionTimestamp") else plan

    def withdraw(self, namespace: str, name: str, reason: str) -> bool:
        """The mind no longer needs this; refused once a person has decided."""
        body = self._resources.get(APPROVAL, namespace, name)
        spec = ApprovalSpec.model_validate(body["spec"])
        with self._lifecycle(body):
            if not withdrawable(spec, self.recorded(body["metadata"]["uid"])):
                return False
            self._record(body, WITHDRAWN, {"reason": reason})
        self._show(namespace, name)
        return True

    def _abandon(self, body: dict[str, Any], reason: str) -> bool:
        """Its plan is gone or finished: withdrawn, decided or not (see ``abandonable``). The
        ledger line is what keeps the executor from acting; the status follows it."""
        spec = body.get("spec") or {}
        with self._lifecycle(body):
            if not abandonable(self.recorded(body["metadata"]["uid"])):
                return False
            payload: dict[str, JsonValue] = {"reason": reason, "decidedBy": spec.get("decidedBy")}
            self._record(body, WITHDRAWN, payload)
        return True

    def abandon_plan(self, namespace: str, plan_uid: str, reason: str) -> int:
        """Withdraw every Approval the Plan with this uid still has open; returns how many."""
        selector = f"{LABEL_PLAN_UID}={label_value(plan_uid)}"
        count = 0
        for body in self._resources.list(APPROVAL, namespace, selector):
            origin = (body.get("spec") or {}).get("origin") or {}
            if origin.get("planUid") != plan_uid:
                continue  # a label is only a hint; the immutable origin decides
            if self._abandon(body, reason):
                self._show(namespace, body["metadata"]["name"])
                count += 1
        return count

    def executed(self, namespace: str, name: str, execution: str, message: str) -> None:
        """The executor did what was approved: the ledger and the status say so."""
        try:
            body = self._resources.get(APPROVAL, namespace, name)
        except NotFound:
            return  # deleted meanwhile; the ledger's execution row is the record
        payload: dict[str, JsonValue] = {"execution": execution, "outcome": message[:4096]}
        # No Event: the status says Executed, when, which execution and its outcome, and the
        # plan's end is told on its Mind (at most four Events per approved plan).
        with self._lifecycle(body):
            self._record(body, EXECUTED, payload)
        self._show(namespace, name)

    def not_executed(self, namespace: str, name: str, reason: str) -> None:
        """Approved, but the re-check just before acting refused it (a capability locked, a
        commitment or policy that now forbids it): nothing ran, and the Approval says why."""
        try:
            body = self._resources.get(APPROVAL, namespace, name)
        except NotFound:
            return
        with self._lifecycle(body):
            self._record(body, NOT_EXECUTED, {"reason": reason[:4096]})
        self._show(namespace, name)


def _payload(spec: ApprovalSpec, transition: Transition) -> dict[str, JsonValue]:
    return {"decidedBy": spec.decided_by, "note": spec.note, "message": transition.message}


def _mind(body: dict[str, Any]) -> str:
    """The Mind whose journal an Approval's facts are part of ("-": an operator's plan)."""
    return str((body.get("spec") or {}).get("mind") or "-")


def _waited(meta: Mapping[str, Any], now: datetime) -> float | None:
    created = parse_timestamp(meta.get("creationTimestamp"))
    return None if created is None else max(0.0, (now - created).total_seconds())

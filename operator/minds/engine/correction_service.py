"""The mind's cycle applies what people wrote: ``spec.intentionCorrections`` on the Mind, and
the ``spec.cancellation`` of its Plans.

Each entry is applied once (its key marks it in the ledger), through the pure rules of
``minds.domain.corrections``; every decision names the person. Abandoning an intention
suppresses the wants it serves, so the same cycle does not form it again, and withdraws what its
plan still asks a person for. A cancelled plan (which the executor stopped, abandoning its
intention) has the wants of its intention suppressed too: the mind does not plan the same
thing again at once.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from typing import Any, Protocol

from minds.domain.corrections import after_cancel, correct_intention, correction_key
from minds.domain.intentions import IntentionRecord, IntentionStatus
from minds.domain.ledger import EventRecord, SubjectRef, idempotency_key
from minds.domain.planning.model import Cancellation
from minds.domain.resources.kinds import MIND, PLAN
from minds.domain.resources.mind import IntentionCorrection, MindSpec
from minds.domain.volition.decisions import VolitionDecision
from minds.domain.volition.reconsideration import Reconsideration
from minds.domain.volition.wants import Want
from minds.engine.ports import Intentions, Journal, ResourceReader, Transactional

CORRECTED = "intention_corrected"
#: The ledger row that marks a cancelled plan's wants suppressed (with the Mind as subject).
CANCEL_APPLIED = "plan_cancel_applied"

Record = Callable[[tuple[VolitionDecision, ...]], int]
StoreWant = Callable[[Want], None]
Withdraw = Callable[[str, str, str], None]


class CorrectionLedger(Journal, Intentions, Transactional, Protocol):
    def wants(self, namespace: str, mind: str) -> list[dict[str, Any]]: ...


class CorrectionService:
    def __init__(self, ledger: CorrectionLedger, resources: ResourceReader) -> None:
        self._ledger = ledger
        self._resources = resources

    def apply(
        self,
        body: dict[str, Any],
        spec: MindSpec,
        now: datetime,
        *,
        record: Record,
        store_want: StoreWant,
        withdraw: Withdraw,
    ) -> int:
        """Apply the corrections not applied yet, in order; the decisions recorded."""
        meta = body["metadata"]
        namespace, mind = meta["namespace"], meta["name"]
        written = 0
        for correction in spec.intention_corrections:
            key = correction_key(namespace, mind, correction)
            if self._ledger.event(key) is not None:
                continue
            found = self._ledger.intention(correction.intention)
            # An id names an intention of any mind: only this mind's own is corrected here.
            ours = found if found and (found.namespace, found.mind) == (namespace, mind) else None
            if ours is None:
                self._mark(meta, correction, key, now, found=False)
                continue
            judged = correct_intention(ours, correction, self._wants(meta), now)
            # The intention's move, the wants, the decisions and the mark that the correction
            # was applied are there together or not at all: a failure half-way (a database
            # blip, a killed Pod) leaves the correction to the next cycle, never an intention
            # abandoned with nobody's decision on record.
            with self._ledger.transaction():
                # The mark (a journal row) before the decisions: appends to a mind's journal
                # come before its decisions' in every transaction, or two would deadlock.
                self._mark(meta, correction, key, now, found=True)
                written += self._apply(ours, judged, now, record, store_want)
            # After the commit: withdrawing writes the Approvals' status, which a rollback
            # could not take back (and a plan whose intention ended withdraws them too).
            if judged.status is IntentionStatus.ABANDONED and ours.plan:
                withdraw(ours.namespace, ours.plan, judged.reason)
        return written + self._after_cancels(meta, now, record, store_want)

    def _after_cancels(
        self, meta: dict[str, Any], now: datetime, record: Record, store_want: StoreWant
    ) -> int:
        """The wants of each cancelled plan's intention, suppressed once the executor has
        abandoned that intention (until then, a later cycle looks again)."""
        written = 0
        for plan in self._resources.list(PLAN, meta["namespace"]):
            spec = plan.get("spec") or {}
            if spec.get("mind") != meta["name"] or not spec.get("cancellation"):
                continue
            key = idempotency_key(CANCEL_APPLIED, plan["metadata"]["uid"])
            intention = self._ledger.intention(spec.get("intention") or "")
            if intention is None or not intention.status.final or self._ledger.event(key):
                continue
            cancellation = Cancellation.model_validate(spec["cancellation"])
            wants, decisions = after_cancel(intention, cancellation, self._wants(meta), now)
            for want in wants:
                store_want(want)
            written += record(decisions)
            payload = {"plan": plan["metadata"]["name"], "suppressed": [w.id for w in wants]}
            self._ledger.append_event(self._row(meta, CANCEL_APPLIED, payload, key, now))
        return written

    def _wants(self, meta: dict[str, Any]) -> list[Want]:
        return [Want.model_validate(w) for w in self._ledger.wants(meta["namespace"], meta["name"])]

    def _row(
        self, meta: dict[str, Any], type_: str, payload: dict[str, Any], key: str, now: datetime
    ) -> EventRecord:
        return EventRecord(
            mind=meta["name"],
            namespace=meta["namespace"],
            type=type_,
            subject=SubjectRef(kind=MIND.kind, name=meta["name"], uid=meta["uid"]),
            payload=payload,
            occurred_at=now,
            idempotency_key=key,
        )

    def _apply(
        self,
        intention: IntentionRecord,
        judged: Reconsideration,
        now: datetime,
        record: Record,
        store_want: StoreWant,
    ) -> int:
        if judged.status is not None:
            self._ledger.transition_intention(intention.id, judged.status, judged.reason, now)
        for want in judged.wants:
            store_want(want)
        return record(judged.decisions)

    def _mark(
        self,
        meta: dict[str, Any],
        correction: IntentionCorrection,
        key: str,
        now: datetime,
        *,
        found: bool,
    ) -> None:
        payload = {
            **correction.to_k8s(),
            "applied": found,
            **({} if found else {"why": "no such intention of this mind"}),
        }
        self._ledger.append_event(self._row(meta, CORRECTED, payload, key, now))

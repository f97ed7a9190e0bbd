"""The mind's cycle applies what people wrote into ``spec.intentionCorrections``.

Each entry is applied once (its key marks it in the ledger), through the pure rules of
``minds.domain.corrections``; the reconsideration decision names the person. Abandoning an
intention suppresses the wants it serves, so the same cycle does not form it again, and
withdraws what its plan still asks a person for.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from typing import Any, Protocol

from minds.domain.corrections import correct_intention, correction_key
from minds.domain.intentions import IntentionRecord, IntentionStatus
from minds.domain.ledger import EventRecord, SubjectRef
from minds.domain.resources.kinds import MIND
from minds.domain.resources.mind import IntentionCorrection, MindSpec
from minds.domain.volition.decisions import VolitionDecision
from minds.domain.volition.wants import Want
from minds.engine.ports import Intentions, Journal

CORRECTED = "intention_corrected"

Record = Callable[[tuple[VolitionDecision, ...]], int]
StoreWant = Callable[[Want], None]
Withdraw = Callable[[str, str, str], None]


class CorrectionLedger(Journal, Intentions, Protocol):
    def wants(self, namespace: str, mind: str) -> list[dict[str, Any]]: ...


class CorrectionService:
    def __init__(self, ledger: CorrectionLedger) -> None:
        self._ledger = ledger

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
            if ours is not None:
                written += self._correct(ours, correction, now, record, store_want, withdraw)
            self._mark(meta, correction, key, now, found=ours is not None)
        return written

    def _correct(
        self,
        intention: IntentionRecord,
        correction: IntentionCorrection,
        now: datetime,
        record: Record,
        store_want: StoreWant,
        withdraw: Withdraw,
    ) -> int:
        wants = [
            Want.model_validate(w) for w in self._ledger.wants(intention.namespace, intention.mind)
        ]
        judged = correct_intention(intention, correction, wants, now)
        if judged.status is not None:
            self._ledger.transition_intention(intention.id, judged.status, judged.reason, now)
        for want in judged.wants:
            store_want(want)
        if judged.status is IntentionStatus.ABANDONED and intention.plan:
            withdraw(intention.namespace, intention.plan, judged.reason)
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
        self._ledger.append_event(
            EventRecord(
                mind=meta["name"],
                namespace=meta["namespace"],
                type=CORRECTED,
                subject=SubjectRef(kind=MIND.kind, name=meta["name"], uid=meta["uid"]),
                payload={
                    **correction.to_k8s(),
                    "applied": found,
                    **({} if found else {"why": "no such intention of this mind"}),
                },
                occurred_at=now,
                idempotency_key=key,
            )
        )

"""What the ledger tells the metrics, against a real Postgres: prediction summaries for every
Mind in one query, and an observer told about each transaction after it ends."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta

import pytest
from sqlalchemy import text
from sqlalchemy.exc import SQLAlchemyError

from minds.adapters.ledger import Ledger
from minds.domain.beliefs import PredictionRecord, PredictionStatus
from minds.domain.errors import NotFound
from minds.domain.ledger import EventRecord, SubjectRef
from minds.domain.metrics.state import PredictionSummary

T0 = datetime(2026, 12, 3, 9, 0, tzinfo=UTC)
P = PredictionStatus


def prediction(id: str, mind: str, confidence: float) -> PredictionRecord:
    return PredictionRecord(
        id=id,
        namespace="ops",
        mind=mind,
        plan="restart-atlas-r1",
        step="P1",
        criteria={"capability": "service.status", "field": "state"},
        confidence=confidence,
        window_start=T0,
        window_end=T0 + timedelta(minutes=1),
    )


def resolved(ledger: Ledger, id: str, mind: str, confidence: float, status: P | None) -> None:
    ledger.open_prediction(prediction(id, mind, confidence))
    if status is not None:
        ledger.resolve_prediction(id, status, T0 + timedelta(seconds=30), None)


def test_summaries_count_by_status_and_score_like_calibration(ledger: Ledger) -> None:
    resolved(ledger, "p1", "keeper", 0.9, P.CONFIRMED)
    resolved(ledger, "p2", "keeper", 0.7, P.REFUTED)
    resolved(ledger, "p3", "keeper", 0.6, P.EXPIRED)
    resolved(ledger, "p4", "keeper", 0.5, None)
    resolved(ledger, "p5", "watcher", 0.8, P.CONFIRMED)

    summaries = {s.mind: s for s in ledger.prediction_summaries()}
    keeper = summaries["keeper"]
    assert dict(keeper.counts) == {P.CONFIRMED: 1, P.REFUTED: 1, P.EXPIRED: 1, P.OPEN: 1}
    # The same score the mind's calibration reports, computed by the database.
    assert keeper.brier == pytest.approx(ledger.calibration("ops", "keeper").brier)
    assert keeper.brier == pytest.approx(((0.9 - 1) ** 2 + 0.7**2) / 2)
    assert summaries["watcher"].brier == pytest.approx(ledger.calibration("ops", "watcher").brier)


def test_summaries_of_an_empty_ledger(ledger: Ledger) -> None:
    assert ledger.prediction_summaries() == []


@dataclass
class Recorder:
    committed_: list[tuple[list[str], bool]] = field(default_factory=list)
    failures: int = 0

    def committed(self, appended: Sequence[EventRecord], seconds: float, wrote: bool) -> None:
        assert seconds >= 0
        self.committed_.append(([e.type for e in appended], wrote))

    def failed(self) -> None:
        self.failures += 1


def event(key: str) -> EventRecord:
    return EventRecord(
        mind="keeper",
        namespace="ops",
        type="plan_replanned",
        subject=SubjectRef(kind="Plan", name="p"),
        payload={},
        occurred_at=T0,
        idempotency_key=key,
    )


def test_the_observer_hears_new_events_once_and_which_transactions_wrote(ledger: Ledger) -> None:
    seen = Recorder()
    ledger.observe(seen)
    assert ledger.append_event(event("k1"))
    # A replay appends nothing, though it was a write (an INSERT that found the key taken).
    assert not ledger.append_event(event("k1"))
    ledger.events(namespace="ops")
    assert seen.committed_ == [(["plan_replanned"], True), ([], True), ([], False)]


def test_the_observer_hears_a_write_that_appends_no_event(ledger: Ledger) -> None:
    seen = Recorder()
    ledger.observe(seen)
    ledger.upsert_belief("ops", "keeper", "restarts heal atlas", 0.8, T0)
    [(types, wrote)] = seen.committed_
    assert wrote
    assert types == ["belief_formed"]


def test_the_observer_hears_a_failed_transaction(ledger: Ledger) -> None:
    seen = Recorder()
    ledger.observe(seen)
    with pytest.raises(SQLAlchemyError), ledger.session() as session:
        session.execute(text("SELECT * FROM no_such_table"))
    assert seen.failures == 1
    assert seen.committed_ == []


def test_a_refusal_is_not_a_ledger_error(ledger: Ledger) -> None:
    seen = Recorder()
    ledger.observe(seen)
    with pytest.raises(NotFound):  # raised inside the transaction, which rolls back
        ledger.resolve_prediction("missing", P.CONFIRMED, T0, None)
    assert seen.failures == 0


def test_summary_without_resolved_predictions_has_no_score() -> None:
    assert PredictionSummary("ops", "keeper", {P.OPEN: 3, P.EXPIRED: 1}).brier is None

"""The Prometheus side: counters told by the engine, the ledger and kopf's log; the state
collector over a source of objects; and an exposition promtool accepts."""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

import pytest
from prometheus_client import CollectorRegistry, generate_latest
from sqlalchemy.exc import OperationalError

from minds.adapters.metrics import ProcessMetrics, StateCollector
from minds.adapters.metrics.counters import KOPF_OBJECTS_LOGGER
from minds.domain.beliefs import PredictionStatus
from minds.domain.intentions import IntentionStatus, intention_event_type
from minds.domain.ledger import EventRecord, SubjectRef
from minds.domain.metrics.state import PredictionSummary
from minds.domain.resources.kinds import APPROVAL, MIND, PLAN, Kind
from tests.fixtures.metrics import check_metrics
from tests.fixtures.prometheus import Promtool

NOW = datetime(2026, 12, 3, 12, 0, tzinfo=UTC)


def value(registry: CollectorRegistry, name: str, **labels: str) -> float | None:
    return registry.get_sample_value(name, labels)


@pytest.fixture
def registry() -> CollectorRegistry:
    return CollectorRegistry()


@pytest.fixture
def process(registry: CollectorRegistry) -> ProcessMetrics:
    return ProcessMetrics(registry)


def test_approval_decisions_and_their_wait(
    registry: CollectorRegistry, process: ProcessMetrics
) -> None:
    process.approval_decided("ops", "keeper", "approved", 42.0)
    process.approval_decided("ops", "keeper", "expired", None)
    who = {"namespace": "ops", "mind": "keeper"}
    assert value(registry, "minds_approval_decisions_total", **who, outcome="approved") == 1
    assert value(registry, "minds_approval_decisions_total", **who, outcome="expired") == 1
    assert value(registry, "minds_approval_wait_seconds_count", **who) == 1
    assert value(registry, "minds_approval_wait_seconds_sum", **who) == 42.0


def test_executions_by_capability_and_outcome(
    registry: CollectorRegistry, process: ProcessMetrics
) -> None:
    process.invoked("ops", "keeper", "service.restart", "executed")
    process.invoked("ops", "keeper", "service.restart", "executed")
    labels = {"namespace": "ops", "mind": "keeper", "capability": "service.restart"}
    assert value(registry, "minds_executions_total", **labels, outcome="executed") == 2


def _event(type_: str) -> EventRecord:
    return EventRecord(
        mind="keeper",
        namespace="ops",
        type=type_,
        subject=SubjectRef(kind="Plan", name="p"),
        payload={},
        occurred_at=NOW,
        idempotency_key=type_,
    )


def test_replans_and_abandonments_come_from_new_ledger_events(
    registry: CollectorRegistry, process: ProcessMetrics
) -> None:
    abandoned = intention_event_type(IntentionStatus.ABANDONED)
    events = [_event("plan_replanned"), _event(abandoned), _event("plan_completed")]
    process.committed(events, 0.01, wrote=True)
    who = {"namespace": "ops", "mind": "keeper"}
    assert value(registry, "minds_replans_total", **who) == 1
    assert value(registry, "minds_intentions_abandoned_total", **who) == 1


def test_ledger_write_time_counts_writing_transactions_only(
    registry: CollectorRegistry, process: ProcessMetrics
) -> None:
    process.committed([], 0.5, wrote=False)
    assert value(registry, "minds_ledger_write_seconds_count") == 0
    process.committed([], 0.02, wrote=True)
    assert value(registry, "minds_ledger_write_seconds_count") == 1
    assert value(registry, "minds_ledger_write_seconds_bucket", le="0.025") == 1
    assert value(registry, "minds_ledger_errors_total") == 0
    process.failed()
    assert value(registry, "minds_ledger_errors_total") == 1


def test_an_unsealed_ledger_shows_in_a_gauge(
    registry: CollectorRegistry, process: ProcessMetrics
) -> None:
    process.ledger_sealed(False)
    assert value(registry, "minds_ledger_sealed") == 0
    process.ledger_sealed(True)
    assert value(registry, "minds_ledger_sealed") == 1


def test_reconcile_errors_are_kopfs_failures_by_kind(
    registry: CollectorRegistry, process: ProcessMetrics
) -> None:
    logger = logging.getLogger(KOPF_OBJECTS_LOGGER)
    process.watch_kopf()
    try:
        ref = {"kind": "Plan", "name": "p", "namespace": "ops"}
        logger.error("Handler 'plan_admit' failed with an exception.", extra={"k8s_ref": ref})
        logger.warning("Patching failed", extra={"k8s_ref": ref})  # not a failure
        logger.error("no object named")  # not about an object: nothing to label
    finally:
        process.unwatch_kopf()
    logger.error("after unwatching", extra={"k8s_ref": {"kind": "Plan"}})
    assert value(registry, "minds_reconcile_errors_total", kind="Plan") == 1
    for kind in ("Mind", "Approval", "CapabilityGrant"):
        assert value(registry, "minds_reconcile_errors_total", kind=kind) == 0


class Objects:
    def __init__(self, by_kind: Mapping[Kind, list[dict[str, Any]]]) -> None:
        self._by_kind = by_kind

    def objects(self, kind: Kind) -> Iterable[Mapping[str, Any]]:
        return self._by_kind.get(kind, [])


class Predictions:
    def __init__(self, summaries: Sequence[PredictionSummary] | Exception) -> None:
        self._summaries = summaries

    def prediction_summaries(self) -> Sequence[PredictionSummary]:
        if isinstance(self._summaries, Exception):
            raise self._summaries
        return self._summaries


MIND_BODY = {
    "metadata": {"namespace": "ops", "name": "keeper"},
    "spec": {"budget": {"invocations": 4, "wallSeconds": 600, "money": 5, "approvals": 2}},
    "status": {"lastCycleAt": "2026-12-03T11:59:00Z"},
}
PLAN_BODY = {
    "metadata": {"namespace": "ops", "name": "restart-atlas"},
    "spec": {"mind": "keeper", "origin": "template"},
    "status": {
        "phase": "executing",
        "steps": [{"key": "P1", "status": "executing", "startedAt": "2026-12-03T11:58:00Z"}],
        "actual": {"invocations": 1},
        "budget": {"invocations": 4, "wallSeconds": 600},
    },
}
APPROVAL_BODY = {
    "metadata": {
        "namespace": "ops",
        "name": "restart-atlas-p1",
        "creationTimestamp": "2026-12-03T11:58:30Z",
    },
    "spec": {"mind": "keeper"},
    "status": {"phase": "Pending"},
}
OBJECTS = Objects({MIND: [MIND_BODY], PLAN: [PLAN_BODY], APPROVAL: [APPROVAL_BODY]})
SUMMARY = PredictionSummary("ops", "keeper", {PredictionStatus.CONFIRMED: 1}, 0.04)


def test_the_collector_exports_state_at_scrape_time(registry: CollectorRegistry) -> None:
    registry.register(StateCollector(OBJECTS, Predictions([SUMMARY]), lambda: NOW, "9.9.9"))
    who = {"namespace": "ops", "mind": "keeper"}
    assert value(registry, "minds_attention_open_requests", **who) == 1
    assert value(registry, "minds_budget_used_ratio", **who, resource="invocations") == 0.25
    assert value(registry, "minds_budget_used_ratio", **who, resource="wall_seconds") == 0.2
    assert value(registry, "minds_calibration_brier_score", **who) == pytest.approx(0.04)
    assert value(registry, "minds_ledger_up") == 1
    assert value(registry, "minds_build_info", version="9.9.9") == 1


def test_a_ledger_that_does_not_answer_is_ledger_up_zero(registry: CollectorRegistry) -> None:
    down = Predictions(OperationalError("SELECT", {}, Exception("connection refused")))
    registry.register(StateCollector(OBJECTS, down, lambda: NOW, "9.9.9"))
    assert value(registry, "minds_ledger_up") == 0
    assert value(registry, "minds_attention_open_requests", namespace="ops", mind="keeper") == 1


def test_objects_that_cannot_be_listed_fail_the_scrape(registry: CollectorRegistry) -> None:
    class Broken:
        def objects(self, kind: Kind) -> Iterable[Mapping[str, Any]]:
            raise RuntimeError("the API server is unreachable")

    registry.register(StateCollector(Broken(), Predictions([]), lambda: NOW, "9.9.9"))
    with pytest.raises(RuntimeError, match="unreachable"):
        generate_latest(registry)


def test_promtool_accepts_the_exposition(
    registry: CollectorRegistry, process: ProcessMetrics, promtool: Promtool
) -> None:
    registry.register(StateCollector(OBJECTS, Predictions([SUMMARY]), lambda: NOW, "9.9.9"))
    process.approval_decided("ops", "keeper", "approved", 3.0)
    process.invoked("ops", "keeper", "service.restart", "executed")
    process.committed([_event("plan_replanned")], 0.01, wrote=True)
    result = check_metrics(promtool, generate_latest(registry).decode())
    assert result.returncode == 0, result.stdout + result.stderr


def test_every_known_mind_has_its_event_counters_at_zero(
    registry: CollectorRegistry, process: ProcessMetrics
) -> None:
    """A Mind's first replan must be an increase rate() sees, and a dashboard shows 0 for a
    Mind that never replanned rather than no data."""
    registry.register(
        StateCollector(
            OBJECTS, Predictions([]), lambda: NOW, "9.9.9", minds_seen=process.minds_present
        )
    )
    who = {"namespace": "ops", "mind": "keeper"}
    assert value(registry, "minds_attention_open_requests", **who) == 1  # one scrape
    assert value(registry, "minds_replans_total", **who) == 0
    assert value(registry, "minds_intentions_abandoned_total", **who) == 0
    assert value(registry, "minds_replans_total", namespace="ops", mind="nobody") is None

"""The controller's registry as ``start_metrics`` builds it: the catalogue's metrics and the
standard collectors, every reconcile timed by kind, and no series of a Mind that is gone."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from datetime import UTC, datetime
from typing import Any

import pytest
from prometheus_client import CollectorRegistry
from prometheus_client.exposition import generate_latest
from prometheus_client.metrics_core import Metric

from minds.controller.metrics import ControllerMetrics, start_metrics
from minds.domain.metrics.catalogue import CATALOGUE, STANDARD, MetricType, Scope, of_a_mind
from minds.domain.metrics.state import PredictionSummary
from minds.domain.resources.kinds import MIND, PLAN, Kind
from minds.domain.workqueue import Work
from tests.fixtures.metrics import check_metrics
from tests.fixtures.prometheus import Promtool

NOW = datetime(2026, 12, 3, 12, 0, tzinfo=UTC)
KINDS = ("Mind", "Plan", "Approval", "CapabilityGrant")


def body(name: str, **spec: Any) -> dict[str, Any]:
    return {"metadata": {"namespace": "ops", "name": name}, "spec": spec}


class Cluster:
    """What the watch holds, changed by the test."""

    def __init__(self) -> None:
        self.held: dict[Kind, list[dict[str, Any]]] = {MIND: [], PLAN: []}

    def objects(self, kind: Kind) -> Iterable[Mapping[str, Any]]:
        return list(self.held.get(kind, []))

    def prediction_summaries(self) -> list[PredictionSummary]:
        return []


@pytest.fixture
def cluster() -> Cluster:
    return Cluster()


@pytest.fixture
def metrics(cluster: Cluster) -> Iterator[ControllerMetrics]:
    built = start_metrics("", cluster, cluster, lambda: NOW)
    yield built
    built.close()


def value(registry: CollectorRegistry, name: str, **labels: str) -> float | None:
    return registry.get_sample_value(name, labels)


def _name(family: Metric) -> str:
    """A family's name as the docs give it: a counter's with ``_total``."""
    return f"{family.name}_total" if family.type == "counter" else family.name


def exported(registry: CollectorRegistry) -> dict[str, set[str]]:
    """Each family by name, with its label names."""
    return {
        _name(family): {label for s in family.samples for label in s.labels} - {"le"}
        for family in registry.collect()
    }


def test_the_registry_serves_the_catalogue_and_the_standard_collectors_nothing_else(
    metrics: ControllerMetrics,
) -> None:
    got = exported(metrics.registry)
    standard = {metric.name: set(metric.labels) for metric in STANDARD}
    assert {name: labels for name, labels in got.items() if not name.startswith("minds_")} == (
        standard
    )
    assert {name for name in got if name.startswith("minds_")} == {s.name for s in CATALOGUE}
    assert value(metrics.registry, "process_start_time_seconds") is not None
    assert value(metrics.registry, "python_gc_collections_total", generation="0") is not None


def test_the_standard_metrics_have_the_types_the_docs_give(metrics: ControllerMetrics) -> None:
    types = {_name(family): family.type for family in metrics.registry.collect()}
    for metric in STANDARD:
        assert types[metric.name] == metric.type.value, metric.name
        assert metric.help.endswith("."), metric.name


def test_promtool_accepts_the_whole_registry(
    metrics: ControllerMetrics, promtool: Promtool
) -> None:
    result = check_metrics(promtool, generate_latest(metrics.registry).decode())
    assert result.returncode == 0, result.stdout + result.stderr


def test_every_kind_has_its_reconcile_time_from_the_start(metrics: ControllerMetrics) -> None:
    """The first reconcile is then an increase rate() sees, as with the errors."""
    for kind in KINDS:
        assert value(metrics.registry, "minds_reconcile_duration_seconds_count", kind=kind) == 0
        assert value(metrics.registry, "minds_reconcile_errors_total", kind=kind) == 0


def test_a_queue_run_is_timed_by_its_work_and_by_its_kind(metrics: ControllerMetrics) -> None:
    metrics.process.worked(Work.DECISION.value, "Approval", 0.2)
    metrics.process.reconciled("Mind", 0.03)
    registry = metrics.registry
    assert value(registry, "minds_workqueue_work_duration_seconds_count", work="decision") == 1
    assert value(registry, "minds_reconcile_duration_seconds_count", kind="Approval") == 1
    assert value(registry, "minds_reconcile_duration_seconds_sum", kind="Approval") == 0.2
    assert value(registry, "minds_reconcile_duration_seconds_bucket", kind="Mind", le="0.05") == 1
    # A run of kopf's alone is no work of the queue.
    assert value(registry, "minds_workqueue_work_duration_seconds_count", work="mind") == 0


def _tell_all_about(metrics: ControllerMetrics, mind: str) -> None:
    """Something in every process metric labelled by the Mind."""
    process = metrics.process
    process.approval_decided("ops", mind, "approved", 12.0)
    process.invoked("ops", mind, "service.status", "executed")
    process.woken("ops", mind, "availability")


def _series_of(registry: CollectorRegistry) -> dict[str, set[str]]:
    """The Minds each family has series about."""
    found: dict[str, set[str]] = {}
    for family in registry.collect():
        for sample in family.samples:
            if "mind" in sample.labels:
                found.setdefault(_name(family), set()).add(sample.labels["mind"])
    return found


def _about(registry: CollectorRegistry) -> set[str]:
    """The Minds any series is about."""
    return set().union(*_series_of(registry).values())


def test_a_gone_minds_series_end_at_the_next_scrape_every_metric_of_a_mind_alike(
    cluster: Cluster, metrics: ControllerMetrics
) -> None:
    cluster.held[MIND] = [body("keeper"), body("gone")]
    cluster.held[PLAN] = [{**body("p"), "spec": {"mind": "gone"}, "status": {"phase": "executing"}}]
    for mind in ("keeper", "gone"):
        _tell_all_about(metrics, mind)
    before = _series_of(metrics.registry)
    # Every process metric of a Mind has series about it, and a state gauge through its Plan.
    of_minds = {spec.name for spec in CATALOGUE if of_a_mind(spec)}
    told = {name for name, minds in before.items() if "gone" in minds}
    assert {s.name for s in CATALOGUE if of_a_mind(s) and s.scope is Scope.PROCESS} <= told
    assert "minds_plans" in told
    assert told <= of_minds

    cluster.held[MIND] = [body("keeper")]  # the watch saw it deleted; its Plan is still there
    assert _about(metrics.registry) == {"keeper"}
    assert value(metrics.registry, "minds_replans_total", namespace="ops", mind="keeper") == 0


def test_work_that_ends_after_the_mind_does_not_bring_its_series_back(
    cluster: Cluster, metrics: ControllerMetrics
) -> None:
    """Its Approvals are withdrawn as its Plans go, after the Mind itself: the decision is
    counted, and the next scrape drops it."""
    cluster.held[MIND] = [body("keeper")]
    metrics.process.invoked("ops", "keeper", "service.status", "executed")
    cluster.held[MIND] = []
    assert _about(metrics.registry) == set()
    metrics.process.approval_decided("ops", "keeper", "withdrawn", None)
    assert _about(metrics.registry) == set()


def test_a_mind_made_again_under_the_name_starts_from_zero(
    cluster: Cluster, metrics: ControllerMetrics
) -> None:
    cluster.held[MIND] = [body("keeper")]
    metrics.process.invoked("ops", "keeper", "service.status", "executed")
    cluster.held[MIND] = []
    generate_latest(metrics.registry)  # a scrape while it was gone
    cluster.held[MIND] = [body("keeper")]
    executed = {"namespace": "ops", "mind": "keeper", "capability": "service.status"}
    assert value(metrics.registry, "minds_executions_total", **executed, outcome="executed") is None
    assert value(metrics.registry, "minds_replans_total", namespace="ops", mind="keeper") == 0


def test_every_bucket_of_a_histogram_goes_with_its_mind(
    cluster: Cluster, metrics: ControllerMetrics
) -> None:
    """A histogram has series per bucket: all of them go."""
    cluster.held[MIND] = [body("keeper")]
    metrics.process.approval_decided("ops", "keeper", "approved", 30.0)
    assert (
        value(metrics.registry, "minds_approval_wait_seconds_count", namespace="ops", mind="keeper")
        == 1
    )
    cluster.held[MIND] = []
    text = generate_latest(metrics.registry).decode()
    assert 'mind="keeper"' not in text
    assert any(spec.type is MetricType.HISTOGRAM and of_a_mind(spec) for spec in CATALOGUE), (
        "the test would prove nothing"
    )

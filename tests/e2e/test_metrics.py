"""The controller's ``/metrics`` against the real control plane: what it exports is what the
cluster holds (a Mind at its attention cap, a plan over budget), a restarted controller exports
the same state, a person's decision is counted, promtool accepts a live scrape, the process's
own series and reconcile times by kind are served, and a deleted Mind's series end."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest

from minds.devenv.controller import ControllerHandle, stop_controller
from minds.domain.metrics.catalogue import CATALOGUE, STANDARD, Scope
from minds.domain.resources.common import parse_timestamp
from tests.e2e.executor_support import (
    apply,
    assert_no_tracebacks,
    deployment,
    grant_request,
    mind,
    operator_plan,
    read_step,
    wait_phase,
    wait_step,
)
from tests.fixtures.cluster import Cluster, ControllerFactory
from tests.fixtures.metrics import Labels, check_metrics, labels, samples, scrape
from tests.fixtures.prometheus import Promtool
from tests.fixtures.waiting import eventually

STATE = {spec.name for spec in CATALOGUE if spec.scope is Scope.STATE}
#: Moves on by itself: a controller that starts runs the Mind's cycle at once.
CLOCKED = {"minds_mind_last_cycle_timestamp_seconds"}


def at_cap_and_over_budget(cluster: Cluster, namespace: str) -> None:
    """A Mind whose cap is 2 with a plan asking for 3 grants (two pending, one waiting at the
    cap), and a plan that spent its one invocation and is blocked on the second."""
    mind(cluster, namespace, attention={"maxOpenRequests": 2})
    deployment(cluster, namespace)
    asks = [grant_request(k, namespace) for k in ("R1", "R2", "R3")]
    apply(cluster, operator_plan(namespace, "asks", asks))
    reads = [read_step("D1", namespace), read_step("D2", namespace, "D1")]
    apply(cluster, operator_plan(namespace, "thrifty", reads, budget={"invocations": 1}))
    wait_step(cluster, namespace, "asks", "R3", "waiting")
    wait_phase(cluster, namespace, "thrifty", "blocked")


def of_namespace(exported: dict[str, dict[Labels, float]], namespace: str) -> dict[str, Any]:
    """The state gauges about ``namespace``'s objects (the shared cluster has others)."""
    return {
        name: {k: v for k, v in series.items() if ("namespace", namespace) in k}
        for name, series in exported.items()
        if name in STATE - CLOCKED
    }


def pending_approvals(cluster: Cluster, namespace: str) -> list[dict[str, Any]]:
    listed = cluster.api.list("approvals", namespace)
    return [a for a in listed["items"] if (a.get("status") or {}).get("phase") == "Pending"]


def exported_when(url: str, name: str, key: Labels, wanted: float) -> dict[str, Any]:
    """The scrape once ``name{key}`` reads ``wanted``: the controller sees its watch events
    (and writes its status) a moment after kubectl returns."""

    def probe() -> dict[str, Any] | None:
        found = samples(scrape(url))
        return found if found.get(name, {}).get(key) == wanted else None

    return eventually(probe, timeout=60, what=f"{name}{dict(key)} == {wanted}")


@pytest.fixture
def session(session_controller: ControllerHandle) -> Iterator[ControllerHandle]:
    before = len(session_controller.log())
    yield session_controller
    assert_no_tracebacks(session_controller.log()[before:])


def test_the_scrape_shows_the_cap_the_budget_and_a_persons_decision(
    cluster: Cluster, namespace: str, session: ControllerHandle, promtool: Promtool
) -> None:
    at_cap_and_over_budget(cluster, namespace)
    keeper = labels(namespace=namespace, mind="keeper")
    got = exported_when(session.metrics_url, "minds_attention_open_requests", keeper, 2)

    assert got["minds_attention_max_open_requests"][keeper] == 2
    assert got["minds_attention_waiting_at_cap"][keeper] == 1
    assert got["minds_plans_budget_exhausted"][keeper] == 1
    invocations = labels(namespace=namespace, mind="keeper", resource="invocations")
    assert got["minds_budget_used_ratio"][invocations] == 1.0
    assert got["minds_budget_limit"][invocations] == 20  # the Mind's default per-plan budget
    blocked = labels(namespace=namespace, mind="keeper", phase="blocked")
    awaiting = labels(namespace=namespace, mind="keeper", phase="awaiting_approval")
    assert got["minds_plans"][blocked] == 1
    assert got["minds_plans"][awaiting] == 1
    assert got["minds_steps"][labels(namespace=namespace, mind="keeper", phase="waiting")] == 1
    oldest = min(a["metadata"]["creationTimestamp"] for a in pending_approvals(cluster, namespace))
    oldest_at = parse_timestamp(oldest)
    assert oldest_at is not None
    assert got["minds_attention_oldest_pending_request_timestamp_seconds"][keeper] == (
        oldest_at.timestamp()
    )
    assert got["minds_ledger_up"][frozenset()] == 1
    read = labels(
        namespace=namespace, mind="keeper", capability="service.status", outcome="executed"
    )
    assert got["minds_executions_total"][read] == 1

    live = scrape(session.metrics_url)
    checked = check_metrics(promtool, live)
    assert checked.returncode == 0, checked.stdout + checked.stderr

    # A person approves one request: one fewer is open, and the decision is counted.
    first = pending_approvals(cluster, namespace)[0]["metadata"]["name"]
    cluster.kubectl(
        "patch",
        "approval",
        first,
        "-n",
        namespace,
        "--type=merge",
        "-p",
        json.dumps({"spec": {"decision": "Approved", "decidedBy": "approver"}}),
        context="approver",
    )
    after = exported_when(session.metrics_url, "minds_attention_open_requests", keeper, 1)
    approved = labels(namespace=namespace, mind="keeper", outcome="approved")
    decided = eventually(
        lambda: (
            samples(scrape(session.metrics_url))
            .get("minds_approval_decisions_total", {})
            .get(approved)
        ),
        what="the approval counted",
    )
    assert decided == 1
    assert after["minds_attention_waiting_at_cap"][keeper] == 1


@pytest.mark.usefixtures("alone")
def test_a_restarted_controller_exports_the_same_state(
    cluster: Cluster, namespace: str, controller_factory: ControllerFactory
) -> None:
    first = controller_factory("first")
    at_cap_and_over_budget(cluster, namespace)
    keeper = labels(namespace=namespace, mind="keeper")
    exported_when(first.metrics_url, "minds_plans_budget_exhausted", keeper, 1)
    before = of_namespace(samples(scrape(first.metrics_url)), namespace)
    assert before["minds_attention_open_requests"][keeper] == 2
    assert stop_controller(first)

    second = controller_factory("second")

    # Nothing from the watch is told until it has delivered everything, then all of it at once
    # (what the ledger says, such as predictions, is told from the start).
    def complete() -> dict[str, Any] | None:
        seen = of_namespace(samples(scrape(second.metrics_url)), namespace)
        return seen if seen.get("minds_attention_open_requests") else None

    after = eventually(complete, what="the restarted controller's first scrape from its watch")
    assert after == before
    # Counters are the process's own: the new one has executed nothing yet.
    assert "minds_executions_total" not in after
    counted = samples(scrape(second.metrics_url)).get("minds_executions_total", {})
    assert not [k for k in counted if ("namespace", namespace) in k]
    assert_no_tracebacks(first.log() + second.log())


def read_once(cluster: Cluster, namespace: str) -> None:
    """A Mind whose plan read its workload once, and completed."""
    mind(cluster, namespace)
    deployment(cluster, namespace)
    apply(cluster, operator_plan(namespace, "reads", [read_step("D1", namespace)]))
    wait_phase(cluster, namespace, "reads", "completed")


def test_the_process_its_python_and_each_kinds_reconcile_time_are_served(
    cluster: Cluster, namespace: str, session: ControllerHandle
) -> None:
    read_once(cluster, namespace)
    exported = samples(scrape(session.metrics_url))
    for metric in STANDARD:
        assert metric.name in exported, metric.name
    assert exported["process_resident_memory_bytes"][frozenset()] > 0
    reconciles = exported["minds_reconcile_duration_seconds_count"]
    for kind in ("Mind", "Plan", "Approval", "CapabilityGrant"):
        assert labels(kind=kind) in reconciles, kind
    # This test's Mind and Plan were reconciled (with the work of every other test's).
    assert reconciles[labels(kind="Mind")] >= 1
    assert reconciles[labels(kind="Plan")] >= 1


def _of_mind(url: str, namespace: str, name: str) -> dict[str, dict[Labels, float]]:
    """Every series about the Mind, by metric."""
    about = {("namespace", namespace), ("mind", name)}
    found = {
        metric: {key: v for key, v in series.items() if about <= key}
        for metric, series in samples(scrape(url)).items()
    }
    return {metric: series for metric, series in found.items() if series}


def test_a_deleted_minds_series_end_its_counters_and_gauges_alike(
    cluster: Cluster, namespace: str, session: ControllerHandle
) -> None:
    read_once(cluster, namespace)
    executed = labels(
        namespace=namespace, mind="keeper", capability="service.status", outcome="executed"
    )
    exported_when(session.metrics_url, "minds_executions_total", executed, 1)
    before = _of_mind(session.metrics_url, namespace, "keeper")
    # A process counter, state gauges from the Mind and from its Plan, and the ledger's.
    assert {
        "minds_executions_total",
        "minds_replans_total",
        "minds_attention_max_open_requests",
        "minds_plans",
        "minds_predictions",
    } <= set(before)

    # kubectl waits until the Mind is gone: the controller released its finalizer.
    cluster.kubectl("delete", "mind", "keeper", "-n", namespace)

    def ended() -> bool:
        return not _of_mind(session.metrics_url, namespace, "keeper")

    eventually(ended, timeout=30, what=f"no series of {namespace}/keeper")

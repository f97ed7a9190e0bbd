"""Findings re-enter the cycle, against the real control plane: a question about a workload is
investigated, and what its `summarise_findings` step saw comes back to the mind once, as an
observation with its source, in the ledger and in `kubectl minds timeline`. A healthy finding
answers the question and nothing more happens; an unhealthy one moves the want to restore the
workload (origin `finding`), which `kubectl minds why` on the restart shows."""

from __future__ import annotations

import json
from typing import Any

import pytest

from minds.adapters.ledger import Ledger
from tests.e2e.executor_support import deployment, mind, minds_cli, set_health, wait_phase
from tests.e2e.test_repeats_cycle import ALLOW_RESTART, cycles_pass, plans_of
from tests.fixtures.cluster import Cluster
from tests.fixtures.waiting import eventually

pytestmark = pytest.mark.usefixtures("session_controller")


QUESTION = {
    "name": "queue",
    "text": "is atlas-worker keeping up with the queue?",
    "subject": {"name": "atlas-worker"},
}


def asking_mind(cluster: Cluster, namespace: str, *, healthy: bool, asks: bool = True) -> None:
    """atlas-worker, healthy or not, and a keeper that may restart it (not read its logs)
    and, unless told otherwise, asks about it."""
    deployment(cluster, namespace)
    set_health(cluster, namespace, healthy=healthy)
    mind(
        cluster,
        namespace,
        cycleIntervalSeconds=5,
        capabilityPolicy=ALLOW_RESTART,
        budget={"invocations": 100},
        requests=[QUESTION] if asks else [],
    )


def degraded(ledger: Ledger, namespace: str) -> float | None:
    """The mind's confidence that atlas-worker is degraded; None: it never believed so."""
    held = {b.statement: b.confidence for b in ledger.beliefs(namespace, "keeper")}
    return held.get(f"workload {namespace}/atlas-worker is degraded")


def finding_wants(ledger: Ledger, namespace: str) -> list[dict[str, Any]]:
    return [w for w in ledger.wants(namespace, "keeper") if w.get("origin") == "finding"]


def test_an_investigations_findings_are_taken_in_once(
    cluster: Cluster, namespace: str, e2e_ledger: Ledger, e2e_database_url: str
) -> None:
    asking_mind(cluster, namespace, healthy=True)
    [plan] = eventually(lambda: plans_of(cluster, namespace), timeout=90, what="a plan")
    name = plan["metadata"]["name"]
    summary = next(s for s in plan["spec"]["steps"] if s.get("internalAction"))
    wait_phase(cluster, namespace, name, "completed", timeout=120)

    def taken() -> list[dict[str, object]]:
        events = e2e_ledger.events(namespace=namespace, mind="keeper", type="findings_taken_in")
        return [e.payload for e in events]

    [payload] = eventually(taken, timeout=60, what="the findings taken in")
    assert payload["plan"] == name
    assert payload["step"] == summary["key"]
    assert payload["subject"] == f"{namespace}/atlas-worker"
    [recorded] = e2e_ledger.events(namespace=namespace, type="observation_recorded")
    assert recorded.payload["step"] == summary["key"]

    cycles_pass(cluster, namespace, 3)
    assert len(taken()) == 1
    counted = [
        e.payload["findingsTakenIn"]
        for e in e2e_ledger.events(namespace=namespace, mind="keeper", type="cycle_completed")
    ]
    assert [n for n in counted if n] == [1]

    shown = minds_cli(
        cluster, e2e_database_url, "timeline", "keeper", "-n", namespace, "-o", "json"
    )
    assert shown.returncode == 0, shown.stderr
    [item] = [i for i in json.loads(shown.stdout) if i["what"] == "findings_taken_in"]
    assert (item["detail"]["plan"], item["detail"]["step"]) == (name, summary["key"])

    # Healthy: the question is answered; no want to restore, no other plan.
    assert finding_wants(e2e_ledger, namespace) == []
    assert [p["metadata"]["name"] for p in plans_of(cluster, namespace)] == [name]
    [request] = [w for w in e2e_ledger.wants(namespace, "keeper") if w["origin"] == "request"]
    assert request["status"] == "satisfied"
    assert degraded(e2e_ledger, namespace) is None  # a running workload is no news


def test_an_unhealthy_finding_moves_the_want_to_restore_the_workload(
    cluster: Cluster, namespace: str, e2e_ledger: Ledger, e2e_database_url: str
) -> None:
    """The investigation reads atlas-worker degraded: the finding makes the want to restore
    it, with the finding as its term; the mind plans one restart for it, and `why` on that
    plan walks back to the finding. Nothing is investigated twice."""
    asking_mind(cluster, namespace, healthy=False)
    [look] = eventually(lambda: plans_of(cluster, namespace), timeout=90, what="a plan")
    assert look["spec"]["strategy"] == "diagnose"
    name = look["metadata"]["name"]
    summary = next(s for s in look["spec"]["steps"] if s.get("internalAction"))
    wait_phase(cluster, namespace, name, "completed", timeout=120)

    [want] = eventually(lambda: finding_wants(e2e_ledger, namespace), timeout=60, what="a want")
    # The mind has no goal: only the finding can have set what it believes of atlas-worker.
    eventually(lambda: (degraded(e2e_ledger, namespace) or 0) > 0.9, timeout=30, what="belief")
    assert want["subject"] == f"{namespace}/atlas-worker"
    assert want["means"]["capability"] == "service.restart"
    assert want["terms"][0]["name"] == f"finding:{name}/{summary['key']}"

    def restarts() -> list[dict[str, Any]]:
        return [p for p in plans_of(cluster, namespace) if p["spec"]["strategy"] == "direct"]

    [restart] = eventually(restarts, timeout=90, what="the restart plan")
    why = minds_cli(
        cluster, e2e_database_url, "why", f"plan/{restart['metadata']['name']}", "-n", namespace
    )
    assert why.returncode == 0, why.stderr
    assert "(from finding)" in why.stdout
    assert f"{name}/{summary['key']}" in why.stdout

    cycles_pass(cluster, namespace, 3)
    assert len(restarts()) == 1
    looks = [p for p in plans_of(cluster, namespace) if p["spec"]["strategy"] == "diagnose"]
    assert len(looks) == 1

"""Findings re-enter the cycle, against the real control plane: a question about a workload is
investigated, and what its `summarise_findings` step saw comes back to the mind once, as an
observation with its source, in the ledger and in `kubectl minds timeline`."""

from __future__ import annotations

import json

import pytest

from minds.adapters.ledger import Ledger
from tests.e2e.executor_support import deployment, mind, set_health, wait_phase
from tests.e2e.test_repeats_cycle import ALLOW_RESTART, cycles_pass, plans_of
from tests.e2e.test_volition import minds_cli
from tests.fixtures.cluster import Cluster
from tests.fixtures.waiting import eventually

pytestmark = pytest.mark.usefixtures("session_controller")


def test_an_investigations_findings_are_taken_in_once(
    cluster: Cluster, namespace: str, e2e_ledger: Ledger, e2e_database_url: str
) -> None:
    deployment(cluster, namespace)
    set_health(cluster, namespace, healthy=True)
    mind(
        cluster,
        namespace,
        cycleIntervalSeconds=5,
        capabilityPolicy=ALLOW_RESTART,
        budget={"invocations": 100},
        requests=[
            {
                "name": "queue",
                "text": "is atlas-worker keeping up with the queue?",
                "subject": {"name": "atlas-worker"},
            }
        ],
    )
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

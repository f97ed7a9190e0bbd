"""A Mind's Ready means it works: with its ledger's database gone, no cycle can run, and the
controller's health check turns Ready False within two cycle intervals (Degraded says why); once
the database is back, a cycle runs and Ready is True again. Real API server, Postgres and a
controller of the test's own."""

from __future__ import annotations

import time
from typing import Any

import pytest

from tests.e2e.executor_support import mind
from tests.e2e.test_blips import ledger_down
from tests.fixtures.cluster import Cluster, ControllerFactory
from tests.fixtures.postgres import LedgerDatabase
from tests.fixtures.waiting import eventually

pytestmark = [pytest.mark.minutes(1), pytest.mark.usefixtures("alone")]

INTERVAL = 5  # seconds: the shortest cycle interval a Mind may have


def conditions(cluster: Cluster, namespace: str) -> dict[str, dict[str, Any]]:
    body = cluster.api.get("mind", "keeper", namespace)
    return {c["type"]: c for c in (body.get("status") or {}).get("conditions") or []}


def ready(cluster: Cluster, namespace: str) -> tuple[str, str] | None:
    found = conditions(cluster, namespace).get("Ready")
    return (found["status"], found["reason"]) if found else None


def test_ready_turns_false_while_the_ledger_is_down_and_true_again_after(
    cluster: Cluster,
    namespace: str,
    controller_factory: ControllerFactory,
    e2e_ledger_database: LedgerDatabase,
) -> None:
    mind(cluster, namespace, cycleIntervalSeconds=INTERVAL)
    controller_factory("health")
    cluster.kubectl(
        "wait", "--for=condition=Ready", "mind/keeper", "-n", namespace, "--timeout=60s"
    )
    # A cycle has completed (the ledger answered all through it).
    eventually(
        lambda: (
            (conditions(cluster, namespace).get("Ready") or {}).get("reason") == "Accepted"
            and cluster.api.get("mind", "keeper", namespace).get("status", {}).get("lastCycleAt")
        ),
        timeout=30,
        what="a first cycle",
    )

    with ledger_down(e2e_ledger_database):
        gone = time.monotonic()
        eventually(
            lambda: ready(cluster, namespace) == ("False", "LedgerUnavailable"),
            timeout=2 * INTERVAL + 5,
            interval=0.1,
            what="Ready False while the ledger is down",
        )
        took = time.monotonic() - gone
        degraded = conditions(cluster, namespace)["Degraded"]
        assert (degraded["status"], degraded["reason"]) == ("True", "LedgerUnavailable")
        assert "ledger" in degraded["message"]
        # Within two intervals (the health check runs every interval; the probe's own polling
        # adds a little).
        assert took <= 2 * INTERVAL + 1, took

    eventually(
        lambda: ready(cluster, namespace) == ("True", "Accepted"),
        timeout=60,
        what="Ready True once the ledger is back",
    )
    degraded = conditions(cluster, namespace)["Degraded"]
    assert (degraded["status"], degraded["reason"]) == ("False", "AsExpected")
    table = cluster.kubectl("get", "mind", "keeper", "-n", namespace).stdout
    header, row = table.splitlines()[:2]
    assert row[header.index("REASON") :].split()[0] == "Accepted"

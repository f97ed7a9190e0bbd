"""A plan's assumption checked against the mind's beliefs on the real control plane: a
workload recovers on its own while the mind's restart waits for approval; the cycle's
observation weakens the belief the plan assumed, the plan is reconsidered on
`weakened_belief`, and its Approval is withdrawn."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from typing import Any

import pytest

from minds.adapters.ledger import Ledger
from tests.e2e.executor_support import deployment, wait_step
from tests.e2e.test_volition import keeper, plans_of
from tests.e2e.world_support import break_pods, rollout_status
from tests.fixtures.cluster import Cluster
from tests.fixtures.waiting import eventually

pytestmark = pytest.mark.usefixtures("session_controller")


def weakened(ledger: Ledger, namespace: str) -> list[Any]:
    return [
        d
        for d in ledger.decisions(namespace=namespace, kind="reconsideration")
        if d.data["inputs"]["trigger"] == "weakened_belief"
    ]


@pytest.mark.usefixtures("world_controller")
def test_a_recovered_workload_weakens_the_plans_assumption_and_withdraws_its_approval(
    world: Cluster, world_namespace: str, e2e_ledger: Ledger, e2e_database_url: str
) -> None:
    cluster, namespace = world, world_namespace
    deployment(cluster, namespace)
    rollout_status(cluster, namespace)
    break_pods(cluster, namespace)
    keeper(cluster, namespace)
    [plan] = eventually(lambda: plans_of(cluster, namespace), timeout=90, what="a plan")
    name = plan["metadata"]["name"]
    assert plan["spec"]["assumptions"] == [
        {"belief": f"workload {namespace}/atlas-worker is degraded", "minConfidence": 0.5}
    ]
    waiting = wait_step(cluster, namespace, name, "P1", "awaiting_approval")
    # Nobody approves; someone restarts the workload by hand and it comes back.
    cluster.kubectl("rollout", "restart", "deployment/atlas-worker", "-n", namespace)
    rollout_status(cluster, namespace)

    [decision] = eventually(lambda: weakened(e2e_ledger, namespace), timeout=60, what="weakened")
    assert decision.outcome == "replan"
    assert decision.subjects["plan"] == name

    def approval_phase() -> str:
        obj = json.loads(
            cluster.kubectl(
                "get", "approval", waiting["approvalRef"], "-n", namespace, "-o", "json"
            ).stdout
        )
        return str(obj.get("status", {}).get("phase"))

    eventually(lambda: approval_phase() == "Withdrawn", timeout=60, what="the request withdrawn")
    assert e2e_ledger.executions(namespace=namespace, capability="service.restart") == []
    assert len(weakened(e2e_ledger, namespace)) == 1  # answered once

    why = subprocess.run(
        [sys.executable, "-m", "minds.cli.main", "why", f"plan/{name}", "-n", namespace],
        env={
            **os.environ,
            "KUBECONFIG": str(cluster.kubeconfig),
            "MINDS_DATABASE_URL": e2e_database_url,
        },
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert why.returncode == 0, why.stderr
    assert "supporting belief" in why.stdout

"""The mind's own cycle against the real control plane: from an unhealthy workload to a
verified restart, with nobody writing a Plan."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from typing import Any

import pytest

from minds.adapters.ledger import Ledger
from tests.e2e.executor_support import deployment, mind, set_health, wait_phase, wait_step
from tests.fixtures.cluster import Cluster
from tests.fixtures.waiting import eventually

pytestmark = pytest.mark.usefixtures("session_controller")


def plans_of(cluster: Cluster, namespace: str) -> list[dict[str, Any]]:
    items = json.loads(cluster.kubectl("get", "plans", "-n", namespace, "-o", "json").stdout)
    return list(items["items"])


def keeper(cluster: Cluster, namespace: str, **extra: Any) -> None:
    mind(
        cluster,
        namespace,
        name="keeper",
        cycleIntervalSeconds=5,
        goals=[{"name": "atlas-running", "subject": {"name": "atlas-worker"}, "priority": 0.8}],
        commitments=[
            {
                "name": "ask-first",
                "mode": "refrain",
                "capability": "service.restart",
                "target": "atlas-*",
                "unlessApproval": True,
            }
        ],
        capabilityPolicy=[
            {"capability": "service.restart", "decision": "allow"},
            {"capability": "logs.query", "decision": "deny"},
        ],
        budget={"invocations": 100},
        **extra,
    )


def test_an_unhealthy_workload_becomes_a_want_an_intention_and_a_plan(
    cluster: Cluster, namespace: str, e2e_ledger: Ledger, e2e_database_url: str
) -> None:
    deployment(cluster, namespace)
    set_health(cluster, namespace, healthy=False)
    keeper(cluster, namespace)

    [plan] = eventually(lambda: plans_of(cluster, namespace), timeout=90, what="a plan")
    name = plan["metadata"]["name"]
    assert plan["spec"]["origin"] == "template"
    assert plan["spec"]["mind"] == "keeper"
    # The commitment turns an action policy allows into one a person approves.
    waiting = wait_step(cluster, namespace, name, "P1", "awaiting_approval")
    approval = waiting["approvalRef"]
    cluster.kubectl(
        "patch",
        "approval",
        approval,
        "-n",
        namespace,
        "--type=merge",
        "-p",
        json.dumps({"spec": {"decision": "Approved", "decidedBy": "approver"}}),
        context="approver",
    )
    wait_step(cluster, namespace, name, "P1", "completed")
    set_health(cluster, namespace, healthy=True)
    wait_phase(cluster, namespace, name, "completed", timeout=120)

    intention = e2e_ledger.intention(plan["spec"]["intention"])
    assert intention is not None
    eventually(
        lambda: e2e_ledger.intention(intention.id).status.value == "fulfilled",
        what="intention fulfilled",
    )
    eventually(
        lambda: any(w.get("status") == "satisfied" for w in e2e_ledger.wants(namespace, "keeper")),
        timeout=60,
        what="the want satisfied",
    )
    kinds = {d.kind for d in e2e_ledger.decisions(namespace=namespace, mind="keeper")}
    assert {"derivation", "formation"} <= kinds

    why = subprocess.run(
        [sys.executable, "-m", "minds.cli.main", "why", f"plan/{name}", "P1", "-n", namespace],
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
    # From the action back to the observation of the goal that started it.
    lines = why.stdout.splitlines()
    assert lines[0].startswith(f"Step {name}/P1")
    assert any(line.startswith("  <- Execution") and "approval" in line for line in lines)
    assert any(line.startswith("  <- Intention") for line in lines)
    assert any("formation" in line for line in lines)
    assert any(line.startswith("  <- Want") and "derived" in line for line in lines)
    assert "goal atlas-running" in why.stdout
    assert "state degraded" in why.stdout
    status = json.loads(
        cluster.kubectl("get", "mind", "keeper", "-n", namespace, "-o", "json").stdout
    )["status"]
    assert status.get("lastCycleAt")

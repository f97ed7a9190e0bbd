"""The executor against the real control plane, Postgres and the controller process."""

from __future__ import annotations

import json

import pytest

from minds.adapters.ledger import Ledger
from tests.e2e.executor_support import (
    apply,
    deployment,
    mind,
    operator_plan,
    plan_status,
    running_check,
    set_health,
    wait_phase,
    wait_step,
    workload,
)
from tests.fixtures.cluster import Cluster
from tests.fixtures.waiting import eventually

pytestmark = pytest.mark.usefixtures("session_controller")


def restart_then_verify(namespace: str, window: int = 30) -> list[dict]:
    return [
        {
            "key": "P1",
            "title": "restart atlas-worker",
            "kind": "capability",
            "capability": "service.restart",
            "parameters": workload(namespace),
            "expectation": {
                "description": "atlas-worker runs normally after a restart",
                "check": running_check(namespace),
                "confidence": 0.8,
                "windowSeconds": window,
            },
        },
        {
            "key": "V1",
            "title": "verify atlas-worker runs",
            "kind": "verify",
            "verifies": "P1",
            "dependsOn": ["P1"],
            "intervalSeconds": 1,
        },
    ]


def test_restart_with_approval_is_verified_and_remembered(
    cluster: Cluster, namespace: str, e2e_ledger: Ledger
) -> None:
    mind(
        cluster,
        namespace,
        capabilityPolicy=[{"capability": "service.restart", "decision": "approve"}],
    )
    deployment(cluster, namespace)
    set_health(cluster, namespace, healthy=False)
    apply(cluster, operator_plan(namespace, "heal", restart_then_verify(namespace)))

    waiting = wait_step(cluster, namespace, "heal", "P1", "awaiting_approval")
    approval = waiting["approvalRef"]
    status = plan_status(cluster, namespace, "heal")
    assert status["phase"] == "awaiting_approval"
    assert approval in status["waitingOn"]
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
    wait_step(cluster, namespace, "heal", "P1", "completed")
    # The world heals only after the restart; the verify step sees it within the window.
    set_health(cluster, namespace, healthy=True)
    done = wait_phase(cluster, namespace, "heal", "completed")
    assert done["progress"] == "2/2"

    [restart] = e2e_ledger.executions(namespace=namespace, capability="service.restart")
    assert restart.authority["approval"] == approval
    [prediction] = e2e_ledger.predictions(namespace, "keeper")
    assert prediction.status.value == "confirmed"
    [memory] = eventually(
        lambda: e2e_ledger.procedures(namespace, "keeper"), what="procedural memory"
    )
    assert "service.restart" in memory.text
    assert "confirmed by observation" in memory.text
    types = {e.type for e in e2e_ledger.events(namespace=namespace)}
    assert {
        "plan_step_started",
        "policy_decision",
        "tool_requested",
        "tool_executed",
        "plan_step_completed",
        "prediction_resolved",
        "plan_completed",
    } <= types

"""A plan's assumption checked against the mind's beliefs on the real control plane: a
workload recovers while a restart waits for approval; the cycle's observation weakens the
belief the plan assumed, the plan is reconsidered on `weakened_belief`, and its Approval is
withdrawn. (The mind's own restart of a recovered workload is answered first by
`world_change`, which fulfils its intention: test_volition.py.) And a restart that does not heal
refutes its prediction, which lowers the belief in its outcome below what another waiting
restart plan assumed: that plan is reconsidered and its Approval withdrawn."""

from __future__ import annotations

from typing import Any

import pytest

from minds.adapters.ledger import Ledger
from tests.e2e.executor_support import (
    apply,
    approval_phase,
    deployment,
    operator_plan,
    restart_step,
    running_check,
    wait_phase,
    wait_step,
    why,
)
from tests.e2e.test_findings import asking_mind
from tests.e2e.test_volition import keeper
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


def belief(ledger: Ledger, namespace: str) -> float | None:
    held = {b.statement: b.confidence for b in ledger.beliefs(namespace, "keeper")}
    return held.get(f"workload {namespace}/atlas-worker is degraded")


@pytest.mark.usefixtures("world_controller")
def test_a_recovered_workload_weakens_the_plans_assumption_and_withdraws_its_approval(
    world: Cluster, world_namespace: str, e2e_ledger: Ledger, e2e_database_url: str
) -> None:
    """A person's restart plan assumes the workload is degraded and waits for approval; the
    workload comes back by other hands. The mind's observation weakens the assumption: the
    plan is reconsidered on `weakened_belief` (a person's plan is not rewritten by the mind:
    abandoned), and its Approval is withdrawn."""
    cluster, namespace = world, world_namespace
    deployment(cluster, namespace)
    rollout_status(cluster, namespace)
    keeper(cluster, namespace)
    name = "restart-atlas"
    assumed = f"workload {namespace}/atlas-worker is degraded"
    apply(
        cluster,
        operator_plan(
            namespace,
            name,
            [restart_step("P1", namespace)],
            assumptions=[{"belief": assumed, "minConfidence": 0.5}],
        ),
    )
    waiting = wait_step(cluster, namespace, name, "P1", "awaiting_approval")
    break_pods(cluster, namespace)
    eventually(lambda: (belief(e2e_ledger, namespace) or 0) > 0.9, timeout=90, what="believed")
    assert weakened(e2e_ledger, namespace) == []

    # Nobody approves; someone restarts the workload by hand and it comes back.
    cluster.kubectl("rollout", "restart", "deployment/atlas-worker", "-n", namespace)
    rollout_status(cluster, namespace)

    [decision] = eventually(lambda: weakened(e2e_ledger, namespace), timeout=90, what="weakened")
    assert decision.outcome == "abandon"
    assert decision.subjects["plan"] == name
    assert (belief(e2e_ledger, namespace) or 1) < 0.5
    eventually(
        lambda: approval_phase(cluster, namespace, waiting["approvalRef"]) == "Withdrawn",
        timeout=60,
        what="the request withdrawn",
    )
    assert e2e_ledger.executions(namespace=namespace, capability="service.restart") == []
    assert len(weakened(e2e_ledger, namespace)) == 1  # answered once

    assert "supporting belief" in why(cluster, namespace, name, e2e_database_url)


def test_a_refuted_restart_lowers_the_belief_a_waiting_plan_assumed_and_it_is_reconsidered(
    cluster: Cluster, namespace: str, e2e_ledger: Ledger, e2e_database_url: str
) -> None:
    """A person's plan `second` waits for approval to restart atlas-worker, assuming a restart
    makes it run normally (at least 0.8). Plan `first` restarts it and the workload does not
    recover: its prediction is refuted, the belief falls below 0.8, the mind's next cycle
    reviews the open plans' assumptions, and `second` is reconsidered on `weakened_belief`
    (a person's plan: abandoned) with its Approval withdrawn. atlas-worker is restarted once."""
    asking_mind(cluster, namespace, healthy=False, asks=False)
    expected = f"{namespace}/atlas-worker runs normally within 60 s of a restart"
    apply(
        cluster,
        operator_plan(
            namespace,
            "second",
            [restart_step("P1", namespace, requiresApproval=True)],
            assumptions=[{"belief": expected, "minConfidence": 0.8}],
        ),
    )
    waiting = wait_step(cluster, namespace, "second", "P1", "awaiting_approval")
    restart = restart_step(
        "P1",
        namespace,
        expectation={
            "description": expected,
            "check": running_check(namespace),
            "confidence": 0.8,
            "windowSeconds": 20,
        },
    )
    verify = {
        "key": "V1",
        "title": "verify atlas-worker runs",
        "kind": "verify",
        "verifies": "P1",
        "dependsOn": ["P1"],
        "intervalSeconds": 2,
    }
    apply(cluster, operator_plan(namespace, "first", [restart, verify]))
    wait_phase(cluster, namespace, "first", "failed", timeout=120)

    def held() -> float | None:
        found = {b.statement: b.confidence for b in e2e_ledger.beliefs(namespace, "keeper")}
        return found.get(expected)

    # The refutation lowers it (from 0.8): the ledger follows the step's status write, which
    # is what ended the plan, so it is waited for rather than read at once.
    eventually(lambda: (held() or 1.0) < 0.8, timeout=30, what="the refuted belief lowered")
    [decision] = eventually(lambda: weakened(e2e_ledger, namespace), timeout=90, what="weakened")
    assert (decision.subjects["plan"], decision.outcome) == ("second", "abandon")
    assert "below 0.8" in decision.data["reason"]
    eventually(
        lambda: approval_phase(cluster, namespace, waiting["approvalRef"]) == "Withdrawn",
        timeout=60,
        what="the request withdrawn",
    )
    wait_phase(cluster, namespace, "second", "abandoned", timeout=60)
    assert len(e2e_ledger.executions(namespace=namespace, capability="service.restart")) == 1

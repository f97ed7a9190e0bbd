"""The mind's own cycle against the real control plane: from an unhealthy workload to a
verified restart, with nobody writing a Plan (in the world, docs/world.md, nobody writing the
workload's status either)."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from minds.adapters.ledger import Ledger
from tests.e2e.executor_support import (
    deployment,
    mind,
    minds_cli,
    set_health,
    wait_phase,
    wait_step,
    why,
)
from tests.e2e.world_support import all_pods, break_pods, ready, rollout_status
from tests.fixtures.cluster import REPO, Cluster
from tests.fixtures.docs import kubeconfig_in, run_documented, sh_commands
from tests.fixtures.waiting import eventually

pytestmark = pytest.mark.usefixtures("session_controller")


def plans_of(cluster: Cluster, namespace: str) -> list[dict[str, Any]]:
    items = cluster.api.list("plans", namespace)
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


@pytest.mark.usefixtures("world_controller")
def test_an_unhealthy_workload_becomes_a_want_an_intention_and_a_plan(
    world: Cluster, world_namespace: str, e2e_ledger: Ledger, e2e_database_url: str, tmp_path: Path
) -> None:
    """The workload's Pods crash-loop; the mind notices, plans a restart, a person approves,
    and the real restart heals what the mind then observes running."""
    cluster, namespace = world, world_namespace
    deployment(cluster, namespace)
    rollout_status(cluster, namespace)
    broken = {p["metadata"]["uid"] for p in break_pods(cluster, namespace)}
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
    wait_phase(cluster, namespace, name, "completed", timeout=120)
    healed = all_pods(cluster, namespace, ready, count=1)
    assert not broken & {p["metadata"]["uid"] for p in healed}

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

    told = why(cluster, namespace, name, e2e_database_url, "P1")
    # From the action back to the observation of the goal that started it.
    if os.environ.get("MINDS_TEST_PRINT_WHY"):
        print(told)
    lines = told.splitlines()
    assert lines[0].startswith(f"Step {name}/P1")
    assert any(line.startswith("  <- Execution") and "approval" in line for line in lines)
    assert any(line.startswith("  <- Intention") for line in lines)
    assert any("formation" in line for line in lines)
    assert any(line.startswith("  <- Want") and "derived" in line for line in lines)
    assert "goal atlas-running" in told
    assert "state degraded" in told
    status = cluster.api.get("mind", "keeper", namespace)["status"]
    assert status.get("lastCycleAt")

    # Every command docs/volition.md shows, as written, against this very story.
    kubeconfig = kubeconfig_in(cluster.kubeconfig, namespace, "admin", tmp_path / "kubeconfig")
    outputs = run_documented(
        sh_commands(REPO / "docs" / "volition.md"),
        {"<plan>": name, "<approval>": approval, "<mind>": "keeper"},
        {"KUBECONFIG": str(kubeconfig), "MINDS_DATABASE_URL": e2e_database_url},
        REPO,
    )
    assert "keeper" in outputs["kubectl get minds"]
    assert outputs["kubectl minds why plan/<plan> P1"] == told
    assert outputs["kubectl minds why approval/<approval>"].startswith("Approval ")
    assert "decision:formation" in outputs["kubectl minds timeline keeper"]
    assert "forked from keeper" in outputs["kubectl minds fork keeper keeper-two"]


def test_an_inactive_mind_observes_nothing_and_does_nothing(
    cluster: Cluster, namespace: str, e2e_ledger: Ledger
) -> None:
    deployment(cluster, namespace)
    set_health(cluster, namespace, healthy=False)
    keeper(cluster, namespace, active=False)
    status = eventually(
        lambda: (
            (s := cluster.api.get("mind", "keeper", namespace).get("status", {})).get("lastCycle")
            and s
        ),
        timeout=60,
        what="a cycle ran",
    )
    assert status["lastCycle"].startswith("inactive")
    assert plans_of(cluster, namespace) == []
    assert e2e_ledger.executions(namespace=namespace) == []
    assert e2e_ledger.wants(namespace, "keeper") == []


def test_asking_a_mind_becomes_a_want(
    cluster: Cluster, namespace: str, e2e_ledger: Ledger, e2e_database_url: str
) -> None:
    deployment(cluster, namespace)
    set_health(cluster, namespace, healthy=True)
    keeper(cluster, namespace)
    asked = minds_cli(
        cluster,
        e2e_database_url,
        "ask",
        "keeper",
        "is atlas-worker keeping up with the queue?",
        "-n",
        namespace,
    )
    assert asked.returncode == 0, asked.stderr
    spec = cluster.api.get("mind", "keeper", namespace)["spec"]
    assert spec["requests"][0]["text"] == "is atlas-worker keeping up with the queue?"
    wants = eventually(
        lambda: [w for w in e2e_ledger.wants(namespace, "keeper") if w["origin"] == "request"],
        timeout=60,
        what="a want from the request",
    )
    assert "keeping up" in wants[0]["summary"]


def test_a_fork_inherits_beliefs_but_runs_none_of_the_sources_work(
    cluster: Cluster, namespace: str, e2e_ledger: Ledger, e2e_database_url: str
) -> None:
    from datetime import UTC, datetime

    from minds.domain.intentions import IntentionKind, IntentionRecord, intention_id

    deployment(cluster, namespace)
    set_health(cluster, namespace, healthy=False)
    keeper(cluster, namespace)
    # The source is at work: its plan waits for a person.
    [plan] = eventually(lambda: plans_of(cluster, namespace), timeout=90, what="a plan")
    wait_step(cluster, namespace, plan["metadata"]["name"], "P1", "awaiting_approval")
    now = datetime.now(UTC)
    e2e_ledger.upsert_belief(namespace, "keeper", "atlas-worker recovers after a restart", 0.7, now)
    e2e_ledger.form_intention(
        IntentionRecord(
            id=intention_id("test", namespace),
            namespace=namespace,
            mind="keeper",
            objective="look into atlas-worker",
            kind=IntentionKind.INVESTIGATION,
            created_at=now,
            updated_at=now,
        )
    )

    forked = minds_cli(cluster, e2e_database_url, "fork", "keeper", "keeper-two", "-n", namespace)
    assert forked.returncode == 0, forked.stderr
    # The source's beliefs, the one its cycle formed from observing the workload too.
    assert {b.statement for b in e2e_ledger.beliefs(namespace, "keeper-two")} == {
        "atlas-worker recovers after a restart",
        f"workload {namespace}/atlas-worker is degraded",
    }
    inherited = e2e_ledger.intentions(namespace=namespace, mind="keeper-two")
    assert inherited
    assert {i.status.value for i in inherited} == {"suspended"}
    # None of the source's work moved: its plan and approval stay its own.
    assert all(
        p["spec"]["mind"] == "keeper"
        for p in plans_of(cluster, namespace)
        if not p["metadata"]["name"].startswith("keeper-two")
    )
    approvals = cluster.api.list("approvals", namespace)["items"]
    assert {a["spec"]["mind"] for a in approvals} == {"keeper"}
    assert e2e_ledger.executions(namespace=namespace, mind="keeper-two") == []


@pytest.mark.usefixtures("world_controller")
def test_a_workload_that_recovers_by_itself_withdraws_the_pending_request(
    world: Cluster, world_namespace: str, e2e_ledger: Ledger
) -> None:
    cluster, namespace = world, world_namespace
    deployment(cluster, namespace)
    rollout_status(cluster, namespace)
    break_pods(cluster, namespace)
    keeper(cluster, namespace)
    [plan] = eventually(lambda: plans_of(cluster, namespace), timeout=90, what="a plan")
    waiting = wait_step(cluster, namespace, plan["metadata"]["name"], "P1", "awaiting_approval")
    # Nobody approves; the workload comes back without the mind: someone restarts it by hand.
    cluster.kubectl("rollout", "restart", "deployment/atlas-worker", "-n", namespace)
    rollout_status(cluster, namespace)

    def phase() -> str:
        obj = cluster.api.get("approval", waiting["approvalRef"], namespace)
        return str(obj.get("status", {}).get("phase"))

    eventually(lambda: phase() == "Withdrawn", timeout=60, what="the request withdrawn")
    intention = e2e_ledger.intention(plan["spec"]["intention"])
    assert intention is not None
    assert intention.status.value == "fulfilled"
    assert e2e_ledger.executions(namespace=namespace, capability="service.restart") == []
    assert e2e_ledger.decisions(namespace=namespace, kind="reconsideration")

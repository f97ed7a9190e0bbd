"""Reconsideration through the domain's rules, against the real control plane, Postgres and the
controller process: a denial replans and closes the subordinate intention, with the choice in
``volition_decisions`` and in ``kubectl minds why``; a policy change reviews an open plan; an
operator's Plan and another plan on one workload give one restart."""

from __future__ import annotations

import pytest

from minds.adapters.ledger import Ledger
from minds.domain.intentions import IntentionStatus
from tests.e2e.approval_support import decide, phase
from tests.e2e.executor_support import (
    apply,
    deployment,
    form_intention,
    intention_status,
    mind,
    operator_plan,
    plan_body,
    plan_names,
    planning_service,
    running_check,
    set_health,
    wait_phase,
    wait_step,
    why,
    workload,
)
from tests.fixtures.cluster import Cluster
from tests.fixtures.waiting import eventually

pytestmark = pytest.mark.usefixtures("session_controller", "controller_without_errors")


def asking_mind(cluster: Cluster, namespace: str, restart: str = "approve") -> None:
    """A keeper that asks before a restart and may not read logs (so an escalation asks
    nobody for access), and its workload."""
    mind(
        cluster,
        namespace,
        capabilityPolicy=[
            {"capability": "service.restart", "decision": restart},
            {"capability": "logs.query", "decision": "deny"},
        ],
    )
    deployment(cluster, namespace)


def mind_plan(cluster: Cluster, namespace: str, ledger: Ledger) -> tuple[str, str]:
    """The planner's plan for an intention to restart atlas-worker: (intention, plan)."""
    intention = form_intention(ledger, namespace)
    planned = planning_service(cluster).plan(intention)
    assert planned.plan_name is not None, planned.result.reason
    return intention.id, planned.plan_name


def verdicts(ledger: Ledger, namespace: str, intention: str) -> list[tuple[str, str]]:
    return [
        (d.data["inputs"]["trigger"], d.outcome)
        for d in ledger.decisions(
            namespace=namespace, kind="reconsideration", subject=("intention", intention)
        )
    ]


def test_a_denial_replans_closes_the_subordinate_and_shows_in_why(
    cluster: Cluster, namespace: str, e2e_ledger: Ledger, e2e_database_url: str
) -> None:
    asking_mind(cluster, namespace)
    intention, first = mind_plan(cluster, namespace, e2e_ledger)
    approval = str(wait_step(cluster, namespace, first, "P1", "awaiting_approval")["approvalRef"])
    [child] = eventually(
        lambda: e2e_ledger.intentions(parent_id=intention), what="the subordinate intention"
    )
    assert (
        decide(cluster, namespace, approval, "Denied", "approver", note="not now").returncode == 0
    )

    old = wait_phase(cluster, namespace, first, "superseded", timeout=120)
    second = next(n for n in plan_names(cluster, namespace) if n != first)
    assert old["reason"] == f"superseded by {second}"
    assert plan_body(cluster, namespace, first)["spec"]["supersededBy"] == second
    assert plan_body(cluster, namespace, second)["spec"]["supersedes"] == first
    # The new revision diagnoses and tells the operator; completing that is not doing it.
    wait_phase(cluster, namespace, second, "completed")
    assert eventually(
        lambda: len(found := verdicts(e2e_ledger, namespace, intention)) == 2 and found,
        what="both reconsiderations",
    ) == [("denied_approval", "replan"), ("goal_completion", "block")]
    closed = intention_status(e2e_ledger, child.id, IntentionStatus.ABANDONED)
    assert closed.reason is not None
    assert "approval denied" in closed.reason
    assert not e2e_ledger.executions(namespace=namespace, capability="service.restart")
    told = why(cluster, namespace, first, e2e_database_url)
    assert "reconsideration: replan" in told
    assert "approval denied" in told


def test_a_policy_that_now_denies_a_waiting_step_blocks_and_asks_nobody_any_more(
    cluster: Cluster, namespace: str, e2e_ledger: Ledger
) -> None:
    asking_mind(cluster, namespace)
    intention, plan = mind_plan(cluster, namespace, e2e_ledger)
    approval = str(wait_step(cluster, namespace, plan, "P1", "awaiting_approval")["approvalRef"])
    asking_mind(cluster, namespace, restart="deny")  # the Mind's policy changes

    wait_phase(cluster, namespace, plan, "failed", timeout=60)
    blocked = intention_status(e2e_ledger, intention, IntentionStatus.BLOCKED)
    assert blocked.reason is not None
    assert "denies" in blocked.reason or "deny" in blocked.reason
    phase(cluster, namespace, approval, "Withdrawn")
    assert verdicts(e2e_ledger, namespace, intention) == [("capability_change", "block")]
    assert plan_names(cluster, namespace) == [plan]  # no new revision asks again


def test_an_operators_plan_and_another_on_one_workload_give_one_restart(
    cluster: Cluster, namespace: str, e2e_ledger: Ledger
) -> None:
    asking_mind(cluster, namespace, restart="allow")
    restart = {
        "key": "P1",
        "title": "restart atlas-worker",
        "kind": "capability",
        "capability": "service.restart",
        "parameters": workload(namespace),
    }
    expected = {
        "description": "atlas-worker runs normally after a restart",
        "check": running_check(namespace),
        "confidence": 0.8,
        "windowSeconds": 60,
    }
    verify = {
        "key": "V1",
        "title": "verify atlas-worker runs",
        "kind": "verify",
        "verifies": "P1",
        "dependsOn": ["P1"],
        "intervalSeconds": 1,
    }
    apply(cluster, operator_plan(namespace, "first", [restart | {"expectation": expected}, verify]))
    wait_step(cluster, namespace, "first", "P1", "completed")
    set_health(cluster, namespace, healthy=True)  # the restart rolled out (nothing else does)
    wait_phase(cluster, namespace, "first", "completed")
    apply(cluster, operator_plan(namespace, "second", [restart]))
    covered = wait_step(cluster, namespace, "second", "P1", "skipped")
    assert covered["reason"].startswith("covered: service.restart on")
    assert "by plan first" in covered["reason"]
    wait_phase(cluster, namespace, "second", "completed")
    assert len(e2e_ledger.executions(namespace=namespace, capability="service.restart")) == 1


def test_an_approved_restart_the_workload_no_longer_needs_is_not_run_and_the_approval_ends(
    cluster: Cluster, namespace: str, e2e_ledger: Ledger
) -> None:
    """The re-check at execution: the workload recovered while the request waited for a
    person, so the approved restart is not run and the Approval does not stay Approved."""
    asking_mind(cluster, namespace)
    set_health(cluster, namespace, healthy=False)
    guarded = {
        "key": "P1",
        "title": "restart atlas-worker while it is not running",
        "kind": "capability",
        "capability": "service.restart",
        "parameters": workload(namespace),
        "precondition": {
            "description": "atlas-worker is not running",
            "check": {**running_check(namespace), "comparison": "not_equals"},
        },
    }
    apply(cluster, operator_plan(namespace, "guarded", [guarded]))
    approval = str(
        wait_step(cluster, namespace, "guarded", "P1", "awaiting_approval")["approvalRef"]
    )
    set_health(cluster, namespace, healthy=True)  # it recovered meanwhile
    assert decide(cluster, namespace, approval, "Approved", "approver").returncode == 0

    skipped = wait_step(cluster, namespace, "guarded", "P1", "skipped")
    assert "precondition does not hold" in skipped["reason"]
    ended = phase(cluster, namespace, approval, "Withdrawn")
    assert "not executed" in ended["status"]["message"]
    assert not e2e_ledger.executions(namespace=namespace, capability="service.restart")

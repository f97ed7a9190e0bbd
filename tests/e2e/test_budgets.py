"""Budgets against the real control plane, Postgres and the controller: checks counted apart
from invocations, the approvals cap judged by policy, money priced by the platform team's
configuration, and an exhausted budget told in one format wherever a person or the ledger looks
(docs/planning.md#budgets)."""

from __future__ import annotations

from typing import Any

import pytest

from minds.adapters.ledger import Ledger
from minds.controller.settings import PRICES_ENV
from minds.domain.intentions import IntentionStatus
from tests.e2e.executor_support import (
    apply,
    assert_no_tracebacks,
    deployment,
    intention_of,
    intention_status,
    mind,
    minds_cli,
    operator_plan,
    read_step,
    restart_step,
    running_check,
    set_health,
    steps_of,
    wait_phase,
)
from tests.fixtures.cluster import Cluster, ControllerFactory
from tests.fixtures.waiting import eventually

pytestmark = [
    pytest.mark.minutes(2),
    pytest.mark.usefixtures("session_controller", "controller_without_errors"),
]


def monitor(key: str, namespace: str, *depends_on: str, stable: int) -> dict[str, Any]:
    return {
        "key": key,
        "title": "monitor until atlas-worker is stable",
        "kind": "monitor",
        "check": running_check(namespace),
        "stableSeconds": stable,
        "deadlineSeconds": 600,
        "intervalSeconds": 1,
        "dependsOn": list(depends_on),
    }


def show(cluster: Cluster, namespace: str, plan: str) -> dict[str, list[str]]:
    """The budget rows ``minds plan show`` prints: kind -> used, cap, estimate."""
    shown = minds_cli(cluster, None, "plan", "show", plan, "-n", namespace)
    assert shown.returncode == 0, shown.stderr
    lines = shown.stdout.splitlines()
    at = next(
        i for i, line in enumerate(lines) if line.split() == ["budget", "used", "cap", "estimate"]
    )
    rows = {}
    for line in lines[at + 1 : at + 6]:
        words = line.split()
        rows[" ".join(words[:-3])] = words[-3:]
    return rows


def test_monitor_polls_are_checks_so_a_one_invocation_plan_monitors_to_completion(
    cluster: Cluster, namespace: str
) -> None:
    mind(cluster, namespace)
    deployment(cluster, namespace)
    set_health(cluster, namespace, True)
    steps = [read_step("R1", namespace), monitor("M1", namespace, "R1", stable=4)]
    # Asking for more checks than the Mind allows gets the Mind's 200, not 10000.
    budget = {"invocations": 1, "checks": 10000}
    apply(cluster, operator_plan(namespace, "watchful", steps, budget=budget))

    done = wait_phase(cluster, namespace, "watchful", "completed", "blocked", timeout=120)
    assert done["budget"]["checks"] == 200
    assert steps_of(done) == {"R1": "completed", "M1": "completed"}, done
    # Counted as invocations, the second look would have blocked the plan.
    assert done["actual"]["invocations"] == 1
    assert done["actual"]["checks"] >= 3
    assert show(cluster, namespace, "watchful")["invocations"][:2] == ["1", "1"]


def test_an_exhausted_check_budget_blocks_with_one_reason_wherever_one_looks(
    cluster: Cluster, namespace: str, e2e_ledger: Ledger
) -> None:
    mind(cluster, namespace)
    deployment(cluster, namespace)
    set_health(cluster, namespace, True)
    # Stable for five minutes, looked at every second: three looks and the budget is spent.
    steps = [monitor("M1", namespace, stable=300)]
    apply(cluster, operator_plan(namespace, "watchful", steps, budget={"checks": 3}))

    reason = "budget exhausted: 3 of 3 checks used"
    blocked = wait_phase(cluster, namespace, "watchful", "blocked", timeout=120)
    assert blocked["actual"]["checks"] == 3
    assert blocked["actual"]["invocations"] == 0
    assert blocked["waitingOn"] == f"M1: blocked ({reason})"
    assert f"M1: blocked ({reason})" in cluster.kubectl("get", "plans", "-n", namespace).stdout
    eventually(
        lambda: reason in cluster.kubectl("describe", "plan", "watchful", "-n", namespace).stdout,
        what="the blocked step's Event in kubectl describe",
    )
    assert show(cluster, namespace, "watchful")["checks"][:2] == ["3", "3"]
    rows = eventually(
        lambda: e2e_ledger.events(namespace=namespace, type="plan_step_blocked"),
        what="plan_step_blocked in the ledger",
    )
    assert [r.payload["reason"] for r in rows] == [reason]


def test_the_approvals_cap_counts_a_step_policy_sends_for_approval(
    cluster: Cluster, namespace: str
) -> None:
    # No rule for service.restart: policy's default for a writing capability is to ask.
    mind(cluster, namespace)
    deployment(cluster, namespace)
    steps = [read_step("R1", namespace), restart_step("P1", namespace, "R1")]
    apply(cluster, operator_plan(namespace, "asking", steps, budget={"approvals": 0}))

    blocked = wait_phase(cluster, namespace, "asking", "blocked", timeout=120)
    assert steps_of(blocked) == {"R1": "completed", "P1": "blocked"}
    assert blocked["waitingOn"] == "P1: blocked (budget exhausted: 0 of 0 approvals used)"
    assert blocked["actual"]["approvals"] == 0
    approvals = cluster.kubectl("get", "approvals", "-n", namespace, "-o", "name").stdout
    assert approvals.strip() == ""


@pytest.mark.parametrize(
    ("prices", "line"),
    [
        ('{"service.restat": 1}', "capabilities.prices.service.restat: no such capability"),
        ('{"service.restart": -2.5}', "capabilities.prices.service.restart: -2.5 is not a price"),
    ],
)
def test_a_controller_given_a_bad_price_does_not_start_and_says_which(
    controller_factory: ControllerFactory, prices: str, line: str
) -> None:
    handle = controller_factory("mispriced", extra_env={PRICES_ENV: prices}, wait=False)
    eventually(lambda: not handle.alive(), what="the mispriced controller refused to start")
    [said] = [row for row in handle.log().splitlines() if PRICES_ENV in row]
    assert said.startswith(f"error: {PRICES_ENV}: {line}")


@pytest.mark.usefixtures("alone")
def test_a_money_cap_below_two_priced_restarts_lets_the_first_act_and_blocks_the_second(
    cluster: Cluster, namespace: str, e2e_ledger: Ledger, controller_factory: ControllerFactory
) -> None:
    """The platform team prices a restart at 2.5 (the chart's capabilities.prices); a plan
    may spend 4: the first restart acts, the second would pass the cap and blocks."""
    controller = controller_factory("priced", extra_env={PRICES_ENV: '{"service.restart": 2.5}'})
    assert "capability prices: {'service.restart': 2.5}" in controller.log()
    mind(
        cluster,
        namespace,
        capabilityPolicy=[{"capability": "service.restart", "decision": "allow"}],
    )
    deployment(cluster, namespace)
    steps = [restart_step("P1", namespace), restart_step("P2", namespace, "P1")]
    apply(cluster, operator_plan(namespace, "thrifty", steps, budget={"money": 4}))

    reason = "budget exhausted: 2.5 of 4 money used"
    blocked = wait_phase(cluster, namespace, "thrifty", "blocked", timeout=120)
    assert steps_of(blocked) == {"P1": "completed", "P2": "blocked"}, blocked
    assert blocked["actual"]["money"] == 2.5
    assert blocked["waitingOn"] == f"P2: blocked ({reason})"
    restarts = e2e_ledger.executions(namespace=namespace, capability="service.restart")
    assert [r.origin.step for r in restarts] == ["P1"]
    eventually(
        lambda: reason in cluster.kubectl("describe", "plan", "thrifty", "-n", namespace).stdout,
        what="the blocked step's Event in kubectl describe",
    )
    assert show(cluster, namespace, "thrifty")["money"] == ["2.5", "4", "5"]
    rows = eventually(
        lambda: e2e_ledger.events(namespace=namespace, type="plan_step_blocked"),
        what="plan_step_blocked in the ledger",
    )
    assert [(r.payload["step"], r.payload["reason"]) for r in rows] == [("P2", reason)]
    intention = intention_of(e2e_ledger, cluster, namespace, "thrifty")
    suspended = intention_status(e2e_ledger, intention.id, IntentionStatus.SUSPENDED)
    assert suspended.reason is not None
    assert reason in suspended.reason
    assert_no_tracebacks(controller.log())

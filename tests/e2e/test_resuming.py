"""A waiting intention resumes by rule, against the real control plane, Postgres and the
controller: a plan blocked by its budget goes on when a person raises the Mind's budget with
``kubectl patch mind``; an intention blocked by a policy that denied its step resumes with a new
revision when the policy allows it again. Each resumption is a ``volition_decisions`` row that
``kubectl minds why`` shows (docs/volition.md#waiting-and-resuming)."""

from __future__ import annotations

import json
import shlex
from datetime import UTC, datetime

import pytest

from minds.adapters.ledger import Ledger
from minds.devenv.install import repo_root
from minds.domain.intentions import IntentionStatus
from tests.e2e.executor_support import (
    apply,
    deployment,
    intention_of,
    intention_status,
    kube_events,
    mind,
    operator_plan,
    plan_body,
    plan_names,
    set_health,
    steps_of,
    wait_phase,
    wait_step,
)
from tests.e2e.test_budgets import monitor
from tests.e2e.test_reconsider_executor import asking_mind, mind_plan, verdicts, why
from tests.fixtures.cluster import Cluster, ControllerFactory
from tests.fixtures.docs import sh_commands
from tests.fixtures.waiting import eventually

pytestmark = pytest.mark.usefixtures("session_controller", "controller_without_errors")

DOC = repo_root() / "docs" / "volition.md"


def needs_attention(cluster: Cluster, namespace: str) -> dict[str, str]:
    body = cluster.api.get("mind", "keeper", namespace)
    found = [
        c
        for c in (body.get("status") or {}).get("conditions") or []
        if c["type"] == "NeedsAttention"
    ]
    return found[0] if found else {}


def test_a_budget_suspended_intention_resumes_when_the_mind_budget_is_raised(
    cluster: Cluster, namespace: str, e2e_ledger: Ledger, e2e_database_url: str
) -> None:
    # A cycle an hour: what the Mind says between cycles is the executor's to say.
    mind(cluster, namespace, budget={"checks": 2}, cycleIntervalSeconds=3600)
    deployment(cluster, namespace)
    set_health(cluster, namespace, True)
    # The plan asks for 50 checks; its Mind allows 2: the Mind's budget is what blocks it. The
    # step needs more than two checks (a second apart) to hold for 20 s, however slow the run.
    steps = [monitor("M1", namespace, stable=20)]
    apply(cluster, operator_plan(namespace, "watchful", steps, budget={"checks": 50}))

    reason = "budget exhausted: 2 of 2 checks used"
    blocked = wait_phase(cluster, namespace, "watchful", "blocked", timeout=120)
    assert blocked["waitingOn"] == f"M1: blocked ({reason})"
    intention = intention_of(e2e_ledger, cluster, namespace, "watchful")
    intention_status(e2e_ledger, intention.id, IntentionStatus.SUSPENDED)
    # The Mind says so without waiting for its next cycle, an hour away.
    eventually(
        lambda: needs_attention(cluster, namespace).get("reason") == "BlockedStep",
        what="NeedsAttention naming the blocked step",
    )

    # As docs/volition.md shows it, for this Mind.
    [command] = sh_commands(DOC, section="Waiting and resuming")
    cluster.kubectl(*shlex.split(command.replace("<mind>", "keeper"))[1:], "-n", namespace)

    done = wait_phase(cluster, namespace, "watchful", "completed", timeout=120)
    assert steps_of(done) == {"M1": "completed"}
    assert done["budget"]["checks"] == 50
    assert done["actual"]["checks"] > 2  # it went on from where it stopped
    intention_status(e2e_ledger, intention.id, IntentionStatus.FULFILLED)

    def said() -> list[tuple[str, str]] | None:
        rows = e2e_ledger.decisions(
            namespace=namespace, kind="reconsideration", subject=("intention", intention.id)
        )
        seen = [(str(r.data["inputs"]["trigger"]), r.outcome) for r in rows]
        return seen if ("goal_completion", "fulfil") in seen else None

    assert eventually(said, what="the intention's reconsiderations") == [
        ("budget", "suspend"),
        ("budget", "resume"),
        ("goal_completion", "fulfil"),
    ]
    told = why(cluster, namespace, "watchful", e2e_database_url)
    assert "reconsideration: resume" in told
    assert "the budget allows the plan again" in told
    eventually(
        lambda: "Resumed" in kube_events(cluster, namespace, "watchful"),
        what="the plan's Resumed Event",
    )
    eventually(
        lambda: needs_attention(cluster, namespace).get("status") == "False",
        what="NeedsAttention cleared once the plan went on",
    )


@pytest.mark.usefixtures("alone")
def test_a_budget_resumption_a_crash_cut_short_is_finished_by_the_next_controller(
    cluster: Cluster, namespace: str, e2e_ledger: Ledger, controller_factory: ControllerFactory
) -> None:
    """The controller stops (SIGKILL, its failpoint) after the resumed plan was written and
    before its intention moved: the next controller's start moves the intention to active,
    without a second decision, and the plan ends as if nothing had happened."""
    mind(cluster, namespace, budget={"checks": 2}, cycleIntervalSeconds=3600)
    deployment(cluster, namespace)
    set_health(cluster, namespace, True)
    crashing = controller_factory(
        "resume-crash", extra_env={"MINDS_FAILPOINTS": "after-budget-resume"}
    )
    # As above: two checks run out before the step holds for 20 s.
    steps = [monitor("M1", namespace, stable=20)]
    apply(cluster, operator_plan(namespace, "watchful", steps, budget={"checks": 50}))
    wait_phase(cluster, namespace, "watchful", "blocked", timeout=120)
    intention = intention_of(e2e_ledger, cluster, namespace, "watchful")
    intention_status(e2e_ledger, intention.id, IntentionStatus.SUSPENDED)

    patch = {"spec": {"budget": {"checks": 50}}}
    cluster.kubectl(
        "patch", "mind", "keeper", "-n", namespace, "--type=merge", "-p", json.dumps(patch)
    )
    eventually(lambda: not crashing.alive(), timeout=60, what="the controller stopped")
    assert plan_body(cluster, namespace, "watchful")["status"]["phase"] == "executing"
    found = e2e_ledger.intention(intention.id)
    assert found is not None
    assert found.status is IntentionStatus.SUSPENDED

    controller_factory("after")
    wait_phase(cluster, namespace, "watchful", "completed", timeout=120)
    intention_status(e2e_ledger, intention.id, IntentionStatus.FULFILLED)
    moved = e2e_ledger.events(namespace=namespace, type="intention_active")
    assert [e.payload["reason"] for e in moved if e.payload.get("plan") == "watchful"] == [
        "resumed: its plan runs again"
    ]
    rows = e2e_ledger.decisions(
        namespace=namespace, kind="reconsideration", subject=("intention", intention.id)
    )
    assert [(r.data["inputs"]["trigger"], r.outcome) for r in rows] == [
        ("budget", "suspend"),
        ("budget", "resume"),
        ("goal_completion", "fulfil"),
    ]


def test_a_capability_blocked_intention_resumes_with_a_new_revision_when_policy_allows_it(
    cluster: Cluster, namespace: str, e2e_ledger: Ledger
) -> None:
    asking_mind(cluster, namespace)
    intention, plan = mind_plan(cluster, namespace, e2e_ledger)
    e2e_ledger.update_intention(intention, plan=plan, at=datetime.now(UTC))  # as the cycle does
    wait_step(cluster, namespace, plan, "P1", "awaiting_approval")
    asking_mind(cluster, namespace, restart="deny")
    wait_phase(cluster, namespace, plan, "failed", timeout=60)
    intention_status(e2e_ledger, intention, IntentionStatus.BLOCKED)

    asking_mind(cluster, namespace, restart="approve")  # the policy allows it again

    def successor() -> str | None:
        found = e2e_ledger.intention(intention)
        return found.plan if found is not None and found.plan != plan else None

    new = eventually(successor, timeout=60, what="a new revision for the resumed intention")
    assert plan_body(cluster, namespace, new)["spec"]["supersedes"] == plan
    assert verdicts(e2e_ledger, namespace, intention) == [
        ("capability_change", "block"),
        ("capability_change", "resume"),
    ]
    # The new revision asks, as the policy now says; the old Approval stays withdrawn.
    asked = wait_step(cluster, namespace, new, "P1", "awaiting_approval", timeout=90)
    assert asked["approvalRef"]
    assert plan_names(cluster, namespace) == sorted([plan, new])

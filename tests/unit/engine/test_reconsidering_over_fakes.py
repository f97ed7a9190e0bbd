"""The executor's answers to triggers, over the fakes of its ports with a clock the test moves:
every answer is the domain's ``reconsider()``, recorded in ``volition_decisions`` once, and
applied once. The e2e tests (tests/e2e/test_reconsider_*.py) prove the wiring on real
components."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from minds.domain.base import Model
from minds.domain.capabilities.registry import REGISTRY
from minds.domain.capabilities.results import DriverResult
from minds.domain.intentions import IntentionKind, IntentionRecord, IntentionStatus
from minds.domain.resources.kinds import APPROVAL, MIND, PLAN
from minds.engine.plan_service import PlanService
from minds.engine.planning_service import PlanningService
from minds.engine.why import Explainer
from tests.unit.engine.harness import NAMESPACE, WORKLOAD, FakeDriver, World

DAY = timedelta(hours=24)
INTENTION = "int-atlas"


@dataclass
class Scripted(FakeDriver):
    """The world as a test sets it: a workload that stays broken (``healthy`` False, whatever a
    restart does) until the test says otherwise, and restarts the API refuses (``refuse``)."""

    healthy: bool = True
    refuse: bool = False

    def invoke(
        self,
        capability_name: str,
        parameters: Model,
        *,
        mind_allowed_hosts: Any = (),
        dry_run: bool = False,
    ) -> DriverResult:
        if capability_name == "service.status" and not self.healthy:
            self.calls[capability_name] += 1
            return DriverResult.success(
                "atlas-worker is crash-looping", fields={"state": "degraded"}
            )
        if capability_name == "service.restart" and self.refuse:
            self.calls[capability_name] += 1
            return DriverResult.failure(
                'deployments.apps "atlas-worker" not found', retryable=False
            )
        return super().invoke(capability_name, parameters)


def mind_spec(world: World) -> dict[str, Any]:
    return world.resources._objects[(MIND.plural, NAMESPACE, "keeper")]["spec"]


def minded(
    policy: str = "approve", driver: FakeDriver | None = None, budget: dict[str, Any] | None = None
) -> tuple[World, str]:
    """A keeper that intends to bring atlas-worker back, with the plan its planner made (under
    the Mind's ``budget``, when given)."""
    world = World(driver=driver or FakeDriver())
    spec = mind_spec(world)
    if budget is not None:
        spec["budget"] = budget
    spec["capabilityPolicy"] = [
        {"capability": "service.restart", "decision": policy},
        {"capability": "service.status", "decision": "allow"},
        {"capability": "logs.query", "decision": "allow"},
    ]
    spec["approvers"] = {"groups": ["sre"]}
    now = world.clock.now
    intention = IntentionRecord(
        id=INTENTION,
        namespace=NAMESPACE,
        mind="keeper",
        objective="bring atlas-worker back to running normally",
        kind=IntentionKind.ACTION,
        subject=f"{NAMESPACE}/atlas-worker",
        means_capability="service.restart",
        means_parameters=WORKLOAD,
        created_at=now,
        updated_at=now,
    )
    world.ledger.form_intention(intention)
    planned = PlanningService(resources=world.resources, clock=world.clock, registry=REGISTRY).plan(
        intention
    )
    assert planned.plan_name is not None
    world.ledger.update_intention(INTENTION, plan=planned.plan_name, at=now)
    admit(world, planned.plan_name)
    return world, planned.plan_name


def admit(world: World, name: str) -> None:
    service = PlanService(
        resources=world.resources,
        ledger=world.ledger,
        events=world.events,
        clock=world.clock,
        registry=REGISTRY,
    )
    assert service.admit(NAMESPACE, name).result.ok


def asked(world: World, plan: str) -> str:
    world.run(world.executor("a"), plan, until=lambda: "approvalRef" in world.step(plan, "P1"))
    return str(world.step(plan, "P1")["approvalRef"])


def decide(world: World, name: str, decision: str) -> None:
    stored = world.resources._objects[(APPROVAL.plural, NAMESPACE, name)]
    stored["spec"] |= {"decision": decision, "decidedBy": "alice"}


def phase(world: World, plan: str) -> str:
    return str(world.resources.get(PLAN, NAMESPACE, plan)["status"]["phase"])


def intention(world: World, key: str = INTENTION) -> IntentionRecord:
    found = world.ledger.intention(key)
    assert found is not None
    return found


def verdicts(world: World) -> list[tuple[str, str]]:
    """(trigger, verdict) of every reconsideration recorded about the intention, in order."""
    return [
        (d.data["inputs"]["trigger"], d.outcome)
        for d in world.ledger.decisions(
            namespace=NAMESPACE, kind="reconsideration", subject=("intention", INTENTION)
        )
    ]


def subordinates(world: World) -> list[IntentionRecord]:
    return world.ledger.intentions(parent_id=INTENTION)


def plans(world: World) -> list[str]:
    return sorted(p["metadata"]["name"] for p in world.resources.list(PLAN, NAMESPACE))


def settle_for(world: World, plan: str, ticks: int = 20, step: timedelta = DAY) -> None:
    """Keep looking at the plan for a while, as the controller's daemons would."""
    executor = world.executor("a")
    for _ in range(ticks):
        world.clock.now += step
        executor.tick(NAMESPACE, plan)


def test_a_denial_replans_and_closes_the_subordinate_intention() -> None:
    world, plan = minded()
    approval = asked(world, plan)
    [child] = subordinates(world)
    assert child.status is IntentionStatus.ACTIVE
    decide(world, approval, "Denied")
    world.run(world.executor("a"), plan, until=lambda: phase(world, plan) == "superseded")
    assert verdicts(world) == [("denied_approval", "replan")]
    assert intention(world).status is IntentionStatus.ACTIVE
    assert intention(world).replans == 1
    successor = intention(world).plan
    assert successor != plan
    old = world.resources.get(PLAN, NAMESPACE, plan)
    assert old["spec"]["supersededBy"] == successor
    assert world.resources.get(PLAN, NAMESPACE, successor)["spec"]["supersedes"] == plan
    [child] = subordinates(world)
    assert child.status is IntentionStatus.ABANDONED
    decision = world.ledger.decisions(namespace=NAMESPACE, kind="reconsideration")[0]
    assert decision.subjects == {"intention": INTENTION, "plan": plan}
    assert world.driver.calls["service.restart"] == 0


def test_an_expired_approval_blocks_and_nobody_is_asked_again() -> None:
    world, plan = minded()
    asked(world, plan)
    world.clock.now += DAY + timedelta(seconds=1)
    world.executor("a").tick(NAMESPACE, plan)
    assert phase(world, plan) == "failed"
    assert verdicts(world) == [("expired_approval", "block")]
    assert intention(world).status is IntentionStatus.BLOCKED
    assert [c.status for c in subordinates(world)] == [IntentionStatus.ABANDONED]
    settle_for(world, plan)
    assert plans(world) == [plan]  # no new revision
    assert len(world.resources.list(APPROVAL, NAMESPACE)) == 1  # asked once, never again
    assert verdicts(world) == [("expired_approval", "block")]


def test_a_withdrawn_approval_blocks_like_an_expired_one() -> None:
    world, plan = minded()
    approval = asked(world, plan)
    mind_spec(world)["approvers"] = {"groups": ["another-team"]}
    decide(world, approval, "Approved")
    world.executor("a").tick(NAMESPACE, plan)
    assert verdicts(world) == [("expired_approval", "block")]
    assert intention(world).status is IntentionStatus.BLOCKED
    assert world.driver.calls["service.restart"] == 0


def test_a_verdict_is_applied_once_so_a_person_who_resumes_is_not_overruled() -> None:
    world, plan = minded()
    asked(world, plan)
    world.clock.now += DAY + timedelta(seconds=1)
    world.executor("a").tick(NAMESPACE, plan)
    assert intention(world).status is IntentionStatus.BLOCKED
    world.ledger.transition_intention(
        INTENTION, IntentionStatus.ACTIVE, "resumed by alice", world.clock.now
    )
    settle_for(world, plan, ticks=5)
    assert intention(world).status is IntentionStatus.ACTIVE
    assert len(world.ledger.decisions(namespace=NAMESPACE, kind="reconsideration")) == 1


def test_a_refuted_restart_replans_into_one_escalation_and_never_a_second_restart() -> None:
    world, plan = minded(policy="allow", driver=Scripted(healthy=False))
    world.run(world.executor("a"), plan, until=lambda: phase(world, plan) == "superseded")
    assert verdicts(world) == [("failed_expectation", "replan")]
    successor = intention(world).plan
    assert successor is not None
    assert successor != plan
    admit(world, successor)
    world.run(world.executor("a"), successor, until=lambda: phase(world, successor) == "completed")
    assert verdicts(world) == [("failed_expectation", "replan"), ("goal_completion", "block")]
    assert intention(world).status is IntentionStatus.BLOCKED
    for name in (plan, successor):
        settle_for(world, name)
    assert world.driver.calls["service.restart"] == 1
    assert len(verdicts(world)) == 2


def test_a_plan_that_completes_fulfils_its_intention_through_the_domain() -> None:
    world, plan = minded(policy="allow")
    world.run(world.executor("a"), plan, until=lambda: phase(world, plan) == "completed")
    assert verdicts(world) == [("goal_completion", "fulfil")]
    assert intention(world).status is IntentionStatus.FULFILLED


def test_an_exhausted_budget_suspends_through_the_domain() -> None:
    world, plan = minded(policy="allow", driver=Scripted(healthy=False))
    body = world.resources._objects[(PLAN.plural, NAMESPACE, plan)]
    body["status"]["budget"] = {"wallSeconds": 5}
    world.run(world.executor("a"), plan, until=lambda: world.steps(plan)["V1"] == "blocked")
    assert verdicts(world) == [("budget", "suspend")]
    assert intention(world).status is IntentionStatus.SUSPENDED
    assert world.driver.calls["service.restart"] == 1


def failed_steps(world: World, plan: str) -> set[str]:
    return {key for key, status in world.steps(plan).items() if status == "failed"}


def test_a_persons_failed_plan_is_abandoned_not_replanned() -> None:
    world = World(driver=Scripted(refuse=True))
    world.plan(
        "heal",
        [
            {
                "key": "P1",
                "title": "restart a workload that is not there",
                "kind": "capability",
                "capability": "service.restart",
                "parameters": WORKLOAD,
            }
        ],
    )
    world.run(world.executor("a"), "heal", until=lambda: "P1" in failed_steps(world, "heal"))
    assert world.ledger.intentions(namespace=NAMESPACE)[0].status is IntentionStatus.ABANDONED
    [decision] = world.ledger.decisions(namespace=NAMESPACE, kind="reconsideration")
    assert decision.outcome == "abandon"
    assert "a person wrote this plan" in decision.data["reason"]
    assert plans(world) == ["heal"]
    assert phase(world, "heal") == "failed"  # it failed, and stays failed


def guarded_restart(world: World) -> str:
    """An operator's restart that asks a person and first looks whether it is still needed."""
    spec = mind_spec(world)
    spec["capabilityPolicy"] = [
        {"capability": "service.restart", "decision": "approve"},
        {"capability": "service.status", "decision": "allow"},
    ]
    spec["approvers"] = {"groups": ["sre"]}
    step = {
        "key": "P1",
        "title": "restart atlas-worker",
        "kind": "capability",
        "capability": "service.restart",
        "parameters": WORKLOAD,
        "precondition": {
            "description": "atlas-worker is not running",
            "check": {
                "capability": "service.status",
                "parameters": WORKLOAD,
                "field": "state",
                "comparison": "not_equals",
                "value": "running",
            },
            "fulfilsIntentionOnSkip": True,
        },
    }
    world.plan("heal", [step])
    return asked(world, "heal")


def approval_types(world: World, name: str) -> set[str]:
    uid = world.resources.get(APPROVAL, NAMESPACE, name)["metadata"]["uid"]
    return {e.type for e in world.ledger.events(subject_uid=uid)}


def test_an_approved_action_the_world_no_longer_needs_is_not_executed_and_says_why() -> None:
    driver = Scripted(healthy=False)
    world = World(driver=driver)
    approval = guarded_restart(world)
    driver.healthy = True  # it recovered while the request waited for a person
    decide(world, approval, "Approved")
    world.executor("a").tick(NAMESPACE, "heal")
    assert world.steps("heal") == {"P1": "skipped"}
    assert world.driver.calls["service.restart"] == 0
    assert "approval_not_executed" in approval_types(world, approval)
    status = world.resources.get(APPROVAL, NAMESPACE, approval)["status"]
    assert status["phase"] != "Approved"
    assert "precondition does not hold" in status["message"]
    [implicit] = [i for i in world.ledger.intentions(namespace=NAMESPACE) if i.parent_id is None]
    assert implicit.status is IntentionStatus.FULFILLED
    assert all(c.status.final for c in world.ledger.intentions(parent_id=implicit.id))


def test_an_approved_action_still_needed_runs_once_after_the_recheck() -> None:
    world = World(driver=Scripted(healthy=False))
    approval = guarded_restart(world)
    decide(world, approval, "Approved")
    world.executor("a").tick(NAMESPACE, "heal")
    assert world.steps("heal") == {"P1": "completed"}
    assert world.driver.calls["service.restart"] == 1
    assert world.resources.get(APPROVAL, NAMESPACE, approval)["status"]["phase"] == "Executed"


def test_why_on_the_replaced_plan_shows_the_reconsideration() -> None:
    world, plan = minded()
    decide(world, asked(world, plan), "Denied")
    world.run(world.executor("a"), plan, until=lambda: phase(world, plan) == "superseded")
    links = Explainer(resources=world.resources, ledger=world.ledger).why(NAMESPACE, "plan", plan)
    said = [link.summary for link in links if link.kind == "Decision"]
    assert any(s.startswith("reconsideration: replan") and "approval denied" in s for s in said)

"""Waiting intentions resume by rule, run by the real executor's review over the fakes and a
fake clock: one test per row of the table in ``minds.domain.volition.resumption`` that the
review acts on or must leave alone, and simulated days that count resumptions (no loop)."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest

from minds.domain.capabilities.registry import REGISTRY
from minds.domain.intentions import IntentionRecord, IntentionStatus
from minds.domain.resources.kinds import APPROVAL, MIND, PLAN
from minds.domain.volition.lapse import lapse
from minds.domain.volition.reconsideration import MAX_REPLANS
from minds.engine.fork_service import ForkService
from minds.engine.planning_service import PlanningService
from minds.engine.resuming import plan_resumed
from minds.engine.why import Explainer
from tests.fakes.ledger import FakeLedger
from tests.unit.engine.harness import NAMESPACE, WORKLOAD, World, restart
from tests.unit.engine.test_budgets_over_fakes import drive, monitor
from tests.unit.engine.test_reconsidering_over_fakes import (
    DAY,
    INTENTION,
    Scripted,
    admit,
    asked,
    intention,
    mind_spec,
    minded,
    phase,
    plans,
    verdicts,
)
from tests.unit.volition.builders import an_intention

CHECKS_USED = "budget exhausted: {0} of {0} checks used"


def review(world: World) -> int:
    return world.executor("a").review(NAMESPACE, "keeper")


def stored_mind(world: World) -> dict[str, Any]:
    return world.resources._objects[(MIND.plural, NAMESPACE, "keeper")]


def plan_status(world: World, name: str) -> dict[str, Any]:
    return dict(world.resources.get(PLAN, NAMESPACE, name).get("status") or {})


def implicit(world: World, name: str) -> str:
    """The intention an operator's plan serves (formed by the executor)."""
    [found] = [i for i in world.ledger.intentions(namespace=NAMESPACE) if i.plan == name]
    return found.id


def said(world: World, intention_id: str) -> list[tuple[str, str]]:
    return [
        (d.data["inputs"]["trigger"], d.outcome)
        for d in world.ledger.decisions(
            namespace=NAMESPACE, kind="reconsideration", subject=("intention", intention_id)
        )
    ]


def watching(world: World, *, mind_checks: int, plan_checks: int = 10000) -> str:
    """An operator's plan that monitors atlas-worker for a day, blocked by the Mind's checks."""
    stored_mind(world)["spec"]["budget"] = {"checks": mind_checks}
    week = 7 * 24 * 3600
    watch = monitor("M1", stable=week, deadline=week) | {"intervalSeconds": 600}
    world.plan("watch", [watch], budget={"checks": plan_checks})
    drive(world, "watch")
    return implicit(world, "watch")


# --- budget: the blocked plan continues ---------------------------------------------------------


def test_a_raised_budget_resumes_the_suspended_intention_and_its_plan_goes_on() -> None:
    world = World()
    suspended = watching(world, mind_checks=3)
    assert world.step("watch", "M1")["reason"] == CHECKS_USED.format(3)
    assert world.ledger.intention(suspended).status is IntentionStatus.SUSPENDED
    assert review(world) == 0  # nothing changed: nothing resumes

    stored_mind(world)["spec"]["budget"] = {"checks": 6}
    assert review(world) == 1
    assert said(world, suspended) == [("budget", "suspend"), ("budget", "resume")]
    assert world.ledger.intention(suspended).status is IntentionStatus.ACTIVE
    resumed = plan_status(world, "watch")
    assert resumed["phase"] == "executing"
    assert resumed["budget"]["checks"] == 6
    assert world.steps("watch") == {"M1": "ready"}
    assert "Resumed" in world.events.reasons("watch")
    assert "Resumed" in world.events.reasons("keeper")  # the Mind's story tells it too
    assert review(world) == 0  # answered once

    # It goes on from where it stopped, and blocks again on the new count: answered again.
    drive(world, "watch")
    assert world.driver.calls == {"service.status": 6}
    assert world.step("watch", "M1")["reason"] == CHECKS_USED.format(6)
    assert world.ledger.intention(suspended).status is IntentionStatus.SUSPENDED
    assert said(world, suspended) == [
        ("budget", "suspend"),
        ("budget", "resume"),
        ("budget", "suspend"),
    ]
    assert review(world) == 0


class Stopped(Exception):
    """The controller stopped here."""


def test_a_resumption_the_controller_stopped_in_is_finished_by_the_next_review(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    world = World()
    suspended = watching(world, mind_checks=3)
    stored_mind(world)["spec"]["budget"] = {"checks": 6}

    def stop(intention_id: str, status: IntentionStatus, *_: object) -> None:
        raise Stopped(f"stopped before {intention_id} became {status}")

    # The plan was written, then the process stopped before the intention moved.
    with monkeypatch.context() as m:
        m.setattr(world.ledger, "transition_intention", stop)
        with pytest.raises(Stopped):
            review(world)
    assert plan_status(world, "watch")["phase"] == "executing"
    assert world.ledger.intention(suspended).status is IntentionStatus.SUSPENDED

    assert review(world) == 1  # as at the next controller's start
    found = world.ledger.intention(suspended)
    assert found.status is IntentionStatus.ACTIVE
    assert found.reason == "resumed: its plan runs again"
    assert said(world, suspended) == [("budget", "suspend"), ("budget", "resume")]  # once
    assert review(world) == 0
    drive(world, "watch")
    assert world.driver.calls == {"service.status": 6}  # it went on from where it stopped


def test_a_budget_the_plan_set_itself_is_not_raised_by_the_mind() -> None:
    world = World()
    suspended = watching(world, mind_checks=200, plan_checks=3)
    stored_mind(world)["spec"]["budget"] = {"checks": 1000}
    assert review(world) == 0
    assert world.ledger.intention(suspended).status is IntentionStatus.SUSPENDED
    assert plan_status(world, "watch")["phase"] == "blocked"


def test_a_raise_too_small_for_the_blocked_step_resumes_nothing() -> None:
    world = World()
    world.plan("asks", [restart("P1")], budget={"approvals": 0})
    spec = stored_mind(world)["spec"]
    spec["capabilityPolicy"] = []  # policy asks for a restart: it needs one approval
    drive(world, "asks")
    waiting = implicit(world, "asks")
    assert world.ledger.intention(waiting).status is IntentionStatus.SUSPENDED
    spec["budget"] = {"checks": 300}  # a raise, of another kind than the one that blocked
    assert review(world) == 0
    assert world.ledger.intention(waiting).status is IntentionStatus.SUSPENDED


def test_a_resumption_shows_in_why() -> None:
    world = World()
    watching(world, mind_checks=3)
    stored_mind(world)["spec"]["budget"] = {"checks": 6}
    review(world)
    links = Explainer(resources=world.resources, ledger=world.ledger).why(
        NAMESPACE, "plan", "watch"
    )
    said_ = [link.summary for link in links if link.kind == "Decision"]
    assert any(
        s.startswith("reconsideration: resume") and "the budget allows the plan again" in s
        for s in said_
    ), said_


# --- the means: a new revision ----------------------------------------------------------------


def test_a_capability_allowed_again_resumes_the_blocked_intention_with_a_new_revision() -> None:
    world, plan = minded()
    approval = asked(world, plan)
    mind_spec(world)["capabilityPolicy"][0]["decision"] = "deny"
    assert review(world) == 1
    assert intention(world).status is IntentionStatus.BLOCKED
    assert review(world) == 0  # still denied: nothing resumes
    assert world.resources.get(APPROVAL, NAMESPACE, approval)["status"]["phase"] == "Withdrawn"

    mind_spec(world)["capabilityPolicy"][0]["decision"] = "allow"
    assert review(world) == 1
    assert verdicts(world) == [("capability_change", "block"), ("capability_change", "resume")]
    successor = intention(world).plan
    assert successor is not None
    assert successor != plan
    assert intention(world).status is IntentionStatus.ACTIVE
    assert intention(world).failed_strategies == []  # the strategy did not fail
    old = world.resources.get(PLAN, NAMESPACE, plan)["spec"]
    assert world.resources.get(PLAN, NAMESPACE, successor)["spec"]["strategy"] == old["strategy"]
    assert phase(world, plan) == "superseded"
    assert review(world) == 0


def test_an_expired_approval_stays_blocked_whatever_changes_and_lapses() -> None:
    world, plan = minded()
    asked(world, plan)
    world.clock.now += DAY + timedelta(seconds=1)
    world.executor("a").tick(NAMESPACE, plan)
    assert intention(world).status is IntentionStatus.BLOCKED
    mind_spec(world)["capabilityPolicy"][0]["decision"] = "allow"  # would run without asking
    assert review(world) == 0
    assert plans(world) == [plan]
    assert len(world.resources.list(APPROVAL, NAMESPACE)) == 1  # nobody asked again
    world.clock.now += DAY
    assert lapse(intention(world), world.clock.now) is not None


def test_policy_flapping_for_days_resumes_at_most_the_replan_limit() -> None:
    world, _ = minded(policy="allow")
    decisions = {"deny": 0, "allow": 0}
    for hour in range(72):
        decision = "deny" if hour % 2 == 0 else "allow"
        mind_spec(world)["capabilityPolicy"][0]["decision"] = decision
        world.clock.now += timedelta(hours=1)
        decisions[decision] += review(world)
        current = intention(world).plan
        if current is not None and "phase" not in plan_status(world, current):
            admit(world, current)  # as the controller admits each new revision it sees
    said_ = verdicts(world)
    resumes = said_.count(("capability_change", "resume"))
    assert resumes == MAX_REPLANS
    assert said_.count(("capability_change", "block")) == MAX_REPLANS + 1
    assert decisions == {"deny": MAX_REPLANS + 1, "allow": MAX_REPLANS}
    assert intention(world).status is IntentionStatus.BLOCKED  # left to lapse
    assert len(plans(world)) == MAX_REPLANS + 1
    assert world.driver.calls["service.restart"] == 0  # no plan was ever ticked to act


def test_a_budget_raised_each_day_resumes_once_a_day_for_five_days() -> None:
    world = World()
    # Stable for a week, at a look every ten minutes: it never completes in five days.
    suspended = watching(world, mind_checks=5)
    reviews = 0
    for day in range(1, 6):
        for _ in range(24):  # a review an hour: a Mind or grant change that changes nothing
            world.clock.now += timedelta(hours=1)
            reviews += review(world)
            drive(world, "watch")
        stored_mind(world)["spec"]["budget"] = {"checks": 5 + 5 * day}
        reviews += review(world)
        drive(world, "watch")
    said_ = said(world, suspended)
    assert said_.count(("budget", "resume")) == 5
    assert said_.count(("budget", "suspend")) == 6
    assert reviews == 5  # 120 reviews that changed nothing resumed nothing
    assert world.driver.calls == {"service.status": 30}
    assert world.step("watch", "M1")["reason"] == CHECKS_USED.format(30)


# --- a person's resume: what has no plan that can run is planned anew ---------------------------


def planned_on_resume(world: World) -> int:
    planning = PlanningService(resources=world.resources, clock=world.clock, registry=REGISTRY)
    return plan_resumed(
        world.ledger, world.resources, planning, NAMESPACE, "keeper", world.clock.now
    )


def inherited(world: World) -> IntentionRecord:
    """An intention a fork inherited: suspended, with no plan (its work stayed with the
    source)."""
    now = world.clock.now
    record = an_intention(
        id="int-inherited",
        namespace=NAMESPACE,
        mind="keeper",
        subject=f"{NAMESPACE}/atlas-worker",
        means_capability="service.restart",
        means_parameters=WORKLOAD,
        created_at=now,
        updated_at=now,
    )
    world.ledger.form_intention(record)
    moved = world.ledger.transition_intention(
        record.id, IntentionStatus.SUSPENDED, "inherited from keeper-0 by fork", now
    )
    assert moved is not None
    return moved


def test_inherited_work_waits_for_a_person_and_is_planned_once_resumed() -> None:
    world = World()
    waiting = inherited(world)
    stored_mind(world)["spec"]["budget"] = {"checks": 1000}
    assert review(world) == 0  # no rule resumes a fork's inheritance
    for _ in range(48):  # a day of cycles: it waits for a person
        world.clock.now += timedelta(minutes=30)
        assert planned_on_resume(world) == 0
    assert world.ledger.intention(waiting.id).status is IntentionStatus.SUSPENDED
    assert world.resources.list(PLAN, NAMESPACE) == []

    world.ledger.transition_intention(
        waiting.id, IntentionStatus.ACTIVE, "alice said resume: ours now", world.clock.now
    )
    assert planned_on_resume(world) == 1
    resumed = world.ledger.intention(waiting.id)
    assert resumed is not None
    assert resumed.plan is not None
    made = world.resources.get(PLAN, NAMESPACE, resumed.plan)["spec"]
    assert (made["intention"], made["revision"]) == (waiting.id, 1)
    assert planned_on_resume(world) == 0  # planned once


def test_a_person_who_resumes_an_expired_approval_gets_a_new_revision() -> None:
    world, plan = minded()
    asked(world, plan)
    world.clock.now += DAY + timedelta(seconds=1)
    world.executor("a").tick(NAMESPACE, plan)
    assert planned_on_resume(world) == 0  # blocked: nobody is asked again on the mind's own
    world.ledger.transition_intention(
        INTENTION, IntentionStatus.ACTIVE, "alice said resume: ask me again", world.clock.now
    )
    assert planned_on_resume(world) == 1
    successor = intention(world).plan
    assert successor is not None
    assert successor != plan
    assert world.resources.get(PLAN, NAMESPACE, successor)["spec"]["supersedes"] == plan
    assert planned_on_resume(world) == 0


def test_a_failed_plan_awaiting_the_executors_answer_is_not_planned_by_the_cycle() -> None:
    world, plan = minded()
    stored = world.resources._objects[(PLAN.plural, NAMESPACE, plan)]
    stored["status"] = {**stored["status"], "phase": "failed"}  # the answer is still to come
    assert planned_on_resume(world) == 0
    assert plans(world) == [plan]


def test_the_minds_own_plan_follows_the_raised_budget_and_acts_nothing_twice() -> None:
    broken = Scripted(healthy=False)
    world, plan = minded(policy="allow", driver=broken, budget={"checks": 3})
    drive(world, plan)
    assert world.steps(plan) == {"P1": "completed", "V1": "blocked"}
    assert intention(world).status is IntentionStatus.SUSPENDED
    mind_spec(world)["budget"] = {"checks": 20}
    assert review(world) == 1
    assert plan_status(world, plan)["budget"]["checks"] == 20
    broken.healthy = True  # the restart took, a little late
    drive(world, plan)
    assert phase(world, plan) == "completed"
    assert world.driver.calls["service.restart"] == 1  # the verify went on; no second restart
    assert intention(world).status is IntentionStatus.FULFILLED
    assert verdicts(world) == [
        ("budget", "suspend"),
        ("budget", "resume"),
        ("goal_completion", "fulfil"),
    ]


class ForkingLedger(FakeLedger):
    """The fake ledger with the tables a fork copies and these tests leave empty."""

    def wants(self, namespace: str, mind: str) -> list[dict[str, Any]]:
        return []

    def procedures(self, namespace: str, mind: str) -> list[Any]:
        return []


def test_a_forks_inheritance_waits_for_a_person_and_its_day_counts_from_the_fork() -> None:
    world = World(ledger=ForkingLedger())
    source = an_intention(id="int-source", namespace=NAMESPACE, mind="keeper")
    world.ledger.form_intention(source.model_copy(update={"created_at": world.clock.now}))
    forked_at = world.clock.now
    ForkService(resources=world.resources, ledger=world.ledger, clock=world.clock).fork(
        NAMESPACE, "keeper", "keeper-2"
    )
    [copy] = world.ledger.intentions(namespace=NAMESPACE, mind="keeper-2")
    assert copy.status is IntentionStatus.SUSPENDED
    assert copy.plan is None  # its work stayed with the source
    assert world.executor("a").review(NAMESPACE, "keeper-2") == 0  # no rule resumes it
    assert lapse(copy, forked_at + timedelta(hours=23)) is None
    assert lapse(copy, forked_at + DAY) is not None  # whenever the fork is made active


def test_an_escalation_waits_for_a_person_whatever_the_mind_or_its_budget_become() -> None:
    world, plan = minded(policy="allow", driver=Scripted(healthy=False))
    world.run(world.executor("a"), plan, until=lambda: phase(world, plan) == "superseded")
    successor = intention(world).plan
    assert successor is not None
    admit(world, successor)
    world.run(world.executor("a"), successor, until=lambda: phase(world, successor) == "completed")
    assert intention(world).status is IntentionStatus.BLOCKED  # escalated
    mind_spec(world)["budget"] = {"checks": 1000, "invocations": 100}
    mind_spec(world)["capabilityPolicy"][0]["decision"] = "allow"
    assert review(world) == 0
    assert planned_on_resume(world) == 0
    assert intention(world).status is IntentionStatus.BLOCKED
    assert world.driver.calls["service.restart"] == 1


class Interrupted(Exception):
    """The controller stopped between closing the old revision and writing the new one."""


def test_a_resumption_replan_another_executor_finishes_still_reuses_the_strategy(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    world, plan = minded()
    asked(world, plan)
    mind_spec(world)["capabilityPolicy"][0]["decision"] = "deny"
    review(world)
    mind_spec(world)["capabilityPolicy"][0]["decision"] = "approve"
    planning = PlanningService.plan

    def interrupted(*args: Any, **kwargs: Any) -> Any:
        raise Interrupted

    monkeypatch.setattr(PlanningService, "plan", interrupted)
    with pytest.raises(Interrupted):
        review(world)
    assert phase(world, plan) == "replanning"  # begun, not finished
    monkeypatch.setattr(PlanningService, "plan", planning)
    world.executor("b").tick(NAMESPACE, plan)  # whoever looks next finishes it
    successor = intention(world).plan
    assert successor is not None
    assert successor != plan
    assert intention(world).failed_strategies == []  # the strategy did not fail
    old = world.resources.get(PLAN, NAMESPACE, plan)["spec"]
    assert world.resources.get(PLAN, NAMESPACE, successor)["spec"]["strategy"] == old["strategy"]

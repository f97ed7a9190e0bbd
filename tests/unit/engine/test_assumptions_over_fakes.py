"""A plan's assumptions held against the mind's beliefs, over the engine's fakes: the belief
that moved the want is the plan's assumption; an observation that weakens it reconsiders the
plan on `weakened_belief` (a replan, its Approval withdrawn), recorded once and shown by
``why``."""

from __future__ import annotations

from datetime import timedelta

from minds.domain.resources.kinds import APPROVAL, PLAN
from minds.domain.volition.wants import Observation
from minds.engine.belief_weighing import weigh
from minds.engine.why import Explainer
from tests.unit.engine.harness import NAMESPACE, World
from tests.unit.engine.test_reconsidering_over_fakes import (
    admit,
    asked,
    minded,
    phase,
    verdicts,
)

SUBJECT = f"{NAMESPACE}/atlas-worker"
BELIEF = f"workload {SUBJECT} is degraded"
EXPECTED = f"{SUBJECT} is running normally within 60 s"


def observe(world: World, state: str) -> int:
    """One cycle's look at the workload, weighed; then the executor is asked to review."""
    world.clock.now += timedelta(minutes=1)
    seen = Observation(
        subject=SUBJECT, capability="service.status", fields={"state": state}, at=world.clock.now
    )
    weigh(world.ledger, NAMESPACE, "keeper", [seen])
    return world.executor("a").review_assumptions(NAMESPACE, "keeper")


def confidence(world: World) -> float:
    (belief,) = world.ledger.beliefs(NAMESPACE, "keeper")
    return belief.confidence


def test_the_plan_assumes_the_belief_that_moved_the_want() -> None:
    world, plan = minded()
    spec = world.resources.get(PLAN, NAMESPACE, plan)["spec"]
    # ...and the restart's expected outcome, at the planner's threshold.
    assert spec["assumptions"] == [
        {"belief": BELIEF, "minConfidence": 0.5},
        {"belief": EXPECTED, "minConfidence": 0.5},
    ]


def test_a_workload_still_degraded_keeps_the_plan() -> None:
    world, plan = minded()
    approval = asked(world, plan)
    for _ in range(10):
        assert observe(world, "degraded") == 0
    assert confidence(world) > 0.9
    assert verdicts(world) == []
    assert phase(world, plan) == "awaiting_approval"
    status = world.resources.get(APPROVAL, NAMESPACE, approval).get("status") or {}
    assert status.get("phase") != "Withdrawn"


def test_a_workload_that_recovers_weakens_the_belief_and_replans_once() -> None:
    world, plan = minded()
    approval = asked(world, plan)
    assert observe(world, "degraded") == 0
    assert observe(world, "running") == 1
    assert confidence(world) < 0.5
    assert verdicts(world) == [("weakened_belief", "replan")]
    assert phase(world, plan) == "superseded"
    assert world.resources.get(APPROVAL, NAMESPACE, approval)["status"]["phase"] == "Withdrawn"
    assert observe(world, "running") == 0  # answered once for this plan
    assert world.driver.calls["service.restart"] == 0


def test_a_belief_the_mind_never_held_weakens_nothing() -> None:
    world, plan = minded()
    asked(world, plan)
    assert observe(world, "running") == 0  # a running workload is no news: no belief formed
    assert world.ledger.beliefs(NAMESPACE, "keeper") == []
    assert verdicts(world) == []


def test_why_on_the_weakened_plan_says_which_belief_weakened() -> None:
    world, plan = minded()
    asked(world, plan)
    observe(world, "degraded")
    observe(world, "running")
    links = Explainer(resources=world.resources, ledger=world.ledger).why(NAMESPACE, "plan", plan)
    said = [link.summary for link in links if link.kind == "Decision"]
    assert any(s.startswith("reconsideration: replan") and "supporting belief" in s for s in said)


def test_a_day_of_hourly_flapping_reconsiders_once_and_never_restarts_unasked() -> None:
    """The workload flaps every hour for a day while the controller looks at every plan: the
    recovery weakens the restart's assumption once; the replan does not use the restart again
    (a replan remembers its strategy as failed), so the next revision diagnoses and tells a
    person, and nothing is restarted."""
    world, _ = minded()
    for hour in range(24):
        observe(world, "running" if hour % 2 else "degraded")
        for plan in world.resources.list(PLAN, NAMESPACE):
            name = plan["metadata"]["name"]
            if not (plan.get("status") or {}).get("phase"):
                admit(world, name)
            world.executor("a").tick(NAMESPACE, name)
    assert verdicts(world) == [("weakened_belief", "replan"), ("goal_completion", "block")]
    assert world.driver.calls["service.restart"] == 0


def test_a_plan_with_a_step_under_way_is_left_to_finish_it() -> None:
    world, plan = minded()
    asked(world, plan)
    observe(world, "degraded")
    stored = world.resources._objects[(PLAN.plural, NAMESPACE, plan)]["status"]["steps"]
    next(s for s in stored if s["key"] == "P1")["status"] = "executing"
    assert observe(world, "running") == 0
    assert verdicts(world) == []


def test_a_plan_whose_action_is_done_is_judged_by_its_verify_steps_not_its_assumption() -> None:
    world, plan = minded()
    asked(world, plan)
    observe(world, "degraded")
    stored = world.resources._objects[(PLAN.plural, NAMESPACE, plan)]["status"]["steps"]
    next(s for s in stored if s["key"] == "P1")["status"] = "completed"
    assert observe(world, "running") == 0  # the restart worked: that is no reason to replan
    assert verdicts(world) == []

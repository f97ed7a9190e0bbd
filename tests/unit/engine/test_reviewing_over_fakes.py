"""A change of a Mind's policy or commitments reviews its open plans, over the engine's fakes:
each finding is answered by the domain's ``reconsider()`` and recorded."""

from __future__ import annotations

from minds.domain.intentions import IntentionStatus
from minds.domain.resources.kinds import APPROVAL, PLAN
from tests.unit.engine.harness import NAMESPACE, World
from tests.unit.engine.test_reconsidering_over_fakes import (
    admit,
    asked,
    intention,
    mind_spec,
    minded,
    phase,
    plans,
    verdicts,
)


def review(world: World) -> int:
    return world.executor("a").review(NAMESPACE, "keeper")


def test_nothing_changed_nothing_reconsidered() -> None:
    world, plan = minded()
    asked(world, plan)
    assert review(world) == 0
    assert verdicts(world) == []
    assert intention(world).status is IntentionStatus.BLOCKED  # waiting for its approval


def test_a_policy_that_now_denies_the_step_blocks_the_intention_and_ends_the_plan() -> None:
    world, plan = minded()
    approval = asked(world, plan)
    mind_spec(world)["capabilityPolicy"][0]["decision"] = "deny"
    assert review(world) == 1
    assert verdicts(world) == [("capability_change", "block")]
    assert intention(world).status is IntentionStatus.BLOCKED
    assert phase(world, plan) == "failed"
    assert world.resources.get(APPROVAL, NAMESPACE, approval)["status"]["phase"] == "Withdrawn"
    world.executor("a").tick(NAMESPACE, plan)  # the failed plan's own look changes nothing
    assert verdicts(world) == [("capability_change", "block")]
    assert plans(world) == [plan]
    assert review(world) == 0  # answered once
    assert world.driver.calls["service.restart"] == 0


def test_a_commitment_that_now_forbids_the_step_abandons_the_intention_and_its_plan() -> None:
    world, plan = minded(policy="allow")
    mind_spec(world)["commitments"] = [
        {"name": "no-restarts", "mode": "refrain", "capability": "service.restart"}
    ]
    assert review(world) == 1
    assert verdicts(world) == [("commitment_change", "abandon")]
    assert intention(world).status is IntentionStatus.ABANDONED
    assert phase(world, plan) == "abandoned"
    world.executor("a").tick(NAMESPACE, plan)
    assert world.driver.calls["service.restart"] == 0


def test_a_commitment_that_only_adds_approval_replans_and_may_reuse_the_strategy() -> None:
    world, plan = minded(policy="allow")
    mind_spec(world)["commitments"] = [
        {
            "name": "ask-first",
            "mode": "refrain",
            "capability": "service.restart",
            "unlessApproval": True,
        }
    ]
    assert review(world) == 1
    assert verdicts(world) == [("commitment_change", "require_approval")]
    successor = intention(world).plan
    assert successor is not None
    assert successor != plan
    assert phase(world, plan) == "superseded"
    old = world.resources.get(PLAN, NAMESPACE, plan)["spec"]
    new = world.resources.get(PLAN, NAMESPACE, successor)["spec"]
    assert new["strategy"] == old["strategy"]  # the same strategy, under the new constraint
    assert intention(world).failed_strategies == []
    admit(world, successor)
    world.run(
        world.executor("a"), successor, until=lambda: "approvalRef" in world.step(successor, "P1")
    )
    assert world.driver.calls["service.restart"] == 0  # asked first, as now promised


def test_an_open_plan_of_an_intention_abandoned_elsewhere_ends_abandoned() -> None:
    world, plan = minded()
    approval = asked(world, plan)
    world.ledger.transition_intention(
        "int-atlas", IntentionStatus.ABANDONED, "abandoned by alice", world.clock.now
    )
    assert review(world) == 1
    assert phase(world, plan) == "abandoned"
    assert world.resources.get(APPROVAL, NAMESPACE, approval)["status"]["phase"] == "Withdrawn"
    assert world.resources.get(PLAN, NAMESPACE, plan)["status"]["reason"] == "abandoned by alice"
    assert review(world) == 0

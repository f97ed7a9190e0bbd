"""One writing action per target at a time, whoever planned it, over the engine's fakes: an
operator's plan and another plan on one workload give one restart, a busy target holds a step
off, and an approved action that another plan did meanwhile is not run again."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from minds.domain.execution.covering import COVERED_FOR, HELD_OFF_FOR
from minds.domain.intentions import IntentionKind, IntentionRecord
from minds.domain.resources.kinds import APPROVAL, MIND, PLAN
from tests.unit.engine.harness import NAMESPACE, WORKLOAD, World, read, restart

TARGET = (NAMESPACE, f"{NAMESPACE}/atlas-worker")


def verified(key: str = "P1") -> list[dict[str, Any]]:
    """A restart whose expectation a verify step looks at (the fake world says it runs)."""
    check = {
        "capability": "service.status",
        "parameters": WORKLOAD,
        "field": "state",
        "comparison": "equals",
        "value": "running",
    }
    action = restart(key) | {
        "expectation": {
            "description": "atlas-worker runs",
            "check": check,
            "confidence": 0.8,
            "windowSeconds": 60,
        }
    }
    look = {"key": "V1", "title": "verify", "kind": "verify", "verifies": key, "dependsOn": [key]}
    return [action, look]


def finished(world: World, plan: str) -> None:
    world.run(world.executor("a"), plan, until=lambda: world.steps(plan).get("V1") == "completed")


def done(world: World, plan: str) -> bool:
    return world.steps(plan)["P1"] in ("completed", "skipped", "failed")


def restarted(world: World, plan: str) -> None:
    world.run(world.executor("a"), plan, until=lambda: done(world, plan))


def test_a_second_plans_restart_of_the_same_workload_is_covered_by_the_first() -> None:
    world = World()
    world.plan("mine", verified())
    world.plan("operators", [restart("P1"), read("R1", "P1")])
    finished(world, "mine")
    restarted(world, "operators")
    assert world.driver.calls["service.restart"] == 1
    covered = world.step("operators", "P1")
    assert covered["status"] == "skipped"
    assert covered["reason"].startswith("covered: service.restart on")
    assert "by plan mine" in covered["reason"]
    world.run(
        world.executor("a"), "operators", until=lambda: world.steps("operators")["R1"] != "pending"
    )
    assert world.steps("operators")["R1"] == "completed"  # the rest of the plan goes on


def test_an_unverified_restart_covers_nothing() -> None:
    world = World()
    world.plan("first", [restart("P1")])
    restarted(world, "first")
    world.plan("second", [restart("P1")])
    restarted(world, "second")
    assert world.steps("second") == {"P1": "completed"}
    assert world.driver.calls["service.restart"] == 2


def test_the_cover_lasts_a_while_not_forever() -> None:
    world = World()
    world.plan("first", verified())
    finished(world, "first")
    world.clock.now += COVERED_FOR
    world.plan("later", [restart("P1")])
    restarted(world, "later")
    assert world.driver.calls["service.restart"] == 2


def test_a_busy_target_holds_the_step_off_and_it_acts_once_when_free() -> None:
    world = World()
    world.plan("heal", [restart("P1")])
    world.ledger.held_targets.add(TARGET)  # another controller is restarting it right now
    world.executor("a").tick(NAMESPACE, "heal")
    held = world.step("heal", "P1")
    assert held["status"] == "waiting"
    assert "another writing action" in held["reason"]
    assert world.driver.calls["service.restart"] == 0
    world.ledger.held_targets.clear()
    world.clock.now += HELD_OFF_FOR
    restarted(world, "heal")
    assert world.steps("heal") == {"P1": "completed"}
    assert world.driver.calls["service.restart"] == 1


def test_reads_are_never_serialised() -> None:
    world = World()
    world.plan("look", [read("R1")])
    world.ledger.held_targets.add(TARGET)
    world.executor("a").tick(NAMESPACE, "look")
    assert world.steps("look") == {"R1": "completed"}


def asking(world: World) -> None:
    spec: dict[str, Any] = world.resources._objects[(MIND.plural, NAMESPACE, "keeper")]["spec"]
    spec["capabilityPolicy"] = [{"capability": "service.restart", "decision": "approve"}]
    spec["approvers"] = {"groups": ["sre"]}


def approve(world: World, plan: str) -> str:
    world.run(world.executor("a"), plan, until=lambda: "approvalRef" in world.step(plan, "P1"))
    name = str(world.step(plan, "P1")["approvalRef"])
    stored = world.resources._objects[(APPROVAL.plural, NAMESPACE, name)]
    stored["spec"] |= {"decision": "Approved", "decidedBy": "alice"}
    return name


def test_an_approved_restart_another_plan_did_meanwhile_is_not_run_and_the_approval_ends() -> None:
    world = World()
    asking(world)
    world.plan("mine", [restart("P1")])
    world.plan("operators", verified())
    first = approve(world, "mine")
    second = approve(world, "operators")
    finished(world, "operators")
    world.clock.now += timedelta(minutes=1)
    restarted(world, "mine")
    assert world.driver.calls["service.restart"] == 1
    assert world.steps("mine") == {"P1": "skipped"}
    status = world.resources.get(APPROVAL, NAMESPACE, first)["status"]
    assert status["phase"] == "Withdrawn"
    assert "covered" in status["message"]
    assert world.resources.get(APPROVAL, NAMESPACE, second)["status"]["phase"] == "Executed"


def test_an_approved_restart_waits_while_another_writer_holds_the_target() -> None:
    world = World()
    asking(world)
    world.plan("mine", [restart("P1")])
    approve(world, "mine")
    world.ledger.held_targets.add(TARGET)
    busy = world.executor("a").tick(NAMESPACE, "mine")
    assert world.steps("mine") == {"P1": "awaiting_approval"}  # nothing claimed, nothing run
    # Nothing in the Plan changed, so nothing would wake it but its own timer: it looks again
    # as soon as a held-off step would, not when the Approval expires or at the safety tick.
    assert busy.wake_at is not None
    assert busy.wake_at <= world.clock.now + HELD_OFF_FOR
    world.ledger.held_targets.clear()
    world.executor("a").tick(NAMESPACE, "mine")
    assert world.steps("mine") == {"P1": "completed"}
    assert world.driver.calls["service.restart"] == 1


def the_minds_plan(world: World, name: str, steps: list[dict[str, Any]], formed: int) -> None:
    """A plan the mind made for an intention it formed ``formed`` seconds from now."""
    world.plan(name, steps)
    at = world.clock.now + timedelta(seconds=formed)
    intention, _ = world.ledger.form_intention(
        IntentionRecord(
            id=f"int-{name}",
            namespace=NAMESPACE,
            mind="keeper",
            objective="restart atlas-worker (commitment nightly-restart)",
            kind=IntentionKind.ACTION,
            plan=name,
            created_at=at,
            updated_at=at,
        )
    )
    spec = world.resources._objects[(PLAN.plural, NAMESPACE, name)]["spec"]
    spec |= {"origin": "template", "strategy": "direct", "intention": intention.id}


def test_an_action_the_mind_knew_of_when_it_formed_its_intention_covers_nothing() -> None:
    # A recurring commitment's next period: formed after the last period's verified restart,
    # its restart is an instruction to act again, however soon.
    world = World()
    world.plan("last-period", verified())
    finished(world, "last-period")
    world.clock.now += timedelta(minutes=1)
    the_minds_plan(world, "this-period", [restart("P1")], formed=0)
    restarted(world, "this-period")
    assert world.steps("this-period") == {"P1": "completed"}
    assert world.driver.calls["service.restart"] == 2


def test_an_action_done_after_the_mind_formed_its_intention_covers_it() -> None:
    world = World()
    the_minds_plan(world, "mine", [restart("P1")], formed=-60)
    world.plan("operators", verified())
    finished(world, "operators")
    restarted(world, "mine")
    assert world.steps("mine") == {"P1": "skipped"}
    assert world.driver.calls["service.restart"] == 1


def test_a_persons_plan_naming_an_intention_is_still_covered_by_any_recent_action() -> None:
    world = World()
    world.plan("first", verified())
    finished(world, "first")
    world.clock.now += timedelta(minutes=1)
    the_minds_plan(world, "by-hand", [restart("P1")], formed=0)
    spec = world.resources._objects[(PLAN.plural, NAMESPACE, "by-hand")]["spec"]
    spec |= {"origin": "operator", "strategy": "authored"}
    restarted(world, "by-hand")
    assert world.steps("by-hand") == {"P1": "skipped"}
    assert world.driver.calls["service.restart"] == 1

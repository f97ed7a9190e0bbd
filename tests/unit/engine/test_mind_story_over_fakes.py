"""The Mind's Events tell what it did, once each: plans made and how they ended, steps that
need a person. Checks, steps that start or complete, and replays tell it nothing."""

from __future__ import annotations

from collections import Counter

from tests.unit.engine.harness import NAMESPACE, World, read, restart


def on_the_mind(world: World) -> list[tuple[str, str, str]]:
    return [(t, r, m) for name, t, r, m in world.events.posted if name == "keeper"]


def test_a_plan_that_runs_to_completion_is_told_on_the_mind_once() -> None:
    world = World()
    world.plan("heal", [read("R1"), restart("P1", "R1")])
    executor = world.executor("a")
    world.run(executor, "heal", until=lambda: world.steps("heal")["P1"] == "completed")
    executor.tick(NAMESPACE, "heal")  # concludes the completed plan
    executor.tick(NAMESPACE, "heal")  # and again: a replay tells nothing twice
    told = on_the_mind(world)
    assert Counter(reason for _, reason, _ in told) == {"Planned": 1, "PlanCompleted": 1}
    assert ("Normal", "PlanCompleted", "plan heal completed") in told
    [(_, _, planned)] = [t for t in told if t[1] == "Planned"]
    assert planned == "a person's plan heal (authored) is valid and will run"


def test_a_blocked_step_is_told_on_the_mind_as_a_warning() -> None:
    world = World()
    world.plan("thrifty", [read("R1"), read("R2", "R1")], budget={"invocations": 1})
    world.run(
        world.executor("a"), "thrifty", until=lambda: world.steps("thrifty")["R2"] != "pending"
    )
    [blocked] = [t for t in on_the_mind(world) if t[1] == "StepBlocked"]
    assert blocked[0] == "Warning"
    assert blocked[2].startswith("plan thrifty step R2 is blocked: ")
    assert "budget exhausted" in blocked[2]

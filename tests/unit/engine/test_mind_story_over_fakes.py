"""The Events tell what happened, once each: a Plan its own life (valid, completed), the Mind
what needs a person (blocked steps, failures). Checks, steps that start or complete, and
replays tell nothing."""

from __future__ import annotations

from collections import Counter

from minds.domain.ledger import EventRecord, SubjectRef
from minds.domain.resources.kinds import PLAN
from minds.engine.mind_story import tell_story
from tests.unit.engine.harness import NAMESPACE, World, read, restart


def on(world: World, name: str) -> list[tuple[str, str, str]]:
    return [(t, r, m) for n, t, r, m in world.events.posted if n == name]


def on_the_mind(world: World) -> list[tuple[str, str, str]]:
    return on(world, "keeper")


def test_a_plan_that_runs_to_completion_tells_its_own_story_once() -> None:
    world = World()
    world.plan("heal", [read("R1"), restart("P1", "R1")])
    executor = world.executor("a")
    world.run(executor, "heal", until=lambda: world.steps("heal")["P1"] == "completed")
    executor.tick(NAMESPACE, "heal")  # concludes the completed plan
    executor.tick(NAMESPACE, "heal")  # and again: a replay tells nothing twice
    told = on(world, "heal")
    assert Counter(reason for _, reason, _ in told) == {"Validated": 1, "Completed": 1}
    assert ("Normal", "Completed", "completed (2/2 steps)") in told
    [(_, _, validated)] = [t for t in told if t[1] == "Validated"]
    assert validated == "a person's plan (authored) is valid and will run"
    assert on_the_mind(world) == []


def test_a_plan_re_created_under_the_same_name_is_not_told_the_old_ones_story() -> None:
    world = World()
    world.plan("heal", [read("R1")])
    old = world.resources.get(PLAN, NAMESPACE, "heal")
    world.resources.delete(PLAN, NAMESPACE, "heal", old["metadata"]["uid"])
    world.resources.create(PLAN, NAMESPACE, {"metadata": {"name": "heal"}, "spec": old["spec"]})
    # The old plan's conclusion, told after its name went to a new Plan, tells nobody.
    row = EventRecord(
        mind="keeper",
        namespace=NAMESPACE,
        type="plan_completed",
        subject=SubjectRef(kind="Plan", name="heal", uid=old["metadata"]["uid"]),
        payload={},
        occurred_at=world.clock(),
        idempotency_key="k",
    )
    before = len(world.events.posted)
    tell_story(world.events, world.resources, [row])
    assert len(world.events.posted) == before


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

"""The cycle and the executor run in their own threads: a plan may end while a cycle is half-way
through reading. These tests put the end of the plan exactly there, with the real cycle,
planner and executor over the engine's fakes, and count what the mind did afterwards.

The one place this mattered (an e2e run on a loaded machine showed it): the cycle read the
mind's intentions, the plan then completed (its intention fulfilled, its answer recorded), and
the cycle read the plan's facts. The intention it held said active, the facts said "ended,
answered": together that is an intention a person resumed after its plan left it waiting, so
the cycle planned it anew, and the mind looked again (a second investigation, its findings taken
in twice) or acted again (a second restart for one due commitment)."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from minds.domain.intentions import IntentionRecord, IntentionStatus
from minds.domain.resources.kinds import MIND, PLAN
from minds.domain.volition.findings import TAKEN_IN
from minds.engine.cycle import MindCycle
from minds.engine.executor import Executor
from tests.unit.engine.harness import NAMESPACE, World
from tests.unit.engine.test_findings_over_days import asking_world, investigations, ledger
from tests.unit.engine.test_reconsidering_over_fakes import admit


def plan_names(world: World) -> list[str]:
    return sorted(p["metadata"]["name"] for p in world.resources.list(PLAN, NAMESPACE))


def ends_while_read(
    monkeypatch: pytest.MonkeyPatch, world: World, executor: Executor, plan: str
) -> None:
    """The next read of the mind's intentions returns what was there, and the executor then
    runs ``plan`` to its end before the reader goes on (once)."""
    read: Callable[..., list[IntentionRecord]] = world.ledger.intentions

    def then_the_plan_ends(**filters: Any) -> list[IntentionRecord]:
        found = read(**filters)
        if filters.get("mind") != "keeper":
            return found
        monkeypatch.setattr(world.ledger, "intentions", read)
        world.run(executor, plan, until=lambda: phase(world, plan) == "completed")
        assert all(i.status is IntentionStatus.FULFILLED for i in read(**filters))
        return found

    monkeypatch.setattr(world.ledger, "intentions", then_the_plan_ends)


def phase(world: World, plan: str) -> str | None:
    return (world.resources.get(PLAN, NAMESPACE, plan).get("status") or {}).get("phase")


def cycles(world: World, cycle: MindCycle, executor: Executor, count: int) -> None:
    """``count`` cycles, 5 s apart, every plan admitted and ticked after each."""
    for _ in range(count):
        world.clock.now += timedelta(seconds=5)
        cycle._run(NAMESPACE, "keeper")  # the fake ledger holds no advisory lock
        for name in plan_names(world):
            if phase(world, name) is None:
                admit(world, name)
            executor.tick(NAMESPACE, name)


def test_an_investigation_that_completes_while_the_cycle_reads_is_not_made_again(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    world, driver, cycle = asking_world("running")
    executor = world.executor("a")
    cycle._run(NAMESPACE, "keeper")  # the question forms an investigation and its plan
    [plan] = plan_names(world)
    admit(world, plan)
    ends_while_read(monkeypatch, world, executor, plan)
    cycles(world, cycle, executor, 12)
    assert plan_names(world) == [plan]  # no other revision, no other plan
    assert investigations(world) == 1
    assert world.ledger.types().count(TAKEN_IN) == 1  # its findings taken in once
    assert driver.calls["service.restart"] == 0  # a healthy finding moves nothing
    [request] = [w for w in ledger(world).wants(NAMESPACE, "keeper") if w["origin"] == "request"]
    assert request["status"] == "satisfied"


def test_a_due_restart_that_completes_while_the_cycle_reads_is_not_done_again(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    world, driver, cycle = asking_world("running", requests=[])
    due = datetime(2025, 12, 31, 23, 59, tzinfo=UTC)
    mind: dict[str, Any] = world.resources._objects[(MIND.plural, NAMESPACE, "keeper")]
    mind["spec"]["commitments"] = [
        {
            "name": "fresh-start",
            "mode": "do",
            "capability": "service.restart",
            "target": f"{NAMESPACE}/atlas-worker",
            "due": due.isoformat(),
        }
    ]
    executor = world.executor("a")
    cycle._run(NAMESPACE, "keeper")  # the due commitment forms a restart and its plan
    [plan] = plan_names(world)
    admit(world, plan)
    ends_while_read(monkeypatch, world, executor, plan)
    cycles(world, cycle, executor, 12)
    assert plan_names(world) == [plan]
    assert driver.calls["service.restart"] == 1  # restarted once, never again
    assert ledger(world).commitments == {"fresh-start": "fulfilled"}

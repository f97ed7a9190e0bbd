"""The executor over the fakes of its ports, with a clock the test moves: claims, 409 races,
lease expiry and crash replay, each in milliseconds. The fakes are proven equal to the real
adapters by ``tests/integration/test_port_contracts.py``."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from minds.domain.resources.kinds import MIND, PLAN
from tests.unit.engine.harness import NAMESPACE, PAST_THE_LEASE, Crash, World, read, restart

#: service.restart's timeout (60 s) and the lease grace (30 s): past it, the lease expired.
UNKNOWN = "outcome unknown; not repeating a non-idempotent action without verification"


def test_a_plan_runs_to_completion_with_one_write_per_transition() -> None:
    world = World()
    world.plan("heal", [read("R1"), restart("P1", "R1")])
    admitted = world.resources.writes
    result = world.run(
        world.executor("a"), "heal", until=lambda: world.steps("heal")["P1"] == "completed"
    )
    assert result.phase is not None
    assert world.driver.calls == {"service.status": 1, "service.restart": 1}
    # One write readies and claims R1; R1's outcome carries P1's claim; then P1's outcome.
    assert world.resources.writes - admitted == 3
    assert world.resources.get(PLAN, NAMESPACE, "heal")["status"]["phase"] == "completed"


def test_a_step_at_rest_and_the_next_claim_are_one_write_and_one_journal_call() -> None:
    world = World()
    world.plan("heal", [read("R1"), restart("P1", "R1")])
    calls = spy_journal(world)
    puts: list[dict[str, str]] = []
    replace = world.resources.replace_status

    def spy(kind: Any, body: dict[str, Any], status: dict[str, Any]) -> dict[str, Any]:
        puts.append({s["key"]: s["status"] for s in status["steps"]})
        return replace(kind, body, status)

    world.resources.replace_status = spy  # type: ignore[method-assign]
    world.executor("a").tick(NAMESPACE, "heal")
    assert {"R1": "completed", "P1": "executing"} in puts
    assert ["plan_step_completed", "plan_step_started"] in plan_journal(calls)
    assert world.driver.calls == {"service.status": 1, "service.restart": 1}


def test_no_claim_rides_on_an_outcome_past_the_budget() -> None:
    world = World()
    world.plan("thrifty", [read("R1"), read("R2", "R1")], budget={"invocations": 1})
    world.run(
        world.executor("a"), "thrifty", until=lambda: world.steps("thrifty")["R2"] != "pending"
    )
    assert world.steps("thrifty") == {"R1": "completed", "R2": "blocked"}
    assert world.driver.calls == {"service.status": 1}
    assert "budget exhausted" in world.step("thrifty", "R2")["reason"]


def test_no_claim_rides_on_an_outcome_once_the_mind_is_inactive() -> None:
    world = World()
    world.plan("heal", [read("R1"), restart("P1", "R1")])
    invoke = world.driver.invoke

    def pause_the_mind(capability_name: str, parameters: Any, **kw: Any) -> Any:
        # A person sets the Mind inactive while R1 runs: nothing after R1 may start.
        mind = world.resources.get(MIND, NAMESPACE, "keeper")
        world.resources.delete(MIND, NAMESPACE, "keeper", mind["metadata"]["uid"])
        spec = {**mind["spec"], "active": False}
        world.resources.create(MIND, NAMESPACE, {"metadata": {"name": "keeper"}, "spec": spec})
        return invoke(capability_name, parameters, **kw)

    world.driver.invoke = pause_the_mind  # type: ignore[method-assign]
    world.executor("a").tick(NAMESPACE, "heal")
    assert world.steps("heal") == {"R1": "completed", "P1": "pending"}
    assert world.driver.calls == {"service.status": 1}


def test_events_tell_a_person_only_what_they_read() -> None:
    world = World()
    world.plan("heal", [read("R1"), restart("P1", "R1")])
    executor = world.executor("a")
    world.run(executor, "heal", until=lambda: world.steps("heal")["P1"] == "completed")
    executor.tick(NAMESPACE, "heal")  # concludes the completed plan
    reasons = world.events.reasons()
    # The plan's life is told once, on the Plan (kubectl describe plan); its Mind is told
    # only what needs a person.
    assert world.events.reasons(of="heal") == ["Validated", "Completed"]
    assert world.events.reasons(of="keeper") == []
    assert not {"step_completed", "step_started", "step_skipped"} & set(reasons)


def spy_journal(world: World) -> list[list[str]]:
    """The row types of each journal call, as they are made."""
    calls: list[list[str]] = []
    append = world.ledger.append_events

    def spy(records: Any) -> list[bool]:
        calls.append([r.type for r in records])
        return append(records)

    world.ledger.append_events = spy  # type: ignore[method-assign]
    return calls


def plan_journal(calls: list[list[str]]) -> list[list[str]]:
    return [c for c in calls if any(t.startswith("plan_") for t in c)]


def test_a_transitions_rows_are_one_journal_call() -> None:
    world = World()
    world.plan("one", [read("R1")])
    calls = spy_journal(world)
    world.executor("a").tick(NAMESPACE, "one")
    assert ["plan_step_started"] in plan_journal(calls)
    assert ["plan_step_completed"] in plan_journal(calls)


def test_a_competing_write_between_read_and_claim_wins_and_nothing_runs_twice() -> None:
    world = World()
    world.plan("heal", [restart("P1")])
    first, second = world.executor("a"), world.executor("b")

    def rival(kind: Any, body: dict[str, Any]) -> None:
        # b reads the same Plan and claims P1 before a's claim reaches the API server.
        second.tick(NAMESPACE, "heal")

    world.resources.before_write = rival
    first.tick(NAMESPACE, "heal")
    assert world.driver.calls["service.restart"] == 1
    assert world.steps("heal") == {"P1": "completed"}
    assert len(world.ledger.executions()) == 1


def test_a_live_lease_keeps_others_off_and_an_expired_one_is_recovered() -> None:
    world = World()
    world.plan("heal", [read("R1")])
    world.driver.crash_on.add("service.status")
    with pytest.raises(Crash):
        world.executor("a").tick(NAMESPACE, "heal")
    assert world.steps("heal") == {"R1": "executing"}
    b = world.executor("b")
    result = b.tick(NAMESPACE, "heal")
    assert result.transitions == 0
    assert result.wake_at == datetime.fromisoformat(world.step("heal", "R1")["lease"]["expiresAt"])
    assert world.driver.calls["service.status"] == 1
    world.clock.advance(timedelta(seconds=46))  # service.status: 15 s timeout + 30 s grace
    b.tick(NAMESPACE, "heal")
    # A read is safe to repeat: recovered, run again (a new attempt), completed.
    assert world.steps("heal") == {"R1": "completed"}
    assert world.driver.calls["service.status"] == 2


def test_a_read_is_recorded_with_its_outcome_and_a_write_before_it() -> None:
    """A write-ahead row is what keeps a writing action at most once; a read needs none, so
    its rows and its outcome are one transaction after it: a crash mid-read leaves no row
    without an outcome, a crash mid-restart leaves one."""
    world = World()
    world.plan("look", [read("R1")])
    world.plan("heal", [restart("P1")])
    world.driver.crash_on.update({"service.status", "service.restart"})
    for plan in ("look", "heal"):
        with pytest.raises(Crash):
            world.executor("a").tick(NAMESPACE, plan)
    recorded = {
        row.capability: world.ledger.execution(row.origin_key) for row in world.ledger.executions()
    }
    assert set(recorded) == {"service.restart"}
    assert recorded["service.restart"] is not None
    assert recorded["service.restart"][1] is None  # written before the restart; no outcome
    world.clock.advance(timedelta(seconds=46))
    world.executor("b").tick(NAMESPACE, "look")
    [row] = [r for r in world.ledger.executions() if r.capability == "service.status"]
    found = world.ledger.execution(row.origin_key)
    assert found is not None
    assert found[1] is not None
    assert {"tool_authorised", "tool_executed"} <= {
        e.type for e in world.ledger.events() if e.payload.get("execution") == row.id
    }


def test_a_crash_mid_restart_is_never_repeated_blindly() -> None:
    world = World()
    world.plan("heal", [restart("P1")])
    world.driver.crash_on.add("service.restart")
    with pytest.raises(Crash):
        world.executor("a").tick(NAMESPACE, "heal")
    world.clock.advance(PAST_THE_LEASE)
    world.executor("b").tick(NAMESPACE, "heal")
    p1 = world.step("heal", "P1")
    assert p1["status"] == "blocked"
    assert p1["reason"] == UNKNOWN
    assert world.driver.calls["service.restart"] == 1
    assert "StepBlocked" in world.events.reasons()


def test_a_crash_before_the_write_ahead_row_runs_the_action_once_as_the_same_attempt() -> None:
    world = World()
    world.plan("heal", [restart("P1")])
    begin = world.ledger.begin_execution

    def die(record: Any, told: Any = None) -> Any:
        world.ledger.begin_execution = begin  # type: ignore[method-assign]
        raise Crash("before the write-ahead row")

    world.ledger.begin_execution = die  # type: ignore[method-assign]
    with pytest.raises(Crash):
        world.executor("a").tick(NAMESPACE, "heal")
    assert world.driver.calls["service.restart"] == 0
    world.clock.advance(PAST_THE_LEASE)
    world.executor("b").tick(NAMESPACE, "heal")
    p1 = world.step("heal", "P1")
    assert p1["status"] == "completed"
    assert p1["attempts"] == 1
    assert world.driver.calls["service.restart"] == 1


def test_a_crash_after_the_outcome_is_adopted_not_repeated() -> None:
    world = World()
    world.plan("heal", [restart("P1")])
    replace = world.resources.replace_status

    def die_writing_the_outcome(kind: Any, body: dict[str, Any], status: dict[str, Any]) -> Any:
        if any(s["status"] == "completed" for s in status.get("steps", [])):
            # The restart ran and its outcome is in the ledger, not yet in the Plan.
            world.resources.replace_status = replace  # type: ignore[method-assign]
            raise Crash("before the outcome reached the Plan")
        return replace(kind, body, status)

    world.resources.replace_status = die_writing_the_outcome  # type: ignore[method-assign]
    with pytest.raises(Crash):
        world.executor("a").tick(NAMESPACE, "heal")
    assert world.driver.calls["service.restart"] == 1
    world.clock.advance(PAST_THE_LEASE)
    world.executor("b").tick(NAMESPACE, "heal")
    assert world.steps("heal") == {"P1": "completed"}
    assert world.driver.calls["service.restart"] == 1


def test_a_tick_out_of_turns_keeps_the_plan_open_and_looks_again_at_once(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A tick stops after MAX_TRANSITIONS turns (a stale copy answered by 409s, a long chain of
    steps). The plan is not done then: its phase must say so, or the controller reads "gone or
    done" and ends the plan's schedule, and an approved restart waits for an event that may
    never come."""
    monkeypatch.setattr("minds.engine.executor.MAX_TRANSITIONS", 1)
    world = World()
    world.plan("heal", [read("R1"), read("R2", "R1")])
    result = world.executor("a").tick(NAMESPACE, "heal")
    assert world.steps("heal") != {"R1": "completed", "R2": "completed"}  # not done in one turn
    assert result.phase is not None
    assert result.phase.value not in ("completed", "failed", "abandoned")
    assert result.wake_at == world.clock.now


def test_the_controller_keeps_ticking_a_plan_whose_tick_ran_out_of_turns() -> None:
    from minds.controller.plan_ticks import PlanTicks
    from minds.domain.planning.model import PlanStatus
    from minds.engine.executor import TickResult

    now = datetime(2026, 1, 1, tzinfo=UTC)
    results = {"heal": TickResult(64, now, PlanStatus.EXECUTING), "gone": TickResult(0, None, None)}
    ticks = PlanTicks(lambda namespace, name: results[name], lambda ns, name: "1", lambda: now)
    assert ticks(NAMESPACE, "heal") is not None  # looked at again, soon
    assert ticks(NAMESPACE, "gone") is None  # gone: no schedule

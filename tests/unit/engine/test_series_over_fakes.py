"""Routine is a series, change is a row, through the real engine over the fakes: a mind's looks
at a healthy goal and its cycles that decide nothing extend one series each; a look that finds
something else, or moves a belief, is its own row; a crash between looking and recording loses
that look alone; `why` and `timeline` tell the series and the change."""

from __future__ import annotations

from datetime import datetime

import pytest

from minds.domain.beliefs import BELIEF_EVIDENCE_ADDED
from minds.domain.ledger import EventRecord
from minds.domain.resources.kinds import MIND
from minds.domain.series import (
    CUT_EVERY,
    SERIES_CLOSED,
    SERIES_CUT,
    SeriesKind,
    series_from_row,
)
from tests.unit.engine.harness import NAMESPACE, World
from tests.unit.engine.routine import (
    MINUTE,
    WORKLOAD,
    broken_once,
    crash_after_a_look,
    cycles,
    keeper,
    looks,
    once_degraded,
    recorded_looks,
    run,
    timeline,
    why_the_restart,
)


def test_a_thousand_identical_looks_make_one_series_of_a_thousand() -> None:
    world = keeper()
    start = world.clock.now
    run(world, 1000)
    series = looks(world)
    assert (series.count, series.first_seen, series.last_seen) == (
        1000,
        start,
        start + 999 * MINUTE,
    )
    assert recorded_looks(world) == 1  # the first look, in full; the rest counted in place
    assert cycles(world).count == 1000
    types = world.ledger.types()
    assert types.count("tool_executed") == 1
    assert types.count("cycle_completed") == 1
    assert types.count(SERIES_CUT) == 2 * (999 * MINUTE // CUT_EVERY)  # each series, each cut


def test_a_look_that_finds_something_else_is_its_own_row_and_closes_the_series() -> None:
    world = keeper()
    run(world, 30)
    run(world, 1, weather=lambda now: "degraded")
    assert recorded_looks(world) == 2
    [closed] = closed_of(world, SeriesKind.OBSERVATION)
    before = series_from_row(closed)
    assert (before.count, before.told) == (30, "observed running")
    assert looks(world).told == "observed degraded"
    assert looks(world).count == 1
    # The mind decided (a want, an intention): the cycle is its own row too.
    assert world.ledger.types().count("cycle_completed") == 2


def test_a_look_that_moves_a_belief_is_its_own_row_until_the_belief_settles() -> None:
    world = keeper()
    once_degraded(world)
    run(world, 10)
    # 0.99, then 0.44, then 0.01: two looks moved the belief; the rest found it settled.
    assert world.ledger.types().count(BELIEF_EVIDENCE_ADDED) == 1 + 2
    assert recorded_looks(world) == 2
    assert looks(world).count == 9
    [belief] = world.ledger.beliefs(NAMESPACE, "keeper")
    assert (belief.confidence, belief.evidence_against) == (0.01, 2)


def test_a_look_no_longer_taken_closes_its_series() -> None:
    world = keeper()
    run(world, 5)
    body = world.resources.get(MIND, NAMESPACE, "keeper")
    stored = world.resources._objects[(MIND.plural, NAMESPACE, "keeper")]
    stored["spec"] = {**body["spec"], "goals": []}
    run(world, 1)
    [closed] = closed_of(world, SeriesKind.OBSERVATION)
    assert closed.payload["subject"] == looks(world).subject
    assert series_from_row(closed).count == 5
    assert not looks(world).open


def test_an_inactive_mind_closes_its_series() -> None:
    world = keeper()
    run(world, 5)
    stored = world.resources._objects[(MIND.plural, NAMESPACE, "keeper")]
    stored["spec"] = {**stored["spec"], "active": False}
    run(world, 3)
    assert not looks(world).open
    assert not cycles(world).open
    assert {e.payload["kind"] for e in world.ledger.events(type=SERIES_CLOSED)} == {
        "observation",
        "cycle",
    }
    stored["spec"] = {**stored["spec"], "active": True}
    run(world, 1)
    assert recorded_looks(world) == 2  # looking again starts a new series


def test_a_crash_between_looking_and_recording_loses_that_look_alone(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    world = keeper()
    run(world, 10)
    crash_after_a_look(world, monkeypatch)
    # Another controller takes over: the series goes on, the lost look is not in it.
    run(world, 10, engine=world.engine("b"))
    assert world.driver.calls["service.status"] == 21
    assert looks(world).count == 20 == cycles(world).count
    assert recorded_looks(world) == 1


def test_why_and_timeline_tell_the_series_and_the_change() -> None:
    world = keeper()
    start = world.clock.now
    broke = broken_once(world, 60, 10)
    told = [link.summary for link in why_the_restart(world)]
    changed = f"service.status on {WORKLOAD}: observed once at {at(broke)}"
    assert any(s.startswith(changed) and s.endswith("is degraded") for s in told), told
    before = (
        f"before it, service.status on {WORKLOAD}: observed running 60 times between "
        f"{at(start)} and {at(start + 59 * MINUTE)}: Deployment {WORKLOAD} is running"
    )
    assert before in told, told

    items = timeline(world)
    series = [i for i in items if i["what"] == "observation_series"]
    # Restarted after the degraded look, then seen running: two looks move the belief in
    # the degradation back down (0.99, 0.44, 0.01), each its own row, and routine resumes.
    assert [i["summary"] for i in series] == [
        f"observed running 60 times between {at(start)} and {at(start + 59 * MINUTE)}",
        f"observed running 8 times between {at(start + 62 * MINUTE)} and "
        f"{at(start + 69 * MINUTE)} (open)",
    ]
    looked = [i["at"] for i in items if i["what"] == "tool_executed" and "status" in str(i)]
    assert at(broke) in looked  # the changed look, its own entry
    assert not any(i["what"] in (SERIES_CUT, SERIES_CLOSED) for i in items)
    assert world.ledger.series(NAMESPACE, "keeper", kind=SeriesKind.CYCLE)


def closed_of(world: World, kind: SeriesKind) -> list[EventRecord]:
    return [e for e in world.ledger.events(type=SERIES_CLOSED) if e.payload["kind"] == kind]


def at(when: datetime) -> str:
    return when.isoformat()

"""Routine is a series, change is a row: the pure rules of ``minds.domain.series`` (what is the
same as the last, when a series is cut, what closing one writes), with the clock passed in."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from pydantic import JsonValue

from minds.domain.beliefs import BeliefRecord, belief_id
from minds.domain.capabilities.authority import AuthorityDecision, Stage, StageResult
from minds.domain.capabilities.results import DriverResult
from minds.domain.resources.mind import PolicyDecision
from minds.domain.series import (
    CUT_EVERY,
    SERIES_CLOSED,
    SERIES_CUT,
    Occurrence,
    Series,
    SeriesKind,
    cut_due,
    cycle,
    ended,
    latest,
    observation,
    recorded,
    same,
    series_from_row,
    tell,
)
from minds.domain.volition.assumptions import conclusion
from minds.domain.volition.wants import Observation

T0 = datetime(2026, 12, 8, 9, 0, tzinfo=UTC)
MINUTE = timedelta(minutes=1)
TARGET = "shop/atlas-worker"


def decision(policy: str = "observe: allowed by rule 1", grant: str | None = None) -> Any:
    return AuthorityDecision(
        decision=PolicyDecision.ALLOW,
        trail=(
            StageResult(stage=Stage.REGISTERED, decision=PolicyDecision.ALLOW, reason="registered"),
            StageResult(stage=Stage.POLICY, decision=PolicyDecision.ALLOW, reason=policy),
        ),
        target=TARGET,
        grant=grant,
        parameters={"namespace": "shop", "kind": "Deployment", "name": "atlas-worker"},
    )


def running(restarts: int = 0) -> DriverResult:
    return DriverResult.success(
        "Deployment shop/atlas-worker is running: 1/1 replicas ready and available",
        fields={"state": "running", "ready": True, "restarts": restarts},
    )


def look(
    at: datetime,
    *,
    result: DriverResult | None = None,
    policy: str = "observe: allowed by rule 1",
    conclusion: JsonValue = None,
    changes: bool = False,
    goal: str = "atlas-running",
    uid: str = "uid-1",
    grant: str | None = None,
) -> Occurrence:
    found = observation(
        namespace="shop",
        mind="keeper",
        capability="service.status",
        scope=f"goal {goal}",
        decision=decision(policy, grant),
        result=result or running(),
        facts={"mind": uid, "goal": goal},
        conclusion=conclusion,
        changes=changes,
        at=at,
        record_key=f"key-{at.isoformat()}",
    )
    assert found is not None
    return found


def series_of(*occurrences: Occurrence) -> Series:
    current: Series | None = None
    for occurrence in occurrences:
        current = recorded(current, occurrence).series
    assert current is not None
    return current


# -- the same ---------------------------------------------------------------------------------


def test_the_same_look_again_extends_the_series() -> None:
    first = recorded(None, look(T0))
    assert not first.routine
    assert first.rows == ()
    assert first.replaces is None
    assert (first.series.count, first.series.opened_by) == (1, f"key-{T0.isoformat()}")
    again = recorded(first.series, look(T0 + MINUTE))
    assert again.routine
    assert again.rows == ()
    assert again.replaces == first.series.version
    assert again.series.count == 2
    assert (again.series.first_seen, again.series.last_seen) == (T0, T0 + MINUTE)
    assert again.series.id == first.series.id


@pytest.mark.parametrize(
    ("what", "other"),
    [
        ("the result", {"result": running(restarts=1)}),
        ("the rule that decided", {"policy": "observe: allowed by rule 2"}),
        ("the belief conclusion", {"conclusion": {"belief": "b", "supports": False, "to": 0.01}}),
        ("the goal", {"goal": "atlas-up"}),
        ("the Mind object", {"uid": "uid-2"}),
    ],
)
def test_a_look_that_differs_is_not_the_same(what: str, other: dict[str, Any]) -> None:
    current = series_of(look(T0))
    assert not same(current, look(T0 + MINUTE, **other)), what


def test_a_look_that_changes_a_belief_is_never_routine() -> None:
    moves = {"belief": "b", "supports": False, "to": 0.01}
    current = series_of(look(T0, conclusion=moves))
    assert same(current, look(T0 + MINUTE, conclusion=moves))
    assert not same(current, look(T0 + MINUTE, conclusion=moves, changes=True))


def test_a_closed_series_is_not_extended() -> None:
    current = series_of(look(T0), look(T0 + MINUTE))
    [closing] = ended([current], SeriesKind.OBSERVATION, set(), T0 + 2 * MINUTE)
    assert not same(closing.series, look(T0 + 3 * MINUTE))


def test_a_look_that_spent_a_grant_is_no_occurrence() -> None:
    with pytest.raises(AssertionError):
        look(T0, grant="atlas-grant")


def test_a_cycle_that_decided_nothing_as_the_last_is_the_same() -> None:
    did: dict[str, JsonValue] = {
        "observed": 1,
        "findingsTakenIn": 0,
        "formed": 0,
        "decisions": 0,
        "refutedPredictions": 0,
    }

    def a_cycle(at: datetime, **over: JsonValue) -> Occurrence:
        return cycle(
            namespace="shop", mind="keeper", uid="uid-1", did={**did, **over}, at=at, key="k"
        )

    current = series_of(a_cycle(T0))
    assert same(current, a_cycle(T0 + MINUTE))
    for decided in ("findingsTakenIn", "formed", "decisions"):
        assert not same(current, a_cycle(T0 + MINUTE, **{decided: 1})), decided
    assert not same(current, a_cycle(T0 + MINUTE, refutedPredictions=1))
    # A cycle that decided something, as the last did, decided it again: never routine.
    deciding = series_of(a_cycle(T0, decisions=1))
    assert not same(deciding, a_cycle(T0 + MINUTE, decisions=1))


# -- the belief conclusion ---------------------------------------------------------------------


def test_running_looks_move_a_belief_in_degradation_until_it_settles() -> None:
    statement = f"workload {TARGET} is degraded"
    believed = BeliefRecord(
        id=belief_id("shop", "keeper", statement),
        namespace="shop",
        mind="keeper",
        statement=statement,
        confidence=0.99,
        updated_at=T0,
    )
    seen = Observation(
        subject=TARGET, capability="service.status", fields={"state": "running"}, at=T0
    )
    moved = []
    for _ in range(3):
        found = conclusion(seen, [believed])
        assert found is not None
        assert not found.supports
        moved.append(found.changes)
        believed = believed.model_copy(update={"confidence": found.after})
    assert moved == [True, True, False]  # 0.99, then 0.44, then settled at 0.01
    assert found.facts == {"belief": statement.casefold(), "supports": False, "to": 0.01}
    assert conclusion(seen, []) is None  # never believed degraded: no news


# -- the cut ------------------------------------------------------------------------------------


def test_a_series_is_cut_every_cut_period_while_it_grows() -> None:
    every = CUT_EVERY // MINUTE
    current = series_of(look(T0))
    cuts = []
    for minute in range(1, 3 * every + 1):
        step = recorded(current, look(T0 + minute * MINUTE))
        cuts += [(minute, row) for row in step.rows]
        current = step.series
    assert [minute for minute, _ in cuts] == [every, 2 * every, 3 * every]
    minute, row = cuts[0]
    assert row.type == SERIES_CUT
    assert (row.payload["count"], row.payload["sinceCut"]) == (every + 1, every)
    assert cuts[1][1].payload["sinceCut"] == every
    assert current.count == 3 * every + 1
    assert current.cut_count == 3 * every + 1


def test_the_cut_is_due_by_the_clock_and_only_for_what_grew() -> None:
    current = series_of(look(T0), look(T0 + MINUTE))
    assert not cut_due(current, T0 + CUT_EVERY - timedelta(seconds=1))
    assert cut_due(current, T0 + CUT_EVERY)
    grown_nothing = current.model_copy(update={"cut_count": current.count})
    assert not cut_due(grown_nothing, T0 + 5 * CUT_EVERY)
    [closing] = ended([current], SeriesKind.OBSERVATION, set(), T0 + 2 * MINUTE)
    assert not cut_due(closing.series, T0 + 5 * CUT_EVERY)


# -- closing ------------------------------------------------------------------------------------


def test_a_look_that_differs_closes_the_series_and_is_recorded_in_full() -> None:
    current = series_of(*(look(T0 + n * MINUTE) for n in range(5)))
    changed = recorded(current, look(T0 + 5 * MINUTE, result=running(restarts=1)))
    assert not changed.routine
    assert changed.replaces == current.version
    [row] = changed.rows
    assert row.type == SERIES_CLOSED
    closed = series_from_row(row)
    assert (closed.count, closed.last_seen, closed.open) == (5, T0 + 4 * MINUTE, False)
    assert changed.series.count == 1
    assert changed.series.id != current.id
    assert changed.series.opened_by == f"key-{(T0 + 5 * MINUTE).isoformat()}"
    assert changed.series.version == current.version + 1


def test_a_series_of_one_closes_without_a_row() -> None:
    current = series_of(look(T0))
    assert recorded(current, look(T0 + MINUTE, result=running(restarts=1))).rows == ()
    [closing] = ended([current], SeriesKind.OBSERVATION, set(), T0 + MINUTE)
    assert closing.rows == ()
    assert not closing.series.open


def test_only_the_looks_not_taken_are_closed() -> None:
    kept = series_of(look(T0), look(T0 + MINUTE))
    gone = series_of(look(T0, goal="old-goal"), look(T0 + MINUTE, goal="old-goal"))
    steps = ended([kept, gone], SeriesKind.OBSERVATION, {kept.subject}, T0 + 2 * MINUTE)
    assert [s.series.subject for s in steps] == [gone.subject]
    assert [r.type for r in steps[0].rows] == [SERIES_CLOSED]
    assert ended([kept, gone], SeriesKind.CYCLE, set(), T0) == []


# -- reading it back ----------------------------------------------------------------------------


def test_a_series_reads_back_from_its_rows_and_is_told_in_one_line() -> None:
    current = series_of(*(look(T0 + n * MINUTE) for n in range(1440)))
    [row] = [r for r in recorded(current, look(T0 + 1440 * MINUTE, result=running(1))).rows]
    back = series_from_row(row)
    assert (back.id, back.count, back.first_seen) == (current.id, 1440, T0)
    assert tell(back) == (
        "observed running 1,440 times between 2026-12-08T09:00:00+00:00 and "
        "2026-12-09T08:59:00+00:00"
    )
    assert tell(current).endswith(" (open)")
    assert latest([row], []) == [back]
    newer = current.model_copy(update={"count": 1500})
    assert latest([row], [newer]) == [newer]  # the current row is never behind the journal

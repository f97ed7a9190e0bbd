"""A Mind's Ready means it works: its spec accepted, its ledger answering, its cycle keeping
time within two intervals; Degraded says which of these fails (minds.domain.mind_rules)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from minds.domain.mind_rules import (
    DEGRADED,
    READY,
    SpecProblem,
    Vitals,
    health_conditions,
    ready_condition,
    spec_accepted,
)
from minds.domain.resources.common import Condition, set_condition
from minds.domain.resources.mind import MindSpec

NOW = datetime(2026, 12, 6, 12, 0, tzinfo=UTC)
INTERVAL = timedelta(seconds=30)


def vitals(
    *,
    ledger: bool = True,
    last: timedelta | None = timedelta(0),
    since: timedelta = timedelta(hours=1),
    active: bool = True,
) -> Vitals:
    """Times are how long before NOW."""
    return Vitals(
        ledger_answers=ledger,
        last_cycle_at=None if last is None else NOW - last,
        since=NOW - since,
        interval=INTERVAL,
        active=active,
    )


def accepted(*problems: SpecProblem, active: bool = True) -> list[Condition]:
    return set_condition([], ready_condition(MindSpec(active=active), list(problems), 1, NOW))


def by_type(conditions: list[Condition]) -> dict[str, tuple[str, str]]:
    return {c.type: (c.status.value, c.reason) for c in conditions}


def test_a_mind_whose_ledger_answers_and_whose_cycle_keeps_time_is_ready() -> None:
    shown = by_type(health_conditions(accepted(), vitals(last=INTERVAL), 1, NOW))
    assert shown == {READY: ("True", "Accepted"), DEGRADED: ("False", "AsExpected")}


def test_a_ledger_that_does_not_answer_makes_it_not_ready_at_once() -> None:
    shown = by_type(health_conditions(accepted(), vitals(ledger=False), 1, NOW))
    assert shown == {READY: ("False", "LedgerUnavailable"), DEGRADED: ("True", "LedgerUnavailable")}


@pytest.mark.parametrize(
    ("last", "stalled"),
    [(2 * INTERVAL, False), (2 * INTERVAL + timedelta(seconds=1), True), (timedelta(days=1), True)],
)
def test_a_cycle_more_than_two_intervals_ago_is_stalled(last: timedelta, stalled: bool) -> None:
    conditions = health_conditions(accepted(), vitals(last=last), 1, NOW)
    ready = next(c for c in conditions if c.type == READY)
    assert (ready.status.value, ready.reason) == (
        ("False", "CycleStalled") if stalled else ("True", "Accepted")
    )
    if stalled:
        # Since the later of the last cycle and the clock's start (an hour ago here).
        start = NOW - min(last, timedelta(hours=1))
        assert f"no cycle completed since {start.isoformat()}" in ready.message


def test_a_mind_with_no_cycle_yet_has_two_intervals_from_creation_or_the_controllers_start() -> (
    None
):
    young = vitals(last=None, since=2 * INTERVAL)
    assert by_type(health_conditions(accepted(), young, 1, NOW))[READY] == ("True", "Accepted")
    old = vitals(last=None, since=3 * INTERVAL)
    assert by_type(health_conditions(accepted(), old, 1, NOW))[READY] == ("False", "CycleStalled")
    # A cycle before the controller started does not count against the controller.
    restarted = vitals(last=timedelta(days=1), since=INTERVAL)
    assert by_type(health_conditions(accepted(), restarted, 1, NOW))[READY] == ("True", "Accepted")


def test_a_refused_spec_stays_not_ready_with_its_problems_and_is_degraded_for_it() -> None:
    problem = SpecProblem("spec.lockedCapabilities[0]", "unknown capability 'x.y'")
    conditions = health_conditions(accepted(problem), vitals(), 1, NOW)
    assert by_type(conditions) == {
        READY: ("False", "InvalidSpec"),
        DEGRADED: ("True", "SpecRejected"),
    }
    assert str(problem) in next(c for c in conditions if c.type == DEGRADED).message
    assert not spec_accepted([c.to_k8s() for c in conditions])


def test_a_spec_accepted_again_starts_the_cycles_clock() -> None:
    """Its cycle is woken by the change: the cycle before the refusal is no stall."""
    problem = SpecProblem("spec.model.endpoint", "not a model endpoint")
    refused = health_conditions(accepted(problem), vitals(last=timedelta(days=1)), 1, NOW)
    fixed = set_condition(refused, ready_condition(MindSpec(), [], 2, NOW))
    healed = health_conditions(fixed, vitals(last=timedelta(days=1)), 2, NOW)
    assert by_type(healed)[READY] == ("True", "Accepted")
    later = NOW + 2 * INTERVAL + timedelta(seconds=1)
    stale = Vitals(True, NOW - timedelta(days=1), NOW - timedelta(hours=1), INTERVAL, True)
    assert by_type(health_conditions(healed, stale, 2, later))[READY] == ("False", "CycleStalled")


def test_a_mind_not_ready_for_its_ledger_or_its_cycle_still_counts_as_accepted() -> None:
    """Its cycle must keep running: a cycle that completes is what makes it Ready again."""
    for v in (vitals(ledger=False), vitals(last=timedelta(days=1))):
        conditions = health_conditions(accepted(), v, 1, NOW)
        assert by_type(conditions)[READY][0] != "True"
        assert spec_accepted([c.to_k8s() for c in conditions])
    assert not spec_accepted([])


def test_an_inactive_mind_is_ready_as_inactive() -> None:
    shown = by_type(health_conditions(accepted(active=False), vitals(active=False), 1, NOW))
    assert shown[READY] == ("True", "Inactive")


def test_the_transition_time_moves_only_when_the_status_does() -> None:
    first = health_conditions(accepted(), vitals(), 1, NOW)
    later = NOW + timedelta(seconds=10)
    again = health_conditions(first, vitals(last=timedelta(0)), 1, later)
    assert [c.last_transition_time for c in again] == [NOW, NOW]
    down = health_conditions(again, vitals(ledger=False), 1, later)
    assert {c.type: c.last_transition_time for c in down} == {READY: later, DEGRADED: later}

"""A recurring `do` commitment (`everySeconds`) acts once per due period."""

from __future__ import annotations

from collections import Counter
from datetime import datetime, timedelta
from pathlib import Path

import pytest
import yaml
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from pydantic import ValidationError

from minds.domain.resources.mind import Commitment
from minds.domain.volition.commitments import (
    OVERDUE_GRACE,
    CommitmentContext,
    CommitmentState,
    commitment_state,
    due_at,
)
from tests.unit.volition.builders import T0, a_spec
from tests.unit.volition.simulator import Simulation, Spell

DAY = timedelta(days=1)
CYCLE = timedelta(minutes=5)


def nightly(every: timedelta = DAY, due: datetime = T0) -> dict[str, object]:
    return {
        "name": "nightly-restart",
        "mode": "do",
        "capability": "service.restart",
        "target": "ops/atlas-worker",
        "due": due.isoformat(),
        "everySeconds": int(every.total_seconds()),
    }


def state(now: datetime, fulfilled_at: datetime | None = None) -> CommitmentState:
    spec = a_spec(commitments=[nightly()])
    recorded = {} if fulfilled_at is None else {"nightly-restart": CommitmentState.FULFILLED}
    at = {} if fulfilled_at is None else {"nightly-restart": fulfilled_at}
    context = CommitmentContext(spec=spec, recorded=recorded, fulfilled_at=at)
    return commitment_state(spec.commitments[0], now, context).state


def test_due_at_is_the_start_of_the_period_now_falls_in() -> None:
    c = Commitment.model_validate(nightly())
    assert due_at(c, T0 - CYCLE) == T0
    assert due_at(c, T0) == T0
    assert due_at(c, T0 + DAY - CYCLE) == T0
    assert due_at(c, T0 + 3 * DAY + CYCLE) == T0 + 3 * DAY
    one_off = Commitment.model_validate({**nightly(), "everySeconds": None})
    assert due_at(one_off, T0 + 3 * DAY) == T0


def test_a_fulfilment_holds_until_the_first_period_start_after_it() -> None:
    assert state(T0 + DAY - CYCLE, fulfilled_at=T0) is CommitmentState.FULFILLED
    assert state(T0 + DAY, fulfilled_at=T0) is CommitmentState.DUE
    assert state(T0 + DAY + OVERDUE_GRACE, fulfilled_at=T0) is CommitmentState.OVERDUE
    # Fulfilled just before a period starts: that period is due at its start.
    assert state(T0 + DAY, fulfilled_at=T0 + DAY - CYCLE) is CommitmentState.DUE
    # A plan that ran past the period's end kept the period it ended in, not the next one.
    late = T0 + DAY + 2 * CYCLE
    assert state(T0 + 2 * DAY - CYCLE, fulfilled_at=late) is CommitmentState.FULFILLED
    assert state(T0 + 2 * DAY, fulfilled_at=late) is CommitmentState.DUE
    # A fulfilment before the first due time keeps no period.
    assert state(T0 - CYCLE, fulfilled_at=T0 - DAY) is CommitmentState.ACTIVE
    assert state(T0, fulfilled_at=T0 - DAY) is CommitmentState.DUE


def test_the_reason_names_the_period_kept_and_the_next_start() -> None:
    spec = a_spec(commitments=[nightly()])
    context = CommitmentContext(
        spec=spec,
        recorded={"nightly-restart": CommitmentState.FULFILLED},
        fulfilled_at={"nightly-restart": T0 + DAY + CYCLE},
    )
    reason = commitment_state(spec.commitments[0], T0 + DAY + 2 * CYCLE, context).reason
    assert reason == (
        f"fulfilled for the period from {(T0 + DAY).isoformat()}; "
        f"due again at {(T0 + 2 * DAY).isoformat()}"
    )


def test_a_one_off_commitment_stays_fulfilled() -> None:
    spec = a_spec(commitments=[{**nightly(), "everySeconds": None}])
    context = CommitmentContext(
        spec=spec,
        recorded={"nightly-restart": CommitmentState.FULFILLED},
        fulfilled_at={"nightly-restart": T0},
    )
    assert commitment_state(spec.commitments[0], T0 + 30 * DAY, context).state is (
        CommitmentState.FULFILLED
    )


def test_a_recurring_commitment_kept_for_its_period_is_still_a_live_promise() -> None:
    # An absolute refrain on the same means conflicts with it between periods too; a one-off
    # do that is fulfilled is over and conflicts with nothing.
    never = {
        "name": "never-restart",
        "mode": "refrain",
        "capability": "service.restart",
        "target": "ops/atlas-worker",
    }
    for every, expected in ((DAY, CommitmentState.CONFLICTING), (None, CommitmentState.ACTIVE)):
        do = {**nightly(), "everySeconds": int(every.total_seconds()) if every else None}
        spec = a_spec(commitments=[do, never])
        context = CommitmentContext(
            spec=spec,
            recorded={"nightly-restart": CommitmentState.FULFILLED},
            fulfilled_at={"nightly-restart": T0 + CYCLE},
        )
        assert commitment_state(spec.commitments[1], T0 + 2 * CYCLE, context).state is expected


@pytest.mark.parametrize("seconds", [59, 366 * 86400 + 1])
def test_a_period_is_a_minute_to_a_leap_year(seconds: int) -> None:
    with pytest.raises(ValidationError, match="everySeconds"):
        Commitment.model_validate(nightly(every=timedelta(seconds=seconds)))
    assert Commitment.model_validate(nightly(every=timedelta(seconds=60))).every_seconds == 60


def test_the_crd_refuses_a_period_without_do_and_due_naming_the_field() -> None:
    crd = yaml.safe_load((Path(__file__).parents[3] / "crds" / "minds.minds.dev.yaml").read_text())
    spec = crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]
    commitment = spec["properties"]["commitments"]["items"]
    rule = next(
        r for r in commitment["x-kubernetes-validations"] if r.get("fieldPath") == ".everySeconds"
    )
    assert rule["rule"] == "!has(self.everySeconds) || (self.mode == 'do' && has(self.due))"
    assert "everySeconds" in rule["message"]
    every = commitment["properties"]["everySeconds"]
    assert (every["minimum"], every["maximum"]) == (60, 366 * 86400)
    assert "acts once per period" in every["description"]


def periods_of(sim: Simulation, every: timedelta) -> Counter[int]:
    return Counter((at - T0) // every for _, at in sim.acts)


@settings(max_examples=40, deadline=None)
@given(
    minutes=st.sampled_from([1, 15, 60, 6 * 60, 24 * 60]),
    n=st.integers(1, 6),
    takes=st.floats(0.0, 0.8),
    cycle=st.sampled_from([timedelta(seconds=5), timedelta(minutes=1), timedelta(minutes=5)]),
)
def test_n_periods_give_exactly_n_acts_also_when_the_plan_is_slow(
    minutes: int, n: int, takes: float, cycle: timedelta
) -> None:
    every = timedelta(minutes=minutes)
    # A period of a cycle or two leaves a plan no room; more than 300 cycles a period adds
    # nothing but time.
    assume(4 * cycle <= every <= 300 * cycle)
    sim = Simulation(
        spec=a_spec(commitments=[nightly(every)]),
        spells=(),
        restart_heals=True,
        # The plan ends within its period, however the cycles fall.
        act_takes=min(every * takes, every - 2 * cycle),
    )
    sim.run(T0, n * every / DAY, cycle)
    assert periods_of(sim, every) == Counter(range(n))
    assert sim.acts_for["nightly-restart"] == n


def test_a_period_missed_while_a_plan_ran_long_is_not_made_up() -> None:
    # Each act ends half an hour into the next period: that period is kept by it, and the
    # next act waits for the period after, so no two restarts run back to back.
    every = timedelta(hours=6)
    sim = Simulation(
        spec=a_spec(commitments=[nightly(every)]),
        spells=(),
        restart_heals=True,
        act_takes=every + timedelta(minutes=30),
    )
    sim.run(T0, 2, CYCLE)
    assert periods_of(sim, every) == Counter([0, 2, 4, 6])


@settings(max_examples=40, deadline=None)
@given(start=st.integers(0, 3 * 24 * 60), length=st.integers(5, 36 * 60))
def test_a_failing_act_is_tried_once_in_its_period_and_never_twice(start: int, length: int) -> None:
    failing = Spell(T0 + timedelta(minutes=start), timedelta(minutes=length))
    sim = Simulation(
        spec=a_spec(commitments=[nightly()]), spells=(), restart_heals=True, failing=(failing,)
    )
    sim.run(T0, 5, CYCLE)
    counted = periods_of(sim, DAY)
    assert max(counted.values()) == 1
    # Every period up to the first failure acted once; after it the mind does not restart
    # again while the failure is remembered, and tells a person at most once.
    first_failed = min((at for _, at in sim.acts if failing.covers(at)), default=None)
    before = range((first_failed - T0) // DAY + 1 if first_failed else 5)
    assert all(counted[p] == 1 for p in before)
    if first_failed is not None:
        assert not [at for _, at in sim.acts if first_failed < at < first_failed + DAY]
        assert sum(sim.escalations.values()) <= 1

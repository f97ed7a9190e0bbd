"""A recurring `do` commitment (`everySeconds`) acts once per due period."""

from __future__ import annotations

from collections import Counter
from datetime import datetime, timedelta
from pathlib import Path

import pytest
import yaml
from hypothesis import given, settings
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


def test_a_fulfilment_holds_for_its_period_only() -> None:
    assert state(T0 + DAY - CYCLE, fulfilled_at=T0) is CommitmentState.FULFILLED
    assert state(T0 + DAY, fulfilled_at=T0) is CommitmentState.DUE
    assert state(T0 + DAY + OVERDUE_GRACE, fulfilled_at=T0) is CommitmentState.OVERDUE
    # An act formed before the first due time keeps no period.
    assert state(T0 - CYCLE, fulfilled_at=T0 - DAY) is CommitmentState.ACTIVE
    assert state(T0, fulfilled_at=T0 - DAY) is CommitmentState.DUE


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


def test_a_period_is_at_least_an_hour() -> None:
    with pytest.raises(ValidationError, match="everySeconds"):
        Commitment.model_validate(nightly(every=timedelta(minutes=59)))


def test_the_crd_refuses_a_period_without_do_and_due_naming_the_field() -> None:
    crd = yaml.safe_load((Path(__file__).parents[3] / "crds" / "minds.minds.dev.yaml").read_text())
    spec = crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]
    commitment = spec["properties"]["commitments"]["items"]
    rule = next(
        r for r in commitment["x-kubernetes-validations"] if r.get("fieldPath") == ".everySeconds"
    )
    assert "self.mode == 'do'" in rule["rule"]
    assert "has(self.due)" in rule["rule"]
    every = commitment["properties"]["everySeconds"]
    assert every["minimum"] == 3600
    assert "acts once per period" in every["description"]


def periods_of(sim: Simulation, every: timedelta) -> Counter[int]:
    return Counter((at - T0) // every for _, at in sim.acts)


@settings(max_examples=25, deadline=None)
@given(
    hours=st.sampled_from([1, 6, 24]),
    days=st.integers(1, 4),
    takes=st.floats(0.0, 0.8),
)
def test_n_periods_give_exactly_n_acts_also_when_the_plan_is_slow(
    hours: int, days: int, takes: float
) -> None:
    every = timedelta(hours=hours)
    sim = Simulation(
        spec=a_spec(commitments=[nightly(every)]),
        spells=(),
        restart_heals=True,
        act_takes=every * takes,
    )
    sim.run(T0, days, CYCLE)
    periods = days * DAY // every
    assert periods_of(sim, every) == Counter(range(periods))
    assert sim.acts_for["nightly-restart"] == periods


def test_a_plan_slower_than_its_period_acts_for_the_next_period_on_time() -> None:
    # Each act ends half an hour into the next period, which still gets its own act, once
    # (the want the late act satisfied yields to the new period instead of holding on).
    every = timedelta(hours=6)
    sim = Simulation(
        spec=a_spec(commitments=[nightly(every)]),
        spells=(),
        restart_heals=True,
        act_takes=every + timedelta(minutes=30),
    )
    sim.run(T0, 2, CYCLE)
    assert periods_of(sim, every) == Counter(range(8))


@settings(max_examples=25, deadline=None)
@given(start=st.integers(0, 3 * 24 * 60), length=st.integers(5, 36 * 60))
def test_a_failing_act_never_acts_twice_in_one_period(start: int, length: int) -> None:
    sim = Simulation(
        spec=a_spec(commitments=[nightly()]),
        spells=(),
        restart_heals=True,
        failing=(Spell(T0 + timedelta(minutes=start), timedelta(minutes=length)),),
    )
    sim.run(T0, 5, CYCLE)
    counted = periods_of(sim, DAY)
    assert max(counted.values()) == 1
    assert sum(counted.values()) <= 5

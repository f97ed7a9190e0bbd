"""The mind's rules over simulated days: every act is bounded per want, commitment and workload."""

from __future__ import annotations

from datetime import timedelta

from hypothesis import example, given, settings
from hypothesis import strategies as st

from minds.domain.volition.lapse import LAPSE_AFTER
from tests.unit.volition.builders import T0, a_spec
from tests.unit.volition.simulator import Simulation, Spell

DAYS = 3

spells = st.lists(
    st.tuples(st.integers(0, DAYS * 24 * 60 - 1), st.integers(1, 36 * 60)),
    max_size=4,
).map(
    lambda raw: tuple(
        Spell(T0 + timedelta(minutes=start), timedelta(minutes=length))
        for start, length in sorted(raw)
    )
)


def the_mind(commitment_due_minutes: int | None, asked: bool):  # type: ignore[no-untyped-def]
    fields: dict[str, object] = {}
    if commitment_due_minutes is not None:
        fields["commitments"] = [
            {
                "name": "nightly-restart",
                "mode": "do",
                "capability": "service.restart",
                "target": "ops/atlas-worker",
                "due": (T0 + timedelta(minutes=commitment_due_minutes)).isoformat(),
            }
        ]
    if asked:
        fields["requests"] = [
            {
                "name": "q1",
                "text": "is atlas-worker keeping up?",
                "subject": {"name": "atlas-worker"},
            }
        ]
    return a_spec(**fields)


@settings(max_examples=50, deadline=None)
@given(
    spells=spells,
    heals=st.booleans(),
    due=st.none() | st.integers(0, DAYS * 24 * 60),
    asked=st.booleans(),
    operator=st.none() | st.tuples(st.integers(0, DAYS * 24 * 60), st.integers(1, 12 * 60)),
    every=st.sampled_from([1, 5, 15]),
)
# Found by this test: a world change fulfilled an intention after settlement, and the
# commitment's want formed a second restart in the same cycle.
@example(
    spells=(Spell(T0, timedelta(minutes=1)),),
    heals=False,
    due=0,
    asked=False,
    operator=None,
    every=1,
)
def test_nothing_repeats_by_itself(  # type: ignore[no-untyped-def]
    spells, heals, due, asked, operator, every
) -> None:
    window = None
    if operator is not None:
        start = T0 + timedelta(minutes=operator[0])
        window = (start, start + timedelta(minutes=operator[1]))
    sim = Simulation(
        spec=the_mind(due, asked), spells=spells, restart_heals=heals, operator_window=window
    )
    sim.run(T0, days=DAYS, every=timedelta(minutes=every))

    # Per want: one intention for one situation (a spell of the workload, or none).
    assert max(sim.formed.values(), default=0) <= 1
    # Per commitment: a due commitment acts once.
    assert max(sim.acts_for.values(), default=0) <= 1
    # Per request: one investigation.
    assert sim.looks_for["request:q1"] <= 1
    # Per workload: at most one restart for each spell it is broken, and none while a person's
    # plan already acts on it.
    assert all(n <= 1 for spell, n in sim.restarts.items() if spell >= 0)
    # An escalation nobody answers lapses after a day; if the spell goes on, the mind tells a
    # person again (it never restarts again while the failure is remembered).
    for index, n in sim.escalations.items():
        if index >= 0:
            assert n <= 1 + spells[index].length // LAPSE_AFTER
    assert sim.restarts_while_covered == 0


def test_a_refuted_restart_escalates_once_and_is_not_repeated_over_days() -> None:
    broken = (Spell(T0, timedelta(days=DAYS)),)
    sim = Simulation(spec=the_mind(None, False), spells=broken, restart_heals=False)
    sim.run(T0, days=DAYS, every=timedelta(minutes=1))
    assert sim.restarts == {0: 1}
    assert sim.escalations == {0: 1}


def test_a_due_commitment_acts_once_per_due_time() -> None:
    sim = Simulation(spec=the_mind(30, False), spells=(), restart_heals=True)
    sim.run(T0, days=DAYS, every=timedelta(minutes=5))
    assert sim.acts_for == {"nightly-restart": 1}


def test_one_question_one_investigation() -> None:
    sim = Simulation(spec=the_mind(None, True), spells=(), restart_heals=True)
    sim.run(T0, days=1, every=timedelta(minutes=1))
    assert sim.looks_for == {"request:q1": 1}


def test_an_operator_plan_on_the_workload_keeps_the_mind_from_restarting_it() -> None:
    broken = (Spell(T0, timedelta(hours=2)),)
    window = (T0, T0 + timedelta(hours=3))
    sim = Simulation(
        spec=the_mind(None, False), spells=broken, restart_heals=True, operator_window=window
    )
    sim.run(T0, days=1, every=timedelta(minutes=1))
    assert sum(sim.restarts.values()) == 0

"""The mind over simulated days: its own cycle and executor (see `simulator`), a world that
breaks and heals, people who approve, reject, let expire and cancel. Every act is bounded per
want, per commitment and per workload."""

from __future__ import annotations

from collections import Counter
from datetime import timedelta
from itertools import pairwise
from typing import Any

from hypothesis import HealthCheck, Phase, example, given, settings
from hypothesis import strategies as st

from minds.domain.planning.model import Strategy
from minds.domain.resources.kinds import PLAN
from minds.domain.resources.mind import MindSpec
from minds.domain.volition.lapse import LAPSE_AFTER
from tests.unit.volition.builders import NS, T0, a_spec
from tests.unit.volition.simulator import People, Simulation, Spell

DAYS = 3

spells = st.lists(
    st.tuples(st.integers(0, DAYS * 24 * 60 - 1), st.integers(1, 36 * 60)),
    max_size=3,
).map(
    lambda raw: tuple(
        Spell(T0 + timedelta(minutes=start), timedelta(minutes=length))
        for start, length in sorted(raw)
    )
)

people = st.builds(
    People,
    decision=st.sampled_from(["Approved", "Denied", None]),
    answer_after=st.sampled_from([timedelta(minutes=2), timedelta(hours=3)]),
    cancel_after=st.none() | st.sampled_from([timedelta(minutes=1), timedelta(hours=2)]),
)


def the_mind(commitment_due_minutes: int | None, asked: bool, restart: str = "allow") -> MindSpec:
    """A keeper of atlas-worker. ``restart``: its policy for restarts ("allow", "approve");
    reading logs is denied, so an escalation never waits for a grant."""
    fields: dict[str, Any] = {
        "capabilityPolicy": [
            {"capability": "service.restart", "decision": restart},
            {"capability": "logs.query", "decision": "deny"},
        ],
        "budget": {"invocations": 1000},
    }
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


def bounded(sim: Simulation) -> None:
    """What must hold after any simulated days."""
    # Every ended intention is settled by the next cycle (its want satisfied or suppressed,
    # its commitment fulfilled): nothing waits on an intention that is over.
    assert sim.unsettled == [], sim.unsettled
    # Per want: one intention for one situation (an incident of the workload, or none).
    assert max(sim.formed.values(), default=0) <= 1, sim.formed
    # Per commitment: a due commitment acts once.
    assert max(sim.acts_for.values(), default=0) <= 1, sim.acts_for
    # Per request: one investigation.
    assert sim.looks_for["request:q1"] <= 1, sim.looks_for
    # Per workload: at most one restart of the mind's for each spell it is broken, and none
    # while a person's plan is open on it.
    assert all(n <= 1 for spell, n in sim.restarts.items() if spell >= 0), sim.restarts
    assert sim.restarts_while_covered == 0
    # An escalation nobody answers lapses after a day; if the spell goes on, the mind may tell
    # a person again (it never restarts again while the failure is remembered).
    for index, n in sim.escalations.items():
        if index >= 0:
            assert n <= 1 + sim.spells[index].length // LAPSE_AFTER, sim.escalations
    # Per Approval: a person is asked once per restart the mind plans.
    assert sim.asked <= sim.planned_restarts, (sim.asked, sim.planned_restarts)


@settings(
    max_examples=8,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
    # Each example is days of a mind: shrinking one would take longer than finding it.
    phases=[Phase.explicit, Phase.reuse, Phase.generate],
)
@given(
    spells=spells,
    heals=st.booleans(),
    due=st.none() | st.integers(0, DAYS * 24 * 60),
    asked=st.booleans(),
    operator=st.none() | st.tuples(st.integers(0, DAYS * 24 * 60), st.integers(1, 12 * 60)),
    restart=st.sampled_from(["allow", "approve"]),
    them=people,
    every=st.sampled_from([15, 30]),
)
# Found by the simulation of the pure rules: a world change fulfilled an intention after
# settlement, and the commitment's want formed a second restart in the same cycle.
@example(
    spells=(Spell(T0, timedelta(minutes=1)),),
    heals=False,
    due=0,
    asked=False,
    operator=None,
    restart="allow",
    them=People(),
    every=10,
)
# A restart that acted was cancelled before its check: its strategy was not remembered as
# failed, and a finding about the still-broken workload restarted it again in the same spell.
@example(
    spells=(Spell(T0 + timedelta(minutes=4000), timedelta(minutes=116)),),
    heals=False,
    due=None,
    asked=False,
    operator=None,
    restart="allow",
    them=People(
        decision=None,
        answer_after=timedelta(seconds=120),
        cancel_after=timedelta(seconds=60),
    ),
    every=15,
)
def test_nothing_repeats_by_itself(  # type: ignore[no-untyped-def]
    spells, heals, due, asked, operator, restart, them, every
) -> None:
    window = None
    if operator is not None:
        start = T0 + timedelta(minutes=operator[0])
        window = (start, start + timedelta(minutes=operator[1]))
    sim = Simulation(
        spec=the_mind(due, asked, restart),
        spells=spells,
        restart_heals=heals,
        operator_window=window,
        people=them,
    )
    sim.run(T0, days=DAYS, every=timedelta(minutes=every))
    bounded(sim)


def test_a_refuted_restart_escalates_once_and_is_not_repeated_over_days() -> None:
    broken = (Spell(T0, timedelta(days=DAYS)),)
    sim = Simulation(spec=the_mind(None, False), spells=broken, restart_heals=False)
    sim.run(T0, days=DAYS, every=timedelta(minutes=10))
    assert sim.restarts == {0: 1}
    # A person is told at once; an escalation nobody answered lapses after a day, and the
    # workload, still broken, is told of again: never more often than once a lapse.
    told = sorted(
        sim.seen[(PLAN.plural, b["metadata"]["name"])]
        for b in sim.resources.list(PLAN, NS)
        if b["spec"].get("strategy") == Strategy.DIAGNOSE_THEN_ESCALATE.value
    )
    assert told
    assert told[0] - T0 < timedelta(hours=1)
    assert all(later - earlier >= LAPSE_AFTER for earlier, later in pairwise(told))
    bounded(sim)


def test_a_refuted_restart_is_remembered_when_a_commitment_asks_for_another() -> None:
    """The restart did not heal and its intention lapsed; a commitment to restart falls due in
    the same spell: the failure remembered for the workload makes the mind tell a person
    instead of restarting it a second time."""
    broken = (Spell(T0, timedelta(days=DAYS)),)
    sim = Simulation(spec=the_mind(30 * 60, False), spells=broken, restart_heals=False)
    sim.run(T0, days=DAYS, every=timedelta(minutes=15))
    assert sim.restarts == {0: 1}
    assert sim.acts_for == {}
    bounded(sim)


def test_a_restart_that_heals_ends_the_spell_with_one_restart() -> None:
    broken = (Spell(T0 + timedelta(hours=1), timedelta(days=1)),)
    sim = Simulation(spec=the_mind(None, False), spells=broken, restart_heals=True)
    sim.run(T0, days=DAYS, every=timedelta(minutes=10))
    assert sim.restarts == {0: 1}
    assert sim.escalations == {}
    bounded(sim)


def test_a_due_commitment_acts_once_per_due_time() -> None:
    sim = Simulation(spec=the_mind(30, False), spells=(), restart_heals=True)
    sim.run(T0, days=DAYS, every=timedelta(minutes=10))
    assert sim.acts_for == {"nightly-restart": 1}
    assert sim.commitments["nightly-restart"].value == "fulfilled"


def test_a_recurring_commitment_acts_once_per_period() -> None:
    spec = the_mind(0, False).to_k8s()
    spec["commitments"][0]["everySeconds"] = 6 * 3600
    sim = Simulation(spec=MindSpec.model_validate(spec), spells=(), restart_heals=True)
    sim.run(T0, days=2, every=timedelta(minutes=10))
    periods = Counter((at - T0) // timedelta(hours=6) for at, *_ in sim._restarts())
    assert periods == Counter(range(8))
    assert sim.acts_for == {"nightly-restart": 8}
    assert sim.unsettled == []


def test_one_question_one_investigation() -> None:
    sim = Simulation(spec=the_mind(None, True), spells=(), restart_heals=True)
    sim.run(T0, days=1, every=timedelta(minutes=5))
    assert sim.looks_for == {"request:q1": 1}


def test_an_operator_plan_on_the_workload_keeps_the_mind_from_restarting_it() -> None:
    broken = (Spell(T0, timedelta(hours=2)),)
    window = (T0, T0 + timedelta(hours=3))
    sim = Simulation(
        spec=the_mind(None, False), spells=broken, restart_heals=True, operator_window=window
    )
    sim.run(T0, days=1, every=timedelta(minutes=5))
    assert sum(sim.restarts.values()) == 0
    assert sim.operator_restarts == 1

"""Nothing repeats by itself: settlement, remembered failures, coverage, capacity and lapse."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest

from minds.domain.capabilities.registry import REGISTRY
from minds.domain.intentions import IntentionKind, IntentionRecord, IntentionStatus
from minds.domain.planning.model import Plan, PlanOrigin
from minds.domain.resources.kinds import APPROVAL
from minds.domain.volition.commitments import CommitmentState
from minds.domain.volition.coverage import OpenPlan, covering, open_plan
from minds.domain.volition.decisions import DecisionKind
from minds.domain.volition.formation import DEFAULT_CAPACITY, NotFormed, form
from minds.domain.volition.lapse import LAPSE_AFTER, acting, lapse
from minds.domain.volition.settlement import (
    FAILURE_MEMORY,
    answering,
    remembered_failures,
    serving,
    settle,
)
from minds.domain.volition.wants import (
    SUPPRESSION_PERIOD,
    Want,
    WantOrigin,
    WantStatus,
    held,
    want_id,
)
from tests.unit.volition.builders import (
    ATLAS,
    MIND,
    NS,
    T0,
    a_spec,
    a_want,
    an_intention,
    derive,
    seen,
)
from tests.unit.volition.simulator import People, Simulation, Spell
from tests.unit.volition.test_over_days import the_mind

LATER = T0 + timedelta(minutes=5)


def ended(status: IntentionStatus, **fields: object) -> IntentionRecord:
    base: dict[str, object] = {
        "status": status,
        "means_capability": "service.restart",
        "reason": "plan completed" if status is IntentionStatus.FULFILLED else "replan limit",
    }
    return an_intention(**{**base, **fields})


# -- settlement ---------------------------------------------------------------------------------


def test_a_fulfilled_intention_satisfies_its_want_and_holds_it() -> None:
    want = serving(a_want(), "int-1")
    settled = settle(want, ended(IntentionStatus.FULFILLED), LATER)
    assert settled is not None
    assert settled.want.status is WantStatus.SATISFIED
    assert settled.want.intention is None  # settled once
    assert held(settled.want)
    assert [d.kind for d in settled.decisions] == [DecisionKind.SATISFACTION]
    assert settled.commitment is None


def test_a_fulfilled_act_fulfils_the_commitment_it_carried() -> None:
    want = serving(a_want(origin=WantOrigin.DUE_COMMITMENT, commitment="nightly"), "int-1")
    settled = settle(want, ended(IntentionStatus.FULFILLED), LATER)
    assert settled is not None
    assert settled.commitment is not None
    assert settled.commitment.name == "nightly"
    assert settled.commitment.state is CommitmentState.FULFILLED
    kinds = [d.kind for d in settled.decisions]
    assert kinds == [DecisionKind.SATISFACTION, DecisionKind.COMMITMENT_STATE]


def test_looking_does_not_fulfil_a_commitment() -> None:
    want = serving(a_want(commitment="nightly", means=None), "int-1")
    look = ended(IntentionStatus.FULFILLED, means_capability=None, kind=IntentionKind.INVESTIGATION)
    settled = settle(want, look, LATER)
    assert settled is not None
    assert settled.commitment is None


def test_an_abandoned_intention_suppresses_its_want_and_remembers_what_failed() -> None:
    want = serving(a_want(), "int-1")
    settled = settle(want, ended(IntentionStatus.ABANDONED, failed_strategies=["direct"]), LATER)
    assert settled is not None
    after = settled.want
    assert after.status is WantStatus.SUPPRESSED
    assert after.suppressed_until == LATER + SUPPRESSION_PERIOD
    assert after.failed_strategies == ("direct",)
    assert after.failed_until == LATER + FAILURE_MEMORY
    assert after.intention is None
    assert settled.decisions[0].subjects["intention"] == "int-1"
    assert remembered_failures([after], ATLAS, LATER + FAILURE_MEMORY / 2) == ("direct",)
    assert remembered_failures([after], ATLAS, LATER + FAILURE_MEMORY) == ()
    assert remembered_failures([after], "ops/other", LATER) == ()


@pytest.mark.parametrize(
    "status",
    [
        IntentionStatus.ACTIVE,
        IntentionStatus.BLOCKED,
        IntentionStatus.SUSPENDED,
        IntentionStatus.OUTCOME_UNVERIFIED,
    ],
)
def test_a_live_intention_settles_nothing(status: IntentionStatus) -> None:
    assert settle(serving(a_want(), "int-1"), an_intention(status=status), LATER) is None


def test_settling_an_intention_the_want_does_not_name_is_refused() -> None:
    with pytest.raises(ValueError, match="not served"):
        settle(a_want(), ended(IntentionStatus.FULFILLED), LATER)


def test_a_held_want_is_not_reactivated_while_its_situation_persists() -> None:
    spec = a_spec()
    first = derive(spec, [seen("degraded", T0)], now=T0).wants[0]
    settled = settle(serving(first, "int-1"), ended(IntentionStatus.FULFILLED), LATER)
    assert settled is not None
    # Still degraded, newer evidence: nothing moves (no second restart for the same spell).
    after = LATER + timedelta(minutes=1)
    again = derive(spec, [seen("degraded", after)], [settled.want], now=after)
    assert again.wants == ()
    # Seen running: the hold is released, and a new break is a new situation.
    released = derive(spec, [seen("running", LATER)], [settled.want], now=LATER)
    assert len(released.wants) == 1
    assert not held(released.wants[0])
    broken = LATER + timedelta(minutes=5)
    anew = derive(spec, [seen("degraded", broken)], list(released.wants), now=broken)
    assert [w.status for w in anew.wants] == [WantStatus.ACTIVE]


def test_without_the_hold_the_same_situation_reactivates_the_want() -> None:
    """The rule the hold enforces: a satisfied want with no hold is reactivated by new
    evidence of the same spell."""
    spec = a_spec()
    first = derive(spec, [seen("degraded", T0)], now=T0).wants[0]
    settled = settle(serving(first, "int-1"), ended(IntentionStatus.FULFILLED), LATER)
    assert settled is not None
    unheld = settled.want.model_copy(update={"fulfilled_by": None})
    after = LATER + timedelta(minutes=1)
    again = derive(spec, [seen("degraded", after)], [unheld], now=after)
    assert [w.status for w in again.wants] == [WantStatus.ACTIVE]


def test_a_request_is_investigated_once() -> None:
    spec = a_spec(goals=[], requests=[{"name": "q1", "text": "is atlas-worker keeping up?"}])
    want = derive(spec, now=T0).wants[0]
    assert want.origin is WantOrigin.REQUEST
    look = ended(IntentionStatus.FULFILLED, means_capability=None, kind=IntentionKind.INVESTIGATION)
    settled = settle(serving(want, look.id), look, LATER)
    assert settled is not None
    for minutes in (10, 60, 600):
        assert derive(spec, [], [settled.want], now=T0 + timedelta(minutes=minutes)).wants == ()


def looked(subject: str = ATLAS, **fields: object) -> IntentionRecord:
    base: dict[str, object] = {
        "status": IntentionStatus.FULFILLED,
        "kind": IntentionKind.INVESTIGATION,
        "means_capability": None,
        "subject": subject,
        "reason": "the goal is complete",
        "updated_at": LATER,
    }
    return an_intention(**{**base, **fields})


def test_one_investigation_answers_every_want_to_look_at_its_subject() -> None:
    other = a_want(origin=WantOrigin.CONTRADICTION, means=None)
    look = looked()
    assert answering(other, {look.id: look}) == look
    settled = settle(other, look, LATER)
    assert settled is not None
    assert settled.want.status is WantStatus.SATISFIED
    assert settled.want.fulfilled_by == look.id
    assert look.id in str(settled.decisions[0].reason)


def test_a_want_to_look_that_an_investigation_answered_is_not_formed() -> None:
    """The stalled goal's want arises after the contradiction's investigation ended, in the same
    spell: that investigation answered it."""
    spell = T0 - timedelta(minutes=20)
    stalled = a_want(
        origin=WantOrigin.GOAL_STALLED, means=None, since=spell, created_at=LATER, updated_at=LATER
    )
    look = looked(updated_at=T0)
    formation = form(stalled, a_spec(), [look], DEFAULT_CAPACITY, LATER)
    assert formation.reason is NotFormed.DUPLICATE
    assert f"investigation {look.id}" in formation.explanation
    # An investigation that ended before this spell began answered something else.
    old = looked(updated_at=spell - timedelta(minutes=1))
    assert form(stalled, a_spec(), [old], DEFAULT_CAPACITY, LATER).formed


@pytest.mark.parametrize(
    ("want", "look"),
    [
        (a_want(means=None), looked("ops/other")),
        (a_want(), looked()),  # a want to act is not answered by looking
        (a_want(origin=WantOrigin.REQUEST, means=None), looked()),  # a person's own question
        (a_want(means=None), looked(status=IntentionStatus.ABANDONED)),
        (a_want(means=None), looked(updated_at=T0 - timedelta(minutes=1))),  # before it arose
        (serving(a_want(means=None), "int-mine"), looked()),
        (a_want(means=None, status=WantStatus.SUPPRESSED), looked()),
    ],
    ids=["other subject", "act", "request", "abandoned", "earlier", "has its own", "suppressed"],
)
def test_what_an_investigation_does_not_answer(want: Want, look: IntentionRecord) -> None:
    assert answering(want, {look.id: look}) is None
    if want.intention is None:
        with pytest.raises(ValueError, match="not served"):
            settle(want, look, LATER)


# -- formation: failures, coverage, capacity ----------------------------------------------------


def test_the_next_intention_starts_with_the_failures_remembered_for_its_subject() -> None:
    formation = form(a_want(), a_spec(), [], DEFAULT_CAPACITY, T0, failed=("direct",))
    assert formation.intention is not None
    assert formation.intention.failed_strategies == ["direct"]
    assert formation.decision.inputs["failedStrategies"] == ["direct"]


def restart_plan(origin: PlanOrigin = PlanOrigin.OPERATOR, intention: str | None = None) -> Plan:
    return Plan.model_validate(
        {
            "objective": "restart atlas-worker",
            "origin": origin.value,
            "strategy": "authored" if origin is PlanOrigin.OPERATOR else "direct",
            "intention": intention,
            "steps": [
                {
                    "key": "P1",
                    "title": "restart",
                    "kind": "capability",
                    "capability": "service.restart",
                    "parameters": {"namespace": NS, "kind": "Deployment", "name": "atlas-worker"},
                }
            ],
        }
    )


def test_an_operator_plan_on_the_same_workload_covers_the_want() -> None:
    plan = open_plan("by-hand", restart_plan(), REGISTRY)
    assert plan.writes == {ATLAS}
    formation = form(a_want(), a_spec(), [], DEFAULT_CAPACITY, T0, open_plans=[plan])
    assert formation.reason is NotFormed.COVERED
    assert "by-hand" in formation.explanation
    other = plan.model_copy(update={"writes": frozenset({"ops/other"})})
    assert form(a_want(), a_spec(), [], DEFAULT_CAPACITY, T0, open_plans=[other]).formed


def test_a_read_only_plan_covers_an_investigation_but_not_an_act() -> None:
    reading = OpenPlan(name="look", origin=PlanOrigin.OPERATOR, reads=frozenset({ATLAS}))
    assert covering(ATLAS, acts=True, plans=[reading], intentions=[]) is None
    assert covering(ATLAS, acts=False, plans=[reading], intentions=[]) == reading


def test_a_plan_whose_intention_ended_covers_nothing() -> None:
    plan = open_plan("left", restart_plan(PlanOrigin.TEMPLATE, "int-9"), REGISTRY)
    gone = an_intention(id="int-9", status=IntentionStatus.ABANDONED)
    assert covering(ATLAS, True, [plan], [gone]) is None
    assert (
        covering(ATLAS, True, [plan], [gone.model_copy(update={"status": IntentionStatus.BLOCKED})])
        == plan
    )


@pytest.mark.parametrize(
    "waiting",
    [IntentionStatus.BLOCKED, IntentionStatus.SUSPENDED, IntentionStatus.OUTCOME_UNVERIFIED],
)
def test_only_intentions_that_can_act_take_capacity(waiting: IntentionStatus) -> None:
    others = [an_intention(id=f"int-{i}", subject=f"ops/w{i}", status=waiting) for i in range(3)]
    assert acting(others) == 0
    assert form(a_want(), a_spec(), others, 3, T0).formed
    # A waiting intention still holds its subject.
    same = [an_intention(status=waiting)]
    assert form(a_want(), a_spec(), same, 3, T0).reason is NotFormed.DUPLICATE


# -- lapse --------------------------------------------------------------------------------------


@pytest.mark.parametrize("status", [IntentionStatus.BLOCKED, IntentionStatus.SUSPENDED])
def test_a_waiting_intention_lapses_after_a_day(status: IntentionStatus) -> None:
    waiting = an_intention(status=status, reason="escalated")
    assert lapse(waiting, T0 + LAPSE_AFTER - timedelta(seconds=1)) is None
    lapsed = lapse(waiting, T0 + LAPSE_AFTER)
    assert lapsed is not None
    assert lapsed.intention.status is IntentionStatus.ABANDONED
    assert lapsed.decision.kind is DecisionKind.RECONSIDERATION
    assert lapsed.decision.inputs["trigger"] == "lapse"
    # Recorded once however many cycles see it.
    assert lapse(waiting, T0 + 2 * LAPSE_AFTER).decision.key == lapsed.decision.key  # type: ignore[union-attr]


@pytest.mark.parametrize(
    "intention",
    [
        an_intention(status=IntentionStatus.OUTCOME_UNVERIFIED),
        an_intention(status=IntentionStatus.ACTIVE),
        an_intention(status=IntentionStatus.BLOCKED, parent_id="int-0"),
    ],
    ids=["outcome_unverified", "active", "subordinate"],
)
def test_what_does_not_lapse(intention: IntentionRecord) -> None:
    assert lapse(intention, T0 + 10 * LAPSE_AFTER) is None


def test_a_want_id_names_its_mind() -> None:
    assert want_id(NS, MIND, ATLAS, WantOrigin.GOAL_UNMET).startswith("want-")


def test_a_want_is_not_formed_again_before_its_ended_intention_is_settled() -> None:
    """A world change may fulfil an intention after this cycle's settlement: the want it served
    waits for the next cycle's, instead of forming a second act at once."""
    waiting = serving(a_want(), "int-1")
    formation = form(waiting, a_spec(), [ended(IntentionStatus.FULFILLED)], 3, T0)
    assert formation.reason is NotFormed.DUPLICATE
    assert "int-1" in formation.explanation


# -- the mind's own cycle and executor over simulated days (see `simulator`) --------------------


def orphans(sim: Simulation) -> list[IntentionRecord]:
    """Subordinate intentions still live after the intention they served ended."""
    intentions = sim.intentions
    return [
        i
        for i in intentions.values()
        if i.parent_id is not None and not i.status.final and intentions[i.parent_id].status.final
    ]


def asking_mind(**people: Any) -> Simulation:
    """A keeper that asks before restarting atlas-worker, broken for three days."""
    return Simulation(
        spec=the_mind(None, False, restart="approve"),
        spells=(Spell(T0, timedelta(days=3)),),
        restart_heals=False,
        people=People(**people),
    )


def test_a_denied_restart_is_not_asked_again_and_its_asking_closes() -> None:
    sim = asking_mind(decision="Denied")
    sim.run(T0, days=3, every=timedelta(minutes=10))
    assert sim.asked == 1
    assert sim.restarts == {}
    # The denial is a change of capability: the replan tells a person instead, once.
    assert sim.escalations == {0: 1}
    assert orphans(sim) == []


def test_an_unanswered_restart_is_asked_once_over_days() -> None:
    sim = asking_mind(decision=None)
    sim.run(T0, days=3, every=timedelta(minutes=10))
    assert sim.asked == 1
    assert sim.restarts == {}
    assert [p["status"]["phase"] for p in sim._mine() if p["spec"]["strategy"] == "direct"] == [
        "abandoned"
    ]


def test_an_expired_approval_blocks_and_nobody_is_asked_again() -> None:
    # Cycles every 13 minutes: the Approval's expiry (a day) falls between two cycles, so it
    # expires before the blocked intention would lapse in a cycle.
    sim = asking_mind(decision=None)
    sim.run(T0, days=3, every=timedelta(minutes=13))
    [approval] = sim.resources.list(APPROVAL, NS)
    assert approval["status"]["phase"] == "Expired"
    blocked = [
        d
        for d in sim.ledger.decisions(namespace=NS, mind=MIND, kind="reconsideration")
        if d.outcome == "block"
    ]
    assert [d.decided_at for d in blocked] == [T0 + timedelta(days=1)]
    assert sim.asked == 1
    assert sim.restarts == {}
    assert orphans(sim) == []


def test_a_cancelled_plan_suppresses_its_want_in_the_cancellers_name() -> None:
    sim = asking_mind(decision=None, cancel_after=timedelta(minutes=1))
    sim.run(T0, days=1 / 12, every=timedelta(minutes=10))
    [direct] = [p for p in sim._mine() if p["spec"]["strategy"] == "direct"]
    assert direct["status"]["phase"] == "abandoned"
    intention = sim.intentions[direct["spec"]["intention"]]
    assert intention.reason == "cancelled by alice: not now"
    [want] = [w for w in sim.wants.values() if w.origin is WantOrigin.GOAL_UNMET]
    assert want.status is WantStatus.SUPPRESSED
    named = sim.ledger.decisions(namespace=NS, mind=MIND, subject=("want", want.id))
    assert any("cancelled by alice" in str(d.data) for d in named)
    # Nothing else restarts or asks in the rest of the day.
    sim.run(T0 + timedelta(hours=2), days=1, every=timedelta(minutes=10))
    assert sim.asked == 1
    assert sim.planned_restarts == 1
    assert sim.restarts == {}


def test_a_cancelled_plan_closes_what_it_asked_for() -> None:
    sim = asking_mind(decision=None, cancel_after=timedelta(minutes=1))
    sim.run(T0, days=1, every=timedelta(minutes=10))
    assert orphans(sim) == []


def test_a_lapsed_intention_closes_what_it_asked_for() -> None:
    sim = asking_mind(decision=None)
    sim.run(T0, days=2, every=timedelta(minutes=10))
    assert orphans(sim) == []


def test_a_workload_is_investigated_once_per_incident() -> None:
    sim = Simulation(
        spec=the_mind(None, False),
        spells=(Spell(T0, timedelta(days=3)),),
        restart_heals=False,
    )
    sim.run(T0, days=2, every=timedelta(minutes=15))
    assert sim.investigations[(ATLAS, 0)] <= 1, sim.investigations

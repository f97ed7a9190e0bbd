"""Wants: derivation from each origin, the 0.35 cut, reinforcement, decay, suppression, expiry."""

from __future__ import annotations

from datetime import timedelta

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from minds.domain.beliefs import PredictionStatus
from minds.domain.volition import wants
from minds.domain.volition.commitments import CommitmentContext, CommitmentState
from minds.domain.volition.decisions import DecisionKind, TermOp, total
from minds.domain.volition.wants import (
    FADED_BELOW,
    GOAL_STALLED_AFTER,
    HALF_LIFE,
    MAX_ACTIVE_WANTS,
    REINFORCEMENT_CEILING,
    STORE_THRESHOLD,
    SUPPRESSION_PERIOD,
    Observation,
    Valence,
    WantOrigin,
    WantStatus,
    decayed_strength,
    satisfy,
    suppress,
    want_id,
)
from tests.unit.volition.builders import (
    ATLAS,
    MIND,
    NS,
    RESTART_ATLAS,
    T0,
    a_belief,
    a_prediction,
    a_spec,
    a_want,
    derive,
    seen,
)

MIN = timedelta(minutes=1)
SEC = timedelta(seconds=1)


def only(derived):  # type: ignore[no-untyped-def]
    assert len(derived.wants) == 1, derived
    return derived.wants[0]


# -- goals ---------------------------------------------------------------------------------


def test_an_unmet_goal_becomes_a_want_with_its_terms_recorded() -> None:
    derived = derive(a_spec(), [seen("degraded", T0 - 5 * SEC)])
    want = only(derived)
    assert want.origin is WantOrigin.GOAL_UNMET
    assert want.subject == want.target == ATLAS
    assert want.goal == "atlas-running"
    assert want.means == RESTART_ATLAS
    assert want.valence is Valence.APPROACH
    assert want.urgency == 0.5
    # base 0.3 + goal priority 0.8 x 0.3
    assert [t.name for t in want.terms] == ["base:goal_unmet", "goal:atlas-running"]
    assert want.strength == pytest.approx(0.54)
    assert total(want.terms) == pytest.approx(want.strength)
    assert want.evidence_at == want.created_at - 5 * SEC
    (decision,) = derived.decisions
    assert (decision.kind, decision.outcome) == (DecisionKind.DERIVATION, "derived")
    assert decision.subjects == {"want": want.id}
    assert decision.inputs["origin"] == "goal_unmet"
    assert decision.inputs["observation"]["fields"] == {"state": "degraded"}


def test_a_missing_workload_leaves_the_goal_unmet() -> None:
    want = only(derive(a_spec(), [seen(None, T0 - SEC)]))
    assert "state absent" in want.summary


@pytest.mark.parametrize(
    "observations",
    [
        [],
        [seen("running", T0 - SEC)],
        [seen("progressing", T0 - SEC)],
        [seen("degraded", T0 - 2 * MIN), seen("running", T0 - MIN)],
        [seen("degraded", T0 - HALF_LIFE - MIN)],  # too old to be evidence
        [seen("degraded", T0 - SEC, subject="ops/other")],
    ],
    ids=["none", "running", "progressing", "recovered", "stale", "other-subject"],
)
def test_no_want_without_evidence_of_an_unmet_goal(observations: list[Observation]) -> None:
    assert derive(a_spec(), observations) == ((), ())


def test_progressing_tells_nothing_either_way() -> None:
    want = only(derive(a_spec(), [seen("degraded", T0 - 2 * MIN), seen("progressing", T0 - MIN)]))
    assert want.evidence_at == T0 - 2 * MIN


def test_a_goal_unmet_for_long_enough_is_stalled_and_asks_for_a_look() -> None:
    history = [seen("degraded", T0 - GOAL_STALLED_AFTER), seen("degraded", T0 - SEC)]
    want = only(derive(a_spec(), history))
    assert want.origin is WantOrigin.GOAL_STALLED
    assert want.means is None
    assert want.urgency == 0.8
    assert want.strength == pytest.approx(0.4 + 0.24)


def test_stall_counts_from_the_last_time_the_goal_was_met() -> None:
    history = [
        seen("degraded", T0 - 2 * GOAL_STALLED_AFTER),
        seen("running", T0 - 10 * MIN),
        seen("degraded", T0 - SEC),
    ]
    assert only(derive(a_spec(), history)).origin is WantOrigin.GOAL_UNMET
    almost = [seen("degraded", T0 - GOAL_STALLED_AFTER + SEC)]
    assert only(derive(a_spec(), almost)).origin is WantOrigin.GOAL_UNMET


def test_a_stall_is_measured_across_cycles_that_each_see_only_the_present() -> None:
    first = only(derive(a_spec(), [seen("degraded", T0)]))
    assert first.since == T0
    now = T0 + GOAL_STALLED_AFTER
    derived = derive(a_spec(), [seen("degraded", now)], [first], now=now)
    stalled = next(w for w in derived.wants if w.origin is WantOrigin.GOAL_STALLED)
    assert stalled.since == T0
    # once the goal was met (its want satisfied), a new spell starts afresh
    done, _ = satisfy(first, T0 + MIN, "recovered")
    again = only(derive(a_spec(), [seen("degraded", now)], [done], now=now))
    assert (again.origin, again.since) == (WantOrigin.GOAL_UNMET, now)


def test_a_declared_drive_multiplies_and_is_recorded() -> None:
    spec = a_spec(drives=[{"name": "reliability", "weight": 1.0}, {"name": "curiosity"}])
    want = only(derive(spec, [seen("degraded", T0 - SEC)]))
    assert want.drives == ("reliability",)
    assert want.terms[-1].name == "drive:reliability"
    assert want.strength == pytest.approx(0.54 * 1.25)
    weak = a_spec(drives=[{"name": "reliability", "weight": 0.0}])
    assert only(derive(weak, [seen("degraded", T0 - SEC)])).strength == pytest.approx(0.54 * 0.75)


def test_goal_priority_adds_strength() -> None:
    high = a_spec(goals=[{"name": "g", "subject": {"name": "atlas-worker"}, "priority": 1.0}])
    assert only(derive(high, [seen("degraded", T0 - SEC)])).strength == pytest.approx(0.6)


# -- the 0.35 cut ----------------------------------------------------------------------------


def test_a_candidate_below_the_cut_is_not_stored_and_the_rejection_is_recorded() -> None:
    low = a_spec(goals=[{"name": "g", "subject": {"name": "atlas-worker"}, "priority": 0.1}])
    derived = derive(low, [seen("degraded", T0 - SEC)])
    assert derived.wants == ()
    (decision,) = derived.decisions
    assert decision.outcome == "rejected"
    assert decision.scores["strength"] == pytest.approx(0.33)
    assert STORE_THRESHOLD == 0.35
    assert [t.name for t in decision.terms] == ["base:goal_unmet", "goal:g"]


def test_the_same_rejection_on_the_same_grounds_is_recorded_once() -> None:
    low = a_spec(goals=[{"name": "g", "subject": {"name": "atlas-worker"}, "priority": 0.1}])
    first = derive(low, [seen("degraded", T0 - SEC)]).decisions[0]
    later = derive(low, [seen("degraded", T0 - SEC), seen("degraded", T0 + MIN)], now=T0 + MIN)
    assert later.decisions[0].key == first.key


@pytest.mark.parametrize(("confidence", "stored"), [(0.4, True), (0.35, False)])
def test_the_cut_is_at_035(confidence: float, stored: bool) -> None:
    # 0.2 + 0.4 x confidence: 0.36 is stored, 0.34 is not
    derived = derive(a_spec(goals=[]), predictions=[a_prediction(confidence)])
    assert bool(derived.wants) is stored


# -- other origins ---------------------------------------------------------------------------


def test_a_refuted_prediction_becomes_a_want_weighted_by_its_surprise() -> None:
    want = only(derive(a_spec(goals=[]), predictions=[a_prediction(0.8)]))
    assert want.origin is WantOrigin.FAILED_PREDICTION
    assert want.subject == ATLAS
    assert want.means is None
    assert [t.name for t in want.terms] == ["base:failed_prediction", "surprise"]
    assert want.strength == pytest.approx(0.2 + 0.4 * 0.8)


@pytest.mark.parametrize(
    "prediction",
    [
        a_prediction(status=PredictionStatus.CONFIRMED),
        a_prediction(status=PredictionStatus.EXPIRED),
        a_prediction(resolved_at=T0 - HALF_LIFE - MIN),
    ],
    ids=["confirmed", "expired", "stale"],
)
def test_only_recent_refuted_predictions_count(prediction: object) -> None:
    assert derive(a_spec(goals=[]), predictions=[prediction]) == ((), ())


def _contradiction(**kwargs: object):  # type: ignore[no-untyped-def]
    fields = {
        "belief": a_belief(0.8),
        "observation": seen("degraded", T0 - SEC),
    }
    fields.update(kwargs)
    old = a_prediction(belief_id="bel-1", resolved_at=T0 - 2 * HALF_LIFE)
    return derive(
        a_spec(goals=[]),
        [fields["observation"]],
        predictions=[old],
        beliefs=[fields["belief"]],
    )


def test_an_observation_failing_a_held_beliefs_check_is_a_contradiction() -> None:
    want = only(_contradiction())
    assert want.origin is WantOrigin.CONTRADICTION
    assert want.subject == ATLAS
    assert want.strength == pytest.approx(0.2 + 0.4 * 0.8)
    assert _contradiction().decisions[0].inputs["belief"] == "bel-1"


@pytest.mark.parametrize(
    "change",
    [
        {"belief": a_belief(0.5)},  # not held
        {"observation": seen("running", T0 - SEC)},  # agrees
        {"observation": seen(None, T0 - SEC)},  # the field is not there: tells nothing
        {"belief": a_belief(0.8, updated_at=T0)},  # the observation is older than the belief
        {  # too old to be evidence, though newer than the belief
            "belief": a_belief(0.8, updated_at=T0 - 3 * HALF_LIFE),
            "observation": seen("degraded", T0 - HALF_LIFE - MIN),
        },
    ],
    ids=["not-held", "agrees", "no-field", "older-than-belief", "stale"],
)
def test_no_contradiction_without_a_held_belief_and_a_newer_failing_observation(
    change: dict[str, object],
) -> None:
    assert _contradiction(**change) == ((), ())


def test_a_request_is_a_standing_want_derived_once() -> None:
    spec = a_spec(
        goals=[],
        requests=[
            {"name": "why-slow", "text": "why is it slow?", "subject": {"name": "atlas-worker"}}
        ],
    )
    want = only(derive(spec))
    assert want.origin is WantOrigin.REQUEST
    assert (want.subject, want.target, want.means) == ("request:why-slow", ATLAS, None)
    assert want.strength == 0.5
    assert derive(spec, existing=[want], now=T0 + MIN) == ((), ())
    answered, _ = satisfy(want, T0 + MIN, "answered")
    assert derive(spec, existing=[answered], now=T0 + 2 * MIN) == ((), ())


def _do(**fields: object) -> dict[str, object]:
    return {
        "name": "restart-atlas",
        "mode": "do",
        "capability": "service.restart",
        "target": ATLAS,
        **fields,
    }


def test_a_due_commitment_becomes_a_want_with_its_means() -> None:
    spec = a_spec(goals=[], commitments=[_do(due=T0 - MIN)])
    want = only(derive(spec))
    assert want.origin is WantOrigin.DUE_COMMITMENT
    assert want.subject == "commitment:restart-atlas"
    assert want.commitment == "restart-atlas"
    assert want.target == ATLAS
    assert want.means is not None
    assert want.means.capability == "service.restart"
    assert want.urgency == 0.7
    overdue = a_spec(goals=[], commitments=[_do(due=T0 - timedelta(hours=1))])
    assert only(derive(overdue)).urgency == 1.0


def test_a_commitment_not_yet_due_or_fulfilled_gives_no_want() -> None:
    assert derive(a_spec(goals=[], commitments=[_do(due=T0 + MIN)])) == ((), ())
    spec = a_spec(goals=[], commitments=[_do(due=T0 - MIN)])
    done = CommitmentContext(spec=spec, recorded={"restart-atlas": CommitmentState.FULFILLED})
    assert derive(spec, commitments=done) == ((), ())


def test_a_value_derives_an_avoid_want_against_the_means_it_avoids() -> None:
    spec = a_spec(values=[{"name": "stability", "weight": 0.7, "avoid": ["service.*"]}])
    derived = derive(spec, [seen("degraded", T0 - SEC)])
    approach, avoid = sorted(derived.wants, key=lambda w: w.valence != Valence.APPROACH)
    assert approach.values == ("stability",)
    assert avoid.valence is Valence.AVOID
    assert avoid.origin is WantOrigin.VALUE
    assert avoid.values == ("stability",)
    assert avoid.means == approach.means
    assert avoid.target == ATLAS
    assert avoid.strength == 0.7
    assert avoid.urgency == approach.urgency


def test_a_weak_value_or_one_about_other_means_derives_no_avoid_want() -> None:
    weak = a_spec(values=[{"name": "stability", "weight": 0.3, "avoid": ["service.restart"]}])
    derived = derive(weak, [seen("degraded", T0 - SEC)])
    assert [w.valence for w in derived.wants] == [Valence.APPROACH]
    assert [d.outcome for d in derived.decisions] == ["derived", "rejected"]
    other = a_spec(values=[{"name": "privacy", "weight": 0.9, "avoid": ["logs.query"]}])
    assert len(derive(other, [seen("degraded", T0 - SEC)]).wants) == 1


# -- reinforcement ---------------------------------------------------------------------------


def test_the_same_subject_reinforces_instead_of_duplicating() -> None:
    first = only(derive(a_spec(), [seen("degraded", T0 - SEC)]))
    derived = derive(a_spec(), [seen("degraded", T0 + 59 * SEC)], [first], now=T0 + MIN)
    again = only(derived)
    assert again.id == first.id
    assert again.strength == pytest.approx(0.54 + 0.1)
    assert again.created_at == T0
    assert again.last_reinforced_at == again.updated_at == T0 + MIN
    assert derived.decisions[0].kind is DecisionKind.REINFORCEMENT
    assert total(again.terms) == pytest.approx(again.strength)


def test_old_evidence_does_not_reinforce() -> None:
    first = only(derive(a_spec(), [seen("degraded", T0 - SEC)]))
    assert derive(a_spec(), [seen("degraded", T0 - SEC)], [first], now=T0 + MIN) == ((), ())


def test_reinforcement_is_bounded_above_the_candidate() -> None:
    want = only(derive(a_spec(), [seen("degraded", T0 - SEC)]))
    for minute in range(1, 10):
        now = T0 + minute * MIN
        want = only(derive(a_spec(), [seen("degraded", now - SEC)], [want], now=now))
    assert want.strength == pytest.approx(0.54 + REINFORCEMENT_CEILING)


def test_reinforcement_never_lowers_a_want() -> None:
    strong = a_want(strength=0.9, evidence_at=T0 - MIN)
    now = T0 + MIN
    again = only(derive(a_spec(), [seen("degraded", now - SEC)], [strong], now=now))
    assert again.strength == pytest.approx(decayed_strength(strong, now))


# -- decay and expiry ------------------------------------------------------------------------


def test_strength_halves_every_six_hours() -> None:
    want = a_want(strength=0.8)
    assert decayed_strength(want, T0) == 0.8
    assert decayed_strength(want, T0 + HALF_LIFE) == pytest.approx(0.4)
    assert decayed_strength(want, T0 + 2 * HALF_LIFE) == pytest.approx(0.2)
    assert decayed_strength(want, T0 - HALF_LIFE) == 0.8  # a clock behind never raises it


def test_a_faded_want_expires() -> None:
    want = a_want(strength=0.6)  # 0.6 / 2**(t / 6h) < 0.1 after about 15.5 hours
    assert derive(a_spec(), existing=[want], now=T0 + timedelta(hours=15)) == ((), ())
    derived = derive(a_spec(), existing=[want], now=T0 + timedelta(hours=16))
    assert only(derived).status is WantStatus.EXPIRED
    (decision,) = derived.decisions
    assert decision.kind is DecisionKind.EXPIRY
    assert decision.scores["strength"] < FADED_BELOW


def _many(count: int, strength: float = 0.9) -> list:  # type: ignore[type-arg]
    return [
        a_want(
            id=want_id(NS, MIND, f"ops/w{i}", WantOrigin.GOAL_UNMET),
            subject=f"ops/w{i}",
            target=f"ops/w{i}",
            goal=None,
            strength=strength + i / 1000,
        )
        for i in range(count)
    ]


def test_wants_beyond_the_cap_expire_weakest_first() -> None:
    wants = _many(MAX_ACTIVE_WANTS + 1)
    derived = derive(a_spec(goals=[]), existing=wants)
    expired = only(derived)
    assert expired.id == wants[0].id
    assert expired.status is WantStatus.EXPIRED
    assert "cap" in derived.decisions[0].reason


def test_a_new_want_that_would_not_survive_the_cap_is_not_stored() -> None:
    derived = derive(a_spec(), [seen("degraded", T0 - SEC)], _many(MAX_ACTIVE_WANTS))
    assert derived.wants == ()
    (decision,) = derived.decisions
    assert decision.outcome == "rejected"
    assert "cap" in decision.reason


# -- suppression and satisfaction ------------------------------------------------------------


def test_a_suppressed_want_is_not_re_derived_during_its_period() -> None:
    want, decision = suppress(a_want(), T0, "no possible plan")
    assert want.status is WantStatus.SUPPRESSED
    assert want.suppressed_until == T0 + SUPPRESSION_PERIOD
    assert (decision.kind, decision.inputs["until"]) == (
        DecisionKind.SUPPRESSION,
        (T0 + SUPPRESSION_PERIOD).isoformat(),
    )
    during = T0 + SUPPRESSION_PERIOD - MIN
    assert derive(a_spec(), [seen("degraded", during - SEC)], [want], now=during) == ((), ())
    after = T0 + SUPPRESSION_PERIOD + MIN
    derived = derive(a_spec(), [seen("degraded", after - SEC)], [want], now=after)
    assert only(derived).status is WantStatus.ACTIVE
    assert derived.decisions[0].outcome == "reactivated"


def test_a_goal_observed_running_again_satisfies_its_want() -> None:
    want = a_want(evidence_at=T0 - MIN)
    derived = derive(a_spec(), [seen("running", T0 - SEC)], [want])
    assert only(derived).status is WantStatus.SATISFIED
    assert derived.decisions[0].kind is DecisionKind.SATISFACTION


def test_a_satisfied_want_comes_back_only_on_evidence_after_it_was_satisfied() -> None:
    done, _ = satisfy(a_want(), T0 + MIN, "fulfilled")
    now = T0 + 2 * MIN
    assert derive(a_spec(), [seen("degraded", T0 + 30 * SEC)], [done], now=now) == ((), ())
    derived = derive(a_spec(), [seen("degraded", now - SEC)], [done], now=now)
    assert only(derived).status is WantStatus.ACTIVE
    assert only(derived).created_at == T0


# -- properties ------------------------------------------------------------------------------

states = st.sampled_from(["running", "degraded", "stopped", "progressing", None])
histories = st.lists(
    st.tuples(states, st.integers(min_value=0, max_value=600)), min_size=0, max_size=6
)


def _observations(history: list[tuple[str | None, int]]) -> list[Observation]:
    return [seen(state, T0 - minutes * MIN) for state, minutes in history]


def _spec_for(drive: float, priority: float, value: float):  # type: ignore[no-untyped-def]
    return a_spec(
        drives=[{"name": "reliability", "weight": drive}],
        values=[{"name": "stability", "weight": value, "avoid": ["service.restart"]}],
        goals=[{"name": "g", "subject": {"name": "atlas-worker"}, "priority": priority}],
    )


unit = st.floats(min_value=0, max_value=1)


@settings(max_examples=75, deadline=None)
@given(histories, unit, unit, unit, st.integers(min_value=0, max_value=3000))
def test_the_same_inputs_give_the_same_wants_and_decisions(
    history: list[tuple[str | None, int]], drive: float, priority: float, value: float, later: int
) -> None:
    spec = _spec_for(drive, priority, value)
    observations = _observations(history)
    first = derive(spec, observations)
    now = T0 + later * MIN
    assert derive(spec, observations) == first
    assert derive(spec, observations, list(first.wants), now=now) == derive(
        spec, observations, list(first.wants), now=now
    )


@settings(max_examples=75, deadline=None)
@given(histories, unit, unit, st.integers(min_value=0, max_value=3000))
def test_strength_never_increases_without_new_evidence(
    history: list[tuple[str | None, int]], drive: float, priority: float, later: int
) -> None:
    spec = _spec_for(drive, priority, 0.7)
    observations = _observations(history)
    wants = list(derive(spec, observations).wants)
    now = T0 + later * MIN
    # The same evidence, seen again later: nothing may be stronger than it has decayed to.
    again = {w.id: w for w in derive(spec, observations, wants, now=now).wants}
    for want in wants:
        after = again.get(want.id, want)
        assert decayed_strength(after, now) <= decayed_strength(want, now)
        assert decayed_strength(want, now) <= decayed_strength(want, T0)


def test_a_value_against_the_means_weakens_the_approach_with_a_recorded_term() -> None:
    plain = derive(a_spec(), [seen("degraded", T0 - SEC)]).wants[0]
    spec = a_spec(values=[{"name": "stability", "weight": 0.8, "avoid": ["service.*"]}])
    derived = derive(spec, [seen("degraded", T0 - SEC)])
    approach = next(w for w in derived.wants if w.valence is Valence.APPROACH)
    factor = 1 - wants.VALUE_GAIN * 0.8
    term = next(t for t in approach.terms if t.name == "value:stability")
    assert (term.op, term.value) == (TermOp.MULTIPLY, pytest.approx(factor))
    assert approach.strength == pytest.approx(plain.strength * factor)
    assert total(approach.terms) == pytest.approx(approach.strength)
    decision = next(d for d in derived.decisions if d.subjects["want"] == approach.id)
    assert "value:stability" in [t.name for t in decision.terms]
    # Means the value does not avoid, or no means at all: no term.
    other = a_spec(values=[{"name": "privacy", "weight": 0.9, "avoid": ["logs.query"]}])
    assert "value:privacy" not in [
        t.name for t in derive(other, [seen("degraded", T0 - SEC)]).wants[0].terms
    ]

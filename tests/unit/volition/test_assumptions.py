"""The pure rule of plan assumptions: which belief moves a want, what an observation says about
it, and which assumption the beliefs weaken."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from minds.domain.beliefs import MAX_CONFIDENCE, MIN_CONFIDENCE, BeliefRecord, updated_confidence
from minds.domain.planning.model import Assumption
from minds.domain.planning.strategies import ASSUMPTION_MIN_CONFIDENCE
from minds.domain.volition.assumptions import (
    FORMED_CONFIDENCE,
    OBSERVATION_WEIGHT,
    observed_evidence,
    supporting_belief,
    weakened,
)
from minds.domain.volition.wants import Observation

T0 = datetime(2026, 1, 1, tzinfo=UTC)
SUBJECT = "shop/atlas-worker"
BELIEF = supporting_belief(SUBJECT)


def belief(confidence: float, statement: str | None = BELIEF) -> BeliefRecord:
    assert statement is not None
    return BeliefRecord(
        id="bel-1", namespace="shop", mind="keeper", statement=statement,
        confidence=confidence, updated_at=T0,
    )  # fmt: skip


def seen(state: str, at: datetime = T0) -> Observation:
    return Observation(subject=SUBJECT, capability="service.status", fields={"state": state}, at=at)


def assumes(min_confidence: float = ASSUMPTION_MIN_CONFIDENCE) -> list[Assumption]:
    assert BELIEF is not None
    return [Assumption(belief=BELIEF, min_confidence=min_confidence)]


def test_only_a_workload_has_a_supporting_belief() -> None:
    assert BELIEF == "workload shop/atlas-worker is degraded"
    assert supporting_belief("request:why-slow") is None
    assert supporting_belief("") is None
    assert supporting_belief(None) is None


def test_an_observation_is_evidence_for_or_against_and_a_rollout_is_none() -> None:
    (down,) = observed_evidence([seen("degraded")])
    assert (down.statement, down.supports, down.form) == (BELIEF, True, True)
    (up,) = observed_evidence([seen("running")])
    assert (up.supports, up.form) == (False, False)
    assert observed_evidence([seen("progressing")]) == []


def test_one_observation_turns_the_most_certain_belief_either_way() -> None:
    assert updated_confidence(MAX_CONFIDENCE, False, OBSERVATION_WEIGHT) < ASSUMPTION_MIN_CONFIDENCE
    assert updated_confidence(MIN_CONFIDENCE, True, OBSERVATION_WEIGHT) > ASSUMPTION_MIN_CONFIDENCE
    assert updated_confidence(FORMED_CONFIDENCE, True, OBSERVATION_WEIGHT) > 0.9


def test_a_held_belief_carries_the_assumption() -> None:
    assert weakened(assumes(), [belief(0.9)]) is None
    assert weakened(assumes(), [belief(ASSUMPTION_MIN_CONFIDENCE)]) is None


def test_a_contradicted_belief_weakens_the_assumption_with_its_confidence() -> None:
    found = weakened(assumes(), [belief(0.2)])
    assert found is not None
    assert (found.belief, found.confidence) == (BELIEF, 0.2)
    assert "0.20" in found.reason


def test_the_assumptions_own_minimum_is_the_bar() -> None:
    assert weakened(assumes(0.8), [belief(0.7)]) is not None
    assert weakened(assumes(0.6), [belief(0.7)]) is None


def test_statements_match_whatever_their_case_and_spacing() -> None:
    assert weakened(assumes(), [belief(0.1, "Workload  shop/atlas-worker IS degraded")]) is not None


def test_a_belief_never_held_weakens_nothing() -> None:
    assert weakened(assumes(), []) is None
    assert weakened(assumes(), [belief(0.1, "workload shop/other is degraded")]) is None


def test_over_a_week_of_hourly_flapping_each_recovery_weakens_once_and_nothing_else() -> None:
    """A workload down every other hour for seven days: the assumption is weakened exactly on
    the hours the workload is seen running, and holds on every hour it is seen down."""
    confidence = FORMED_CONFIDENCE
    weakened_hours = held_hours = 0
    for hour in range(7 * 24):
        at = T0 + timedelta(hours=hour)
        (evidence,) = observed_evidence([seen("running" if hour % 2 else "degraded", at)])
        confidence = updated_confidence(confidence, evidence.supports, OBSERVATION_WEIGHT)
        if weakened(assumes(), [belief(confidence)]) is None:
            held_hours += 1
        else:
            weakened_hours += 1
    assert (weakened_hours, held_hours) == (7 * 12, 7 * 12)

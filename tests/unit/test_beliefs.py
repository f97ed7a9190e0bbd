"""Beliefs and predictions: the confidence update, ids, and calibration arithmetic."""

from __future__ import annotations

import math
from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import example, given
from hypothesis import strategies as st
from pydantic import ValidationError

from minds.domain.beliefs import (
    MAX_CONFIDENCE,
    MIN_CONFIDENCE,
    PredictionRecord,
    PredictionStatus,
    ReliabilityBin,
    belief_id,
    calibration,
    prediction_event_type,
    prediction_evidence_key,
    prediction_id,
    updated_confidence,
)

T0 = datetime(2026, 12, 3, 9, 0, tzinfo=UTC)
P = PredictionStatus

unit = st.floats(min_value=0.0, max_value=1.0, allow_nan=False)
inside = st.floats(min_value=MIN_CONFIDENCE, max_value=MAX_CONFIDENCE, allow_nan=False)
weights = st.floats(min_value=0.0, max_value=50.0, allow_nan=False)


# -- the confidence update -----------------------------------------------------------------


@given(unit, st.booleans(), weights)
def test_confidence_stays_within_bounds(confidence: float, supports: bool, weight: float) -> None:
    assert MIN_CONFIDENCE <= updated_confidence(confidence, supports, weight) <= MAX_CONFIDENCE


@given(inside, weights)
def test_evidence_for_never_lowers(confidence: float, weight: float) -> None:
    assert updated_confidence(confidence, True, weight) >= confidence


@given(inside, weights)
def test_evidence_against_never_raises(confidence: float, weight: float) -> None:
    assert updated_confidence(confidence, False, weight) <= confidence


@given(unit, unit, st.booleans(), weights)
def test_a_higher_prior_gives_a_higher_result(
    a: float, b: float, supports: bool, weight: float
) -> None:
    low, high = sorted((a, b))
    assert updated_confidence(low, supports, weight) <= updated_confidence(high, supports, weight)


@given(inside, weights, weights)
def test_more_weight_moves_further(confidence: float, w1: float, w2: float) -> None:
    light, heavy = sorted((w1, w2))
    assert updated_confidence(confidence, True, light) <= updated_confidence(
        confidence, True, heavy
    )
    assert updated_confidence(confidence, False, light) >= updated_confidence(
        confidence, False, heavy
    )


@given(inside, st.booleans())
def test_weight_zero_changes_nothing(confidence: float, supports: bool) -> None:
    assert updated_confidence(confidence, supports, 0.0) == confidence


def test_one_piece_doubles_or_halves_the_odds() -> None:
    assert updated_confidence(0.8, False) == pytest.approx(2 / 3)
    assert updated_confidence(0.8, True) == pytest.approx(8 / 9)
    assert updated_confidence(0.5, True) == pytest.approx(2 / 3)
    assert updated_confidence(0.5, False, weight=2.0) == pytest.approx(0.2)


def test_certainty_is_never_reached_and_can_be_left() -> None:
    assert updated_confidence(1.0, True) == MAX_CONFIDENCE
    assert updated_confidence(0.0, False) == MIN_CONFIDENCE
    assert updated_confidence(1.0, False) < MAX_CONFIDENCE
    assert updated_confidence(MIN_CONFIDENCE, True) > MIN_CONFIDENCE


@pytest.mark.parametrize(
    ("confidence", "weight"), [(-0.1, 1.0), (1.1, 1.0), (0.5, -1.0), (0.5, math.nan)]
)
def test_out_of_range_inputs_are_refused(confidence: float, weight: float) -> None:
    with pytest.raises(ValueError, match="must be"):
        updated_confidence(confidence, True, weight)


# -- ids -----------------------------------------------------------------------------------


def test_belief_ids_ignore_whitespace_and_case() -> None:
    a = belief_id("ops", "keeper", "atlas-worker heals after a restart")
    assert a == belief_id("ops", "keeper", "  Atlas-worker   heals after a RESTART ")
    assert a != belief_id("ops", "warden", "atlas-worker heals after a restart")
    assert a != belief_id("ops", "keeper", "atlas-worker heals after a reboot")
    assert len(a) <= 128


def test_statements_with_control_separators_still_get_an_id() -> None:
    assert belief_id("ops", "keeper", "a\x1fb") == belief_id("ops", "keeper", "a b")


def test_prediction_ids_and_evidence_keys_are_deterministic() -> None:
    assert prediction_id("uid", "P1", "1") == prediction_id("uid", "P1", "1")
    assert prediction_id("uid", "P1", "1") != prediction_id("uid", "P1", "2")
    assert prediction_evidence_key("pred-1") != prediction_evidence_key("pred-2")


def test_resolutions_use_the_seed_event_names() -> None:
    assert prediction_event_type(P.CONFIRMED) == "prediction_resolved"
    assert prediction_event_type(P.REFUTED) == "prediction_error"
    assert prediction_event_type(P.EXPIRED) == "prediction_expired"


# -- prediction records --------------------------------------------------------------------


def prediction(
    confidence: float, status: PredictionStatus, n: int = 0, **overrides: object
) -> PredictionRecord:
    fields: dict[str, object] = {
        "id": f"pred-{n}-{confidence}-{status}",
        "namespace": "ops",
        "mind": "keeper",
        "plan": "restart-atlas",
        "step": "P1",
        "criteria": {"capability": "service.status", "field": "state", "value": "running"},
        "confidence": confidence,
        "window_start": T0,
        "window_end": T0 + timedelta(seconds=60),
        "status": status,
        "resolved_at": None if status is P.OPEN else T0 + timedelta(seconds=30),
    }
    fields.update(overrides)
    return PredictionRecord.model_validate(fields)


def test_a_window_cannot_end_before_it_starts() -> None:
    with pytest.raises(ValidationError, match="window"):
        prediction(0.8, P.OPEN, window_end=T0 - timedelta(seconds=1))


@pytest.mark.parametrize(
    ("status", "resolved_at"), [(P.OPEN, T0), (P.CONFIRMED, None), (P.EXPIRED, None)]
)
def test_resolved_at_goes_with_a_resolution(
    status: PredictionStatus, resolved_at: datetime | None
) -> None:
    with pytest.raises(ValidationError, match="resolved_at"):
        prediction(0.8, status, resolved_at=resolved_at)


# -- calibration ---------------------------------------------------------------------------


def test_no_resolved_predictions_has_no_score() -> None:
    empty = calibration([])
    assert (empty.n, empty.brier, empty.bins) == (0, None, [])
    only_unknown = calibration([prediction(0.8, P.OPEN), prediction(0.9, P.EXPIRED)])
    assert (only_unknown.n, only_unknown.brier, only_unknown.bins) == (0, None, [])


def test_brier_on_known_values() -> None:
    # (0.8 - 1)^2 = 0.04, (0.8 - 0)^2 = 0.64, (0.3 - 0)^2 = 0.09, (0.6 - 1)^2 = 0.16
    result = calibration(
        [
            prediction(0.8, P.CONFIRMED, 1),
            prediction(0.8, P.REFUTED, 2),
            prediction(0.3, P.REFUTED, 3),
            prediction(0.6, P.CONFIRMED, 4),
        ]
    )
    assert result.n == 4
    assert result.brier == pytest.approx((0.04 + 0.64 + 0.09 + 0.16) / 4)


def test_perfect_and_useless_forecasters() -> None:
    perfect = calibration([prediction(1.0, P.CONFIRMED, 1), prediction(0.0, P.REFUTED, 2)])
    assert perfect.brier == 0.0
    coin = calibration([prediction(0.5, P.CONFIRMED, 1), prediction(0.5, P.REFUTED, 2)])
    assert coin.brier == pytest.approx(0.25)


def test_expired_and_open_are_excluded() -> None:
    # Unknown is not refuted: an expired 0.9 must not count as a miss.
    with_unknown = calibration(
        [prediction(0.9, P.CONFIRMED, 1), prediction(0.9, P.EXPIRED, 2), prediction(0.9, P.OPEN, 3)]
    )
    assert with_unknown.n == 1
    assert with_unknown.brier == pytest.approx(0.01)


def test_reliability_bins() -> None:
    result = calibration(
        [
            prediction(0.82, P.CONFIRMED, 1),
            prediction(0.88, P.REFUTED, 2),
            prediction(0.86, P.CONFIRMED, 3),
            prediction(0.82, P.CONFIRMED, 4),
            prediction(0.05, P.REFUTED, 5),
            prediction(1.0, P.CONFIRMED, 6),
            prediction(0.9, P.CONFIRMED, 7),
            prediction(0.5, P.EXPIRED, 8),
        ]
    )
    assert result.n == 7
    assert [(b.lower, b.upper, b.count) for b in result.bins] == [
        (0.0, 0.1, 1),
        (0.8, 0.9, 4),
        (0.9, 1.0, 2),  # 1.0 belongs to the last bin
    ]
    eighty = result.bins[1]
    assert eighty.mean_confidence == pytest.approx((0.82 + 0.88 + 0.86 + 0.82) / 4)
    assert eighty.observed_rate == pytest.approx(0.75)
    assert result.bins[0] == ReliabilityBin(
        lower=0.0, upper=0.1, count=1, mean_confidence=0.05, observed_rate=0.0
    )


@given(st.lists(st.tuples(unit, st.booleans()), min_size=1, max_size=50))
# Found by hypothesis: a naive mean of three 0.7s falls just below the bin's lower edge.
@example([(0.7, False), (0.7, False), (0.7, False)])
def test_bins_account_for_every_scored_prediction(outcomes: list[tuple[float, bool]]) -> None:
    records = [
        prediction(c, P.CONFIRMED if hit else P.REFUTED, i) for i, (c, hit) in enumerate(outcomes)
    ]
    result = calibration(records)
    assert result.n == len(outcomes)
    assert sum(b.count for b in result.bins) == len(outcomes)
    assert result.brier is not None
    assert 0.0 <= result.brier <= 1.0
    for b in result.bins:
        assert b.lower <= b.mean_confidence <= b.upper
        assert 0.0 <= b.observed_rate <= 1.0
    assert [b.lower for b in result.bins] == sorted({b.lower for b in result.bins})

"""Beliefs, the predictions that test them, and how well a mind's confidence is calibrated.

A belief is a statement held with a confidence. Evidence moves the confidence by a bounded,
monotone rule (`updated_confidence`); each piece is kept in an append-only table so the belief's
history can be read back. A prediction is an expectation with a check and a window: it is
confirmed when the check holds within the window, refuted when the window closes without it
holding, and expires when the world could not be observed (unknown is not refuted). Resolved
predictions give the mind's calibration: a Brier score and reliability bins.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from enum import StrEnum
from typing import Annotated, Final

from pydantic import AwareDatetime, Field, JsonValue, model_validator

from minds.domain.base import Model
from minds.domain.ledger import idempotency_key

__all__ = [
    "BELIEF_EVIDENCE_ADDED",
    "BELIEF_FORMED",
    "CALIBRATION_BINS",
    "EVIDENCE_LIKELIHOOD_RATIO",
    "MAX_CONFIDENCE",
    "MIN_CONFIDENCE",
    "PREDICTION_OPENED",
    "BeliefRecord",
    "Calibration",
    "EvidenceRecord",
    "PredictionRecord",
    "PredictionStatus",
    "ReliabilityBin",
    "belief_id",
    "calibration",
    "normalise_statement",
    "prediction_event_type",
    "prediction_evidence_key",
    "prediction_id",
    "updated_confidence",
]

Name = Annotated[str, Field(min_length=1, max_length=253)]
LedgerId = Annotated[str, Field(min_length=1, max_length=128)]
Confidence = Annotated[float, Field(ge=0.0, le=1.0)]
Statement = Annotated[str, Field(min_length=1, max_length=2000)]

# A mind is never certain: evidence can bring a belief close to 0 or 1, never onto it, so a
# later observation can always move it back.
MIN_CONFIDENCE: Final = 0.01
MAX_CONFIDENCE: Final = 0.99

# One piece of evidence of weight 1 doubles (for) or halves (against) the odds of the belief.
EVIDENCE_LIKELIHOOD_RATIO: Final = 2.0

CALIBRATION_BINS: Final = 10

# Event types (stored as text). A confirmed prediction is `prediction_resolved` and a refuted
# one `prediction_error`, the seed's vocabulary; an expired one is neither.
BELIEF_FORMED: Final = "belief_formed"
BELIEF_EVIDENCE_ADDED: Final = "belief_evidence_added"
PREDICTION_OPENED: Final = "prediction_opened"


def normalise_statement(statement: str) -> str:
    """The statement as a belief is identified by: whitespace collapsed, case folded."""
    return " ".join(statement.split()).casefold()


def belief_id(namespace: str, mind: str, statement: str) -> str:
    """The id of a mind's belief in a statement; statements that differ only in whitespace or
    case are one belief."""
    return "bel-" + idempotency_key("belief", namespace, mind, normalise_statement(statement))[:24]


def updated_confidence(confidence: float, supports: bool, weight: float = 1.0) -> float:
    """The confidence after one piece of evidence.

    The rule is a step in log-odds: evidence of weight `w` multiplies the odds by
    `EVIDENCE_LIKELIHOOD_RATIO ** w` when it supports the belief and divides them by it when it
    does not (0.8 refuted once becomes 0.667, confirmed once 0.889). It is monotone (evidence
    for never lowers the confidence, against never raises it; a higher prior gives a higher
    result) and bounded: the result, and a prior outside them first, are kept within
    [MIN_CONFIDENCE, MAX_CONFIDENCE]. Weight 0 changes nothing.
    """
    if not 0.0 <= confidence <= 1.0:
        raise ValueError(f"confidence must be within [0, 1], got {confidence}")
    if not (math.isfinite(weight) and weight >= 0.0):
        raise ValueError(f"weight must be a finite number >= 0, got {weight}")
    prior = min(max(confidence, MIN_CONFIDENCE), MAX_CONFIDENCE)
    step = weight * math.log(EVIDENCE_LIKELIHOOD_RATIO)
    if step == 0.0:
        return prior
    log_odds = math.log(prior / (1.0 - prior)) + (step if supports else -step)
    posterior = _clamp(_sigmoid(log_odds))
    # Rounding in the log-odds round trip must not move the confidence the wrong way.
    return max(prior, posterior) if supports else min(prior, posterior)


def _sigmoid(x: float) -> float:
    if x >= 0:
        return 1.0 / (1.0 + math.exp(-x))
    e = math.exp(x)
    return e / (1.0 + e)


def _clamp(value: float) -> float:
    return min(max(value, MIN_CONFIDENCE), MAX_CONFIDENCE)


class BeliefRecord(Model):
    """The current state of one belief (the `beliefs` row)."""

    id: LedgerId
    namespace: Name
    mind: Name
    statement: Statement
    confidence: Confidence
    evidence_for: Annotated[int, Field(ge=0)] = 0
    evidence_against: Annotated[int, Field(ge=0)] = 0
    updated_at: AwareDatetime


class EvidenceRecord(Model):
    """One piece of evidence about a belief (append-only `belief_evidence` row)."""

    belief_id: LedgerId
    key: Annotated[str, Field(min_length=1, max_length=200)]
    supports: bool
    weight: Annotated[float, Field(ge=0.0)]
    note: Annotated[str, Field(max_length=2000)]
    confidence_before: Confidence
    confidence_after: Confidence
    occurred_at: AwareDatetime


class PredictionStatus(StrEnum):
    OPEN = "open"
    CONFIRMED = "confirmed"  # the check held within the window
    REFUTED = "refuted"  # the window closed without the check holding
    EXPIRED = "expired"  # the check could not be made: unknown, not refuted

    @property
    def resolved(self) -> bool:
        return self is not PredictionStatus.OPEN


def prediction_event_type(status: PredictionStatus) -> str:
    """The event that tells a resolution (the seed's names for confirmed and refuted)."""
    if status is PredictionStatus.CONFIRMED:
        return "prediction_resolved"
    if status is PredictionStatus.REFUTED:
        return "prediction_error"
    if status is PredictionStatus.EXPIRED:
        return "prediction_expired"
    return PREDICTION_OPENED


def prediction_id(*parts: str) -> str:
    """A deterministic prediction id from what identifies it (plan uid, step, attempt)."""
    return "pred-" + idempotency_key("prediction", *parts)[:24]


def prediction_evidence_key(prediction: str) -> str:
    """The key of the evidence a resolved prediction adds to its belief: one per prediction."""
    return idempotency_key("prediction", prediction, "evidence")


class PredictionRecord(Model):
    """An expectation under test (the `predictions` row).

    `criteria` is the check that decides it (capability, field, comparison, value);
    `observation` what was seen when it was resolved.
    """

    id: LedgerId
    namespace: Name
    mind: Name
    plan: Name
    step: Annotated[str, Field(min_length=1, max_length=64)]
    execution_id: int | None = None
    belief_id: LedgerId | None = None
    criteria: dict[str, JsonValue]
    confidence: Confidence
    window_start: AwareDatetime
    window_end: AwareDatetime
    status: PredictionStatus = PredictionStatus.OPEN
    resolved_at: AwareDatetime | None = None
    observation: dict[str, JsonValue] | None = None

    @model_validator(mode="after")
    def _consistent(self) -> PredictionRecord:
        if self.window_end < self.window_start:
            raise ValueError("a prediction's window cannot end before it starts")
        if self.status.resolved != (self.resolved_at is not None):
            raise ValueError("resolved_at is set exactly when the prediction is resolved")
        return self


class ReliabilityBin(Model):
    """Resolved predictions whose confidence fell in [lower, upper) ([0.9, 1.0] for the last)."""

    lower: float
    upper: float
    count: Annotated[int, Field(ge=1)]
    mean_confidence: Confidence
    observed_rate: Confidence


class Calibration(Model):
    """How well a mind's confidence matched what happened.

    `n` counts confirmed and refuted predictions; `brier` is the mean squared difference between
    confidence and outcome (0 is perfect, 0.25 is always saying 0.5), None when n is 0.
    """

    n: Annotated[int, Field(ge=0)]
    brier: float | None
    bins: list[ReliabilityBin]


def calibration(predictions: Iterable[PredictionRecord]) -> Calibration:
    """Calibration over confirmed (outcome 1) and refuted (outcome 0) predictions. Open and
    expired ones are left out: an observation that could not be made is not a refutation."""
    scored = [
        (p.confidence, 1.0 if p.status is PredictionStatus.CONFIRMED else 0.0)
        for p in predictions
        if p.status in (PredictionStatus.CONFIRMED, PredictionStatus.REFUTED)
    ]
    if not scored:
        return Calibration(n=0, brier=None, bins=[])
    brier = sum((confidence - outcome) ** 2 for confidence, outcome in scored) / len(scored)
    grouped: dict[int, list[tuple[float, float]]] = {}
    for confidence, outcome in scored:
        grouped.setdefault(_bin_of(confidence), []).append((confidence, outcome))
    bins = [
        ReliabilityBin(
            lower=index / CALIBRATION_BINS,
            upper=(index + 1) / CALIBRATION_BINS,
            count=len(members),
            # fsum: a plain sum of 0.7 three times, over three, lands below the bin's lower edge.
            mean_confidence=min(
                max(math.fsum(c for c, _ in members) / len(members), index / CALIBRATION_BINS),
                (index + 1) / CALIBRATION_BINS,
            ),
            observed_rate=sum(o for _, o in members) / len(members),
        )
        for index, members in sorted(grouped.items())
    ]
    return Calibration(n=len(scored), brier=brier, bins=bins)


def _bin_of(confidence: float) -> int:
    # Confidence 1.0 belongs to the last bin, which is closed above.
    return min(math.floor(confidence * CALIBRATION_BINS), CALIBRATION_BINS - 1)

"""Small builders for volition tests: a mind, observations, wants and intentions."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from minds.domain.beliefs import BeliefRecord, PredictionRecord, PredictionStatus
from minds.domain.intentions import IntentionKind, IntentionRecord
from minds.domain.planning.views import Means
from minds.domain.resources.mind import MindSpec
from minds.domain.volition.wants import (
    Observation,
    Valence,
    Want,
    WantOrigin,
    WantStatus,
    derive_wants,
    want_id,
)

T0 = datetime(2026, 12, 3, 9, 0, tzinfo=UTC)
NS = "ops"
MIND = "keeper"
ATLAS = "ops/atlas-worker"
RESTART_ATLAS = Means(
    capability="service.restart",
    parameters={"namespace": "ops", "kind": "Deployment", "name": "atlas-worker"},
)
STATUS_CHECK = {
    "capability": "service.status",
    "parameters": {"namespace": "ops", "name": "atlas-worker"},
    "field": "state",
    "comparison": "equals",
    "value": "running",
}


def a_spec(**fields: Any) -> MindSpec:
    """A mind with one goal on atlas-worker (priority 0.8) unless told otherwise."""
    base: dict[str, Any] = {
        "goals": [{"name": "atlas-running", "subject": {"name": "atlas-worker"}, "priority": 0.8}]
    }
    base.update(fields)
    return MindSpec.model_validate(base)


def seen(state: str | None, at: datetime, subject: str = ATLAS) -> Observation:
    return Observation(
        subject=subject,
        capability="service.status",
        fields={} if state is None else {"state": state},
        at=at,
    )


def derive(
    spec: MindSpec,
    observations: list[Observation] | None = None,
    existing: list[Want] | None = None,
    now: datetime = T0,
    predictions: list[PredictionRecord] | None = None,
    beliefs: list[BeliefRecord] | None = None,
    **kwargs: Any,
) -> Any:
    return derive_wants(
        observations or [],
        predictions or [],
        beliefs or [],
        spec,
        existing or [],
        now,
        namespace=NS,
        mind=MIND,
        **kwargs,
    )


def a_want(**overrides: Any) -> Want:
    """An active goal_unmet approach want on atlas-worker proposing a restart."""
    subject = overrides.get("subject", ATLAS)
    origin = overrides.get("origin", WantOrigin.GOAL_UNMET)
    fields: dict[str, Any] = {
        "id": want_id(NS, MIND, subject, origin),
        "namespace": NS,
        "mind": MIND,
        "subject": subject,
        "origin": origin,
        "summary": "atlas-worker should be running",
        "strength": 0.6,
        "urgency": 0.5,
        "valence": Valence.APPROACH,
        "goal": "atlas-running",
        "target": ATLAS,
        "means": RESTART_ATLAS,
        "status": WantStatus.ACTIVE,
        "evidence_at": T0,
        "created_at": T0,
        "updated_at": T0,
        "last_reinforced_at": T0,
    }
    fields.update(overrides)
    return Want.model_validate(fields)


def an_avoid(strength: float = 0.7, **overrides: Any) -> Want:
    subject = f"stability: avoid service.restart on {ATLAS}"
    return a_want(
        **{
            "id": want_id(NS, MIND, subject, WantOrigin.VALUE),
            "subject": subject,
            "origin": WantOrigin.VALUE,
            "valence": Valence.AVOID,
            "values": ("stability",),
            "goal": None,
            "strength": strength,
            **overrides,
        }
    )


def an_intention(**overrides: Any) -> IntentionRecord:
    fields: dict[str, Any] = {
        "id": "int-1",
        "namespace": NS,
        "mind": MIND,
        "objective": "restart atlas-worker",
        "kind": IntentionKind.ACTION,
        "subject": ATLAS,
        "created_at": T0,
        "updated_at": T0,
    }
    fields.update(overrides)
    return IntentionRecord.model_validate(fields)


def a_prediction(
    confidence: float = 0.8,
    resolved_at: datetime = T0 - timedelta(minutes=1),
    belief_id: str | None = None,
    status: PredictionStatus = PredictionStatus.REFUTED,
    pid: str = "pred-1",
) -> PredictionRecord:
    return PredictionRecord(
        id=pid,
        namespace=NS,
        mind=MIND,
        plan="keeper-plan-r1",
        step="P1",
        belief_id=belief_id,
        criteria=STATUS_CHECK,
        confidence=confidence,
        window_start=resolved_at - timedelta(minutes=1),
        window_end=resolved_at,
        status=status,
        resolved_at=resolved_at,
    )


def a_belief(
    confidence: float = 0.8, updated_at: datetime = T0 - timedelta(hours=1)
) -> BeliefRecord:
    return BeliefRecord(
        id="bel-1",
        namespace=NS,
        mind=MIND,
        statement="atlas-worker is running normally",
        confidence=confidence,
        updated_at=updated_at,
    )

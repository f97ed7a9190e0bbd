"""What a step's outcome means beyond the Plan: predictions, intentions, notes for people.

One handler per ``EffectKind``, in one of two tables: ``TOLD`` (rows of the plan, journalled in
the transition's one transaction) and ``APPLIED`` (changes of the ledger's current state).
Together they are the whole vocabulary (``test_every_effect_has_one_handler``).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from minds.domain.beliefs import PredictionRecord, PredictionStatus
from minds.domain.beliefs import prediction_id as make_prediction_id
from minds.domain.execution.adopt import Effect, EffectKind
from minds.domain.intentions import (
    IntentionKind,
    IntentionRecord,
    IntentionStatus,
    intention_id,
)
from minds.domain.planning.model import Plan
from minds.engine.executing.context import Deps
from minds.engine.executing.journal import Entry, Notice, plan_intention, plan_row


@dataclass(frozen=True)
class Scene:
    """Where an effect lands: the plan as written, its intention and the moment."""

    deps: Deps
    body: dict[str, Any]
    plan: Plan
    intention: IntentionRecord
    now: datetime

    @property
    def namespace(self) -> str:
        return str(self.body["metadata"]["namespace"])

    @property
    def mind(self) -> str:
        return self.plan.mind or "-"


def _open_prediction(s: Scene, effect: Effect) -> None:
    ledger = s.deps.ledger
    belief = ledger.upsert_belief(
        s.namespace, s.mind, effect.data["description"], effect.data["confidence"], s.now
    )
    execution = effect.data.get("execution")
    ledger.open_prediction(
        PredictionRecord(
            id=make_prediction_id(s.body["metadata"]["uid"], effect.step),
            namespace=s.namespace,
            mind=s.mind,
            plan=s.body["metadata"]["name"],
            step=effect.step,
            execution_id=int(execution) if execution else None,
            belief_id=belief.id,
            criteria=effect.data["check"],
            confidence=effect.data["confidence"],
            window_start=effect.data["window_start"],
            window_end=effect.data["window_end"],
        )
    )


def _resolve_prediction(resolution: PredictionStatus) -> Callable[[Scene, Effect], None]:
    def resolve(s: Scene, effect: Effect) -> None:
        # Resolving a confirmed or refuted prediction also weighs its supporting belief, in the
        # same transaction (the ledger's rule): nothing more to do here.
        s.deps.ledger.resolve_prediction(
            make_prediction_id(s.body["metadata"]["uid"], effect.step),
            resolution,
            s.now,
            effect.data.get("observation"),
        )

    return resolve


def _move_intention(status: IntentionStatus) -> Callable[[Scene, Effect], None]:
    def move(s: Scene, effect: Effect) -> None:
        s.deps.ledger.transition_intention(s.intention.id, status, effect.reason, s.now)

    return move


def _form_subordinate(s: Scene, effect: Effect) -> None:
    child = IntentionRecord(
        id=intention_id(
            s.intention.id, s.body["metadata"]["uid"], effect.step, str(effect.data.get("approval"))
        ),
        namespace=s.namespace,
        mind=s.mind,
        objective=effect.reason[:500],
        kind=IntentionKind.ACTION,
        parent_id=s.intention.id,
        created_at=s.now,
        updated_at=s.now,
    )
    s.deps.ledger.form_intention(child)


def _fulfil_subordinates(s: Scene, effect: Effect) -> None:
    for child in s.deps.ledger.intentions(parent_id=s.intention.id):
        if child.status is IntentionStatus.ACTIVE:
            s.deps.ledger.transition_intention(
                child.id, IntentionStatus.FULFILLED, effect.reason, s.now
            )


def _observation_row(deps: Deps, body: dict[str, Any], plan: Plan, effect: Effect) -> Entry:
    payload = {
        "step": effect.step,
        "observation": effect.reason,
        "results": effect.data.get("results") or [],
    }
    return Entry(plan_row(deps, body, plan, "observation_recorded", (effect.step,), payload))


def _escalation_row(deps: Deps, body: dict[str, Any], plan: Plan, effect: Effect) -> Entry:
    payload = {"step": effect.step, "note": effect.reason}
    return Entry(
        plan_row(deps, body, plan, "operator_notified", (effect.step,), payload),
        Notice("Warning", "Escalated", effect.reason),
        once=True,
    )


#: Effects that are ledger rows of the plan: journalled with the transition's own rows.
TOLD: dict[EffectKind, Callable[[Deps, dict[str, Any], Plan, Effect], Entry]] = {
    EffectKind.RECORD_OBSERVATION: _observation_row,
    EffectKind.NOTIFY_OPERATOR: _escalation_row,
}

#: Effects on the ledger's current state (each written with its event by the ledger itself).
APPLIED: dict[EffectKind, Callable[[Scene, Effect], None]] = {
    EffectKind.OPEN_PREDICTION: _open_prediction,
    EffectKind.CONFIRM_PREDICTION: _resolve_prediction(PredictionStatus.CONFIRMED),
    EffectKind.REFUTE_PREDICTION: _resolve_prediction(PredictionStatus.REFUTED),
    EffectKind.EXPIRE_PREDICTION: _resolve_prediction(PredictionStatus.EXPIRED),
    EffectKind.BLOCK_INTENTION: _move_intention(IntentionStatus.BLOCKED),
    EffectKind.RESUME_INTENTION: _move_intention(IntentionStatus.ACTIVE),
    EffectKind.SUSPEND_INTENTION: _move_intention(IntentionStatus.SUSPENDED),
    EffectKind.UNVERIFIED_INTENTION: _move_intention(IntentionStatus.OUTCOME_UNVERIFIED),
    EffectKind.FULFIL_INTENTION: _move_intention(IntentionStatus.FULFILLED),
    EffectKind.FORM_SUBORDINATE: _form_subordinate,
    EffectKind.FULFIL_SUBORDINATE: _fulfil_subordinates,
}


def told(deps: Deps, body: dict[str, Any], plan: Plan, effects: list[Effect]) -> list[Entry]:
    """The rows (and notices) among ``effects``, to be journalled with the transition."""
    return [TOLD[e.kind](deps, body, plan, e) for e in effects if e.kind in TOLD]


def apply_effects(deps: Deps, body: dict[str, Any], plan: Plan, effects: list[Effect]) -> None:
    """Apply the effects on the ledger's state (the rows among them are ``told``)."""
    for effect in effects:
        if effect.kind in TOLD:
            continue
        # The intention is looked up per effect, as before: an effect may have just moved it.
        scene = Scene(deps, body, plan, plan_intention(deps, body, plan), deps.clock())
        APPLIED[effect.kind](scene, effect)

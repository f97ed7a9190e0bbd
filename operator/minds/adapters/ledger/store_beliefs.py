"""Beliefs, their evidence, and the predictions that test them, in the ledger.

A belief's confidence changes only by evidence, and each piece of evidence is an append-only
row with a caller-chosen unique key: the belief row is locked, the evidence inserted, and the
confidence moved only when the insert wrote a row, so a replayed piece adds nothing.

A prediction is resolved once, from open. Resolving a confirmed or refuted prediction adds its
evidence to the supporting belief in the same transaction (key `prediction_evidence_key`), so a
crash can never leave a resolved prediction whose belief was not told; an expired prediction
adds none, because not being able to look is not evidence either way.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime

from pydantic import JsonValue
from sqlalchemy import case, func, select
from sqlalchemy.dialects.postgresql import insert
from sqlalchemy.orm import Session

from minds.adapters.ledger.schema import BeliefEvidenceRow, BeliefRow, PredictionRow
from minds.adapters.ledger.sealing import appended, returning_chained
from minds.adapters.ledger.store_common import SessionOwner, entity_event, insert_event
from minds.domain.beliefs import (
    BELIEF_EVIDENCE_ADDED,
    BELIEF_FORMED,
    PREDICTION_OPENED,
    BeliefRecord,
    Calibration,
    EvidenceRecord,
    PredictionRecord,
    PredictionStatus,
    belief_id,
    calibration,
    prediction_event_type,
    prediction_evidence_key,
    updated_confidence,
)
from minds.domain.errors import NotFound
from minds.domain.ledger import EventRecord, idempotency_key, mask_note, mask_secrets
from minds.domain.metrics.state import PredictionSummary

__all__ = ["BeliefStore"]

_BELIEF = "Belief"
_PREDICTION = "Prediction"
_SCORED = (PredictionStatus.CONFIRMED.value, PredictionStatus.REFUTED.value)


class BeliefStore(SessionOwner):
    # -- beliefs ------------------------------------------------------------------------------

    def upsert_belief(
        self, namespace: str, mind: str, statement: str, confidence: float, at: datetime
    ) -> BeliefRecord:
        """The mind's belief in `statement`, formed with `confidence` if it did not exist yet.

        An existing belief keeps its confidence: only evidence moves it.
        """
        text = " ".join(statement.split())
        record = BeliefRecord(
            id=belief_id(namespace, mind, statement),
            namespace=namespace,
            mind=mind,
            statement=text,
            confidence=confidence,
            updated_at=at,
        )
        formed = (
            insert(BeliefRow)
            .values(
                id=record.id,
                namespace=namespace,
                mind=mind,
                statement=text,
                confidence=confidence,
                evidence_for=0,
                evidence_against=0,
                updated_at=at,
            )
            .on_conflict_do_nothing(index_elements=[BeliefRow.id])
            .returning(BeliefRow.id)
        )
        with self.session() as session:
            if session.execute(formed).scalar_one_or_none() is None:
                return _belief(session.get_one(BeliefRow, record.id))
            payload: dict[str, JsonValue] = {"statement": text, "confidence": confidence}
            key = idempotency_key("belief", record.id, "formed")
            insert_event(session, _belief_event(record, BELIEF_FORMED, payload, at, key))
            return record

    def add_evidence(
        self,
        belief_id: str,
        *,
        supports: bool,
        weight: float,
        key: str,
        at: datetime,
        note: str,
    ) -> BeliefRecord:
        """Add one piece of evidence and move the confidence by `updated_confidence`.

        `key` identifies the piece across the whole ledger: a replay with the same key adds
        nothing and returns the belief as it stands. Raises `NotFound` for an unknown belief.
        """
        with self.session() as session:
            return _add_evidence(session, belief_id, supports, weight, key, at, note)

    def belief(self, belief_id: str) -> BeliefRecord | None:
        with self.session() as session:
            row = session.get(BeliefRow, belief_id)
            return None if row is None else _belief(row)

    def beliefs(self, namespace: str, mind: str) -> list[BeliefRecord]:
        query = (
            select(BeliefRow)
            .where(BeliefRow.namespace == namespace, BeliefRow.mind == mind)
            .order_by(BeliefRow.statement, BeliefRow.id)
        )
        with self.session() as session:
            return [_belief(row) for row in session.scalars(query)]

    def belief_evidence(self, belief_id: str) -> list[EvidenceRecord]:
        """The belief's evidence, in the order it was added."""
        query = (
            select(BeliefEvidenceRow)
            .where(BeliefEvidenceRow.belief_id == belief_id)
            .order_by(BeliefEvidenceRow.id)
        )
        with self.session() as session:
            return [_evidence(row) for row in session.scalars(query)]

    # -- predictions --------------------------------------------------------------------------

    def open_prediction(self, record: PredictionRecord) -> tuple[PredictionRecord, bool]:
        """Open the prediction; if one with its id exists, return that one and False."""
        if record.status is not PredictionStatus.OPEN:
            raise ValueError("a prediction is opened in status open")
        statement = (
            insert(PredictionRow)
            .values(
                id=record.id,
                namespace=record.namespace,
                mind=record.mind,
                plan=record.plan,
                step=record.step,
                execution_id=record.execution_id,
                belief_id=record.belief_id,
                criteria=mask_secrets(record.criteria),
                confidence=record.confidence,
                window_start=record.window_start,
                window_end=record.window_end,
                status=record.status.value,
                resolved_at=None,
                observation=None,
            )
            .on_conflict_do_nothing(index_elements=[PredictionRow.id])
            .returning(PredictionRow)
        )
        with self.session() as session:
            inserted = session.execute(statement).scalar_one_or_none()
            if inserted is None:
                return _prediction(session.get_one(PredictionRow, record.id)), False
            stored = _prediction(inserted)
            payload: dict[str, JsonValue] = stored.model_dump(
                mode="json", include={"plan", "step", "execution_id", "belief_id", "criteria"}
            )
            payload |= {
                "confidence": stored.confidence,
                "window_start": stored.window_start.isoformat(),
                "window_end": stored.window_end.isoformat(),
            }
            key = idempotency_key("prediction", stored.id, "opened")
            at = stored.window_start
            insert_event(session, _prediction_event(stored, PREDICTION_OPENED, payload, at, key))
            return stored, True

    def resolve_prediction(
        self,
        prediction_id: str,
        status: PredictionStatus,
        at: datetime,
        observation: Mapping[str, JsonValue] | None,
    ) -> PredictionRecord | None:
        """Resolve an open prediction as confirmed, refuted or expired.

        Returns the resolved record when this call resolved it, and None when the prediction
        was no longer open (resolved before, by this caller or another): read it with
        `prediction` to see how. The event (`prediction_resolved`, `prediction_error` or
        `prediction_expired`) and, for confirmed or refuted, the evidence for or against the
        supporting belief are written in the same transaction. Raises `NotFound` for an
        unknown id.
        """
        if not status.resolved:
            raise ValueError("a prediction is resolved as confirmed, refuted or expired")
        with self.session() as session:
            row = session.get(PredictionRow, prediction_id, with_for_update=True)
            if row is None:
                raise NotFound(f"prediction {prediction_id!r} is not in the ledger")
            if row.status != PredictionStatus.OPEN.value:
                return None
            row.status = status.value
            row.resolved_at = at
            row.observation = None if observation is None else mask_secrets(observation)
            resolved = _prediction(row)
            payload: dict[str, JsonValue] = {
                "status": status.value,
                "confidence": resolved.confidence,
                "plan": resolved.plan,
                "step": resolved.step,
                "execution_id": resolved.execution_id,
                "belief_id": resolved.belief_id,
                "criteria": resolved.criteria,
                "observation": resolved.observation,
            }
            key = idempotency_key("prediction", resolved.id, "resolved")
            event = _prediction_event(resolved, prediction_event_type(status), payload, at, key)
            insert_event(session, event)
            if resolved.belief_id is not None and status is not PredictionStatus.EXPIRED:
                _add_evidence(
                    session,
                    resolved.belief_id,
                    status is PredictionStatus.CONFIRMED,
                    1.0,
                    prediction_evidence_key(resolved.id),
                    at,
                    f"prediction {resolved.id} {status.value} ({resolved.plan} {resolved.step})",
                )
            return resolved

    def prediction(self, prediction_id: str) -> PredictionRecord | None:
        with self.session() as session:
            row = session.get(PredictionRow, prediction_id)
            return None if row is None else _prediction(row)

    def predictions(
        self, namespace: str, mind: str, status: PredictionStatus | None = None
    ) -> list[PredictionRecord]:
        """The mind's predictions, by when their windows open."""
        query = (
            select(PredictionRow)
            .where(PredictionRow.namespace == namespace, PredictionRow.mind == mind)
            .order_by(PredictionRow.window_start, PredictionRow.id)
        )
        if status is not None:
            query = query.where(PredictionRow.status == status.value)
        with self.session() as session:
            return [_prediction(row) for row in session.scalars(query)]

    def calibration(self, namespace: str, mind: str) -> Calibration:
        """The mind's calibration over its confirmed and refuted predictions."""
        query = select(PredictionRow).where(
            PredictionRow.namespace == namespace,
            PredictionRow.mind == mind,
            PredictionRow.status.in_(_SCORED),
        )
        with self.session() as session:
            return calibration(_prediction(row) for row in session.scalars(query))

    def prediction_summaries(self) -> list[PredictionSummary]:
        """Every mind's predictions counted by status, with the squared error of the resolved
        ones, in one grouped query: what the metrics export at each scrape. Read only."""
        outcome = case((PredictionRow.status == PredictionStatus.CONFIRMED.value, 1.0), else_=0.0)
        error = case(
            (
                PredictionRow.status.in_(_SCORED),
                (PredictionRow.confidence - outcome) * (PredictionRow.confidence - outcome),
            ),
            else_=0.0,
        )
        query = select(
            PredictionRow.namespace,
            PredictionRow.mind,
            PredictionRow.status,
            func.count(),
            func.sum(error),
        ).group_by(PredictionRow.namespace, PredictionRow.mind, PredictionRow.status)
        counts: dict[tuple[str, str], dict[PredictionStatus, int]] = {}
        errors: dict[tuple[str, str], float] = {}
        with self.session() as session:
            for namespace, mind, status, n, err in session.execute(query):
                key = (namespace, mind)
                counts.setdefault(key, {})[PredictionStatus(status)] = int(n)
                errors[key] = errors.get(key, 0.0) + float(err or 0.0)
        return [
            PredictionSummary(namespace=ns, mind=mind, counts=c, squared_error=errors[(ns, mind)])
            for (ns, mind), c in sorted(counts.items())
        ]


def _add_evidence(
    session: Session,
    belief: str,
    supports: bool,
    weight: float,
    key: str,
    at: datetime,
    note: str,
) -> BeliefRecord:
    note = mask_note(note)
    # Lock first: two pieces of evidence about one belief apply one after the other, each to
    # the confidence the other left.
    row = session.get(BeliefRow, belief, with_for_update=True)
    if row is None:
        raise NotFound(f"belief {belief!r} is not in the ledger")
    before = row.confidence
    after = updated_confidence(before, supports, weight)
    written = appended(
        session,
        returning_chained(
            insert(BeliefEvidenceRow).values(
                belief_id=belief,
                key=key,
                supports=supports,
                weight=weight,
                note=note,
                confidence_before=before,
                confidence_after=after,
                occurred_at=at,
            ),
            BeliefEvidenceRow.id,
        ),
    )
    if not written:
        return _belief(row)
    row.confidence = after
    if supports:
        row.evidence_for += 1
    else:
        row.evidence_against += 1
    row.updated_at = at
    record = _belief(row)
    payload: dict[str, JsonValue] = {
        "supports": supports,
        "weight": weight,
        "note": note,
        "confidence_before": before,
        "confidence_after": after,
        "key": key,
    }
    event_key = idempotency_key("belief_evidence", key)
    insert_event(session, _belief_event(record, BELIEF_EVIDENCE_ADDED, payload, at, event_key))
    return record


def _belief_event(
    record: BeliefRecord, type: str, payload: dict[str, JsonValue], at: datetime, key: str
) -> EventRecord:
    return entity_event(
        namespace=record.namespace,
        mind=record.mind,
        type=type,
        kind=_BELIEF,
        entity_id=record.id,
        payload=payload,
        at=at,
        key=key,
    )


def _prediction_event(
    record: PredictionRecord, type: str, payload: dict[str, JsonValue], at: datetime, key: str
) -> EventRecord:
    return entity_event(
        namespace=record.namespace,
        mind=record.mind,
        type=type,
        kind=_PREDICTION,
        entity_id=record.id,
        payload=payload,
        at=at,
        key=key,
    )


def _belief(row: BeliefRow) -> BeliefRecord:
    return BeliefRecord(
        id=row.id,
        namespace=row.namespace,
        mind=row.mind,
        statement=row.statement,
        confidence=row.confidence,
        evidence_for=row.evidence_for,
        evidence_against=row.evidence_against,
        updated_at=row.updated_at,
    )


def _evidence(row: BeliefEvidenceRow) -> EvidenceRecord:
    return EvidenceRecord(
        belief_id=row.belief_id,
        key=row.key,
        supports=row.supports,
        weight=row.weight,
        note=row.note,
        confidence_before=row.confidence_before,
        confidence_after=row.confidence_after,
        occurred_at=row.occurred_at,
    )


def _prediction(row: PredictionRow) -> PredictionRecord:
    return PredictionRecord(
        id=row.id,
        namespace=row.namespace,
        mind=row.mind,
        plan=row.plan,
        step=row.step,
        execution_id=row.execution_id,
        belief_id=row.belief_id,
        criteria=row.criteria,
        confidence=row.confidence,
        window_start=row.window_start,
        window_end=row.window_end,
        status=PredictionStatus(row.status),
        resolved_at=row.resolved_at,
        observation=row.observation,
    )

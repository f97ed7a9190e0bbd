"""Intentions in the ledger: one current-state row each, and an event for every version.

Every change locks the row (SELECT ... FOR UPDATE), applies the domain rule to what is stored
now, writes the new version and appends the event keyed by (intention, version) in the same
transaction. Concurrent writers therefore take turns, each sees the previous one's result, and
versions count the changes exactly. A replayed change finds the intention already as asked and
writes nothing.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from datetime import datetime

from pydantic import JsonValue
from sqlalchemy import select
from sqlalchemy.dialects.postgresql import insert
from sqlalchemy.orm import Session

from minds.adapters.ledger.schema import IntentionRow
from minds.adapters.ledger.store_common import SessionOwner, entity_event, insert_event
from minds.domain.errors import NotFound
from minds.domain.intentions import (
    INTENTION_FORMED,
    INTENTION_UPDATED,
    UNSET,
    IntentionKind,
    IntentionRecord,
    IntentionStatus,
    Unset,
    formed_payload,
    intention_event_key,
    intention_event_type,
    moved_payload,
    statuses_of,
    transitioned,
    updated,
)
from minds.domain.ledger import EventRecord, mask_note, mask_secrets

__all__ = ["IntentionStore"]

_KIND = "Intention"


class IntentionStore(SessionOwner):
    def form_intention(self, record: IntentionRecord) -> tuple[IntentionRecord, bool]:
        """Form the intention; if one with its id exists, return that one and False.

        A new intention starts at version 1 and its `intention_formed` event is written with it.
        The parent, if named, must already be in the ledger.
        """
        if record.version != 1:
            raise ValueError("an intention is formed at version 1")
        statement = (
            insert(IntentionRow)
            .values(**_row_values(record))
            .on_conflict_do_nothing(index_elements=[IntentionRow.id])
            .returning(IntentionRow)
        )
        with self.session() as session:
            inserted = session.execute(statement).scalar_one_or_none()
            if inserted is None:
                return _record(session.get_one(IntentionRow, record.id)), False
            stored = _record(inserted)
            insert_event(session, _event(stored, INTENTION_FORMED, formed_payload(stored)))
            return stored, True

    def intention(self, intention_id: str) -> IntentionRecord | None:
        with self.session() as session:
            row = session.get(IntentionRow, intention_id)
            return None if row is None else _record(row)

    def transition_intention(
        self, intention_id: str, status: IntentionStatus, reason: str | None, at: datetime
    ) -> IntentionRecord | None:
        """Move the intention to `status` with `reason`; returns the record as it now stands.

        None when the move is not allowed from the current status (a final one). Already in
        `status` for the same reason: nothing is written and the record is returned as it is.
        Raises `NotFound` for an unknown id.
        """
        # Masked before the comparison, so a replay with the same reason still writes nothing.
        reason = None if reason is None else mask_note(reason)
        with self.session() as session:
            row, current = _locked(session, intention_id)
            after = transitioned(current, status, reason, at)
            if after is None or after.version == current.version:
                return after
            _apply(row, after)
            moved = moved_payload(current, after)
            insert_event(session, _event(after, intention_event_type(after.status), moved))
            return after

    def update_intention(
        self,
        intention_id: str,
        *,
        plan: str | Unset | None = UNSET,
        replans: int | Unset = UNSET,
        failed_strategies: Sequence[str] | Unset = UNSET,
        at: datetime,
    ) -> IntentionRecord:
        """Change only the given fields (one version later, `intention_updated`); giving the
        values the intention already has writes nothing. Raises `NotFound` for an unknown id."""
        with self.session() as session:
            row, current = _locked(session, intention_id)
            after = updated(
                current, plan=plan, replans=replans, failed_strategies=failed_strategies, at=at
            )
            if after.version == current.version:
                return current
            _apply(row, after)
            changed: dict[str, JsonValue] = {
                "plan": after.plan,
                "replans": after.replans,
                "failed_strategies": list(after.failed_strategies),
            }
            payload: dict[str, JsonValue] = {
                "version": after.version,
                "changed": {
                    name: value
                    for name, value in changed.items()
                    if getattr(current, name) != getattr(after, name)
                },
            }
            insert_event(session, _event(after, INTENTION_UPDATED, payload))
            return after

    def intentions(
        self,
        *,
        namespace: str | None = None,
        mind: str | None = None,
        status: IntentionStatus | Collection[IntentionStatus] | None = None,
        parent_id: str | None = None,
    ) -> list[IntentionRecord]:
        """Intentions matching every given filter (``status``: one, or any of several),
        oldest first."""
        query = select(IntentionRow).order_by(IntentionRow.created_at, IntentionRow.id)
        if namespace is not None:
            query = query.where(IntentionRow.namespace == namespace)
        if mind is not None:
            query = query.where(IntentionRow.mind == mind)
        if status is not None:
            statuses = statuses_of(status)
            query = query.where(IntentionRow.status.in_([s.value for s in statuses]))
        if parent_id is not None:
            query = query.where(IntentionRow.parent_id == parent_id)
        with self.session() as session:
            return [_record(row) for row in session.scalars(query)]


def _locked(session: Session, intention_id: str) -> tuple[IntentionRow, IntentionRecord]:
    row = session.get(IntentionRow, intention_id, with_for_update=True)
    if row is None:
        raise NotFound(f"intention {intention_id!r} is not in the ledger")
    return row, _record(row)


def _row_values(record: IntentionRecord) -> dict[str, object]:
    parameters = record.means_parameters
    return {
        "id": record.id,
        "namespace": record.namespace,
        "mind": record.mind,
        "objective": record.objective,
        "kind": record.kind.value,
        "status": record.status.value,
        "reason": record.reason,
        "parent_id": record.parent_id,
        "subject": record.subject,
        "means_capability": record.means_capability,
        "means_parameters": None if parameters is None else mask_secrets(parameters),
        "requires_approval": record.requires_approval,
        "plan": record.plan,
        "replans": record.replans,
        "failed_strategies": list(record.failed_strategies),
        "version": record.version,
        "created_at": record.created_at,
        "updated_at": record.updated_at,
    }


def _apply(row: IntentionRow, record: IntentionRecord) -> None:
    """Write the fields a change can touch; identity and formation fields never change."""
    row.status = record.status.value
    row.reason = record.reason
    row.plan = record.plan
    row.replans = record.replans
    row.failed_strategies = list(record.failed_strategies)
    row.version = record.version
    row.updated_at = record.updated_at


def _record(row: IntentionRow) -> IntentionRecord:
    return IntentionRecord(
        id=row.id,
        namespace=row.namespace,
        mind=row.mind,
        objective=row.objective,
        kind=IntentionKind(row.kind),
        status=IntentionStatus(row.status),
        reason=row.reason,
        parent_id=row.parent_id,
        subject=row.subject,
        means_capability=row.means_capability,
        means_parameters=row.means_parameters,
        requires_approval=row.requires_approval,
        plan=row.plan,
        replans=row.replans,
        failed_strategies=list(row.failed_strategies),
        version=row.version,
        created_at=row.created_at,
        updated_at=row.updated_at,
    )


def _event(record: IntentionRecord, type: str, payload: dict[str, JsonValue]) -> EventRecord:
    return entity_event(
        namespace=record.namespace,
        mind=record.mind,
        type=type,
        kind=_KIND,
        entity_id=record.id,
        payload=payload,
        at=record.updated_at,
        key=intention_event_key(record.id, record.version),
    )

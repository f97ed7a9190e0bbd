"""Volition in the ledger: wants, commitment states, and the append-only record of choices.

Wants are stored as their model's JSON with a few columns to query by; the domain owns their
shape. Every choice is one row of ``volition_decisions``, keyed so a replayed cycle writes
nothing twice; a change of a want or a commitment state also appends an event, in the same
transaction.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from datetime import datetime
from typing import Any

from pydantic import JsonValue
from sqlalchemy import select
from sqlalchemy.dialects.postgresql import insert

from minds.adapters.ledger.schema import (
    CommitmentStateRow,
    ConflictRow,
    VolitionDecisionRow,
    WantRow,
)
from minds.adapters.ledger.sealing import appended, returning_chained
from minds.adapters.ledger.store_common import (
    SessionOwner,
    advisory_lock,
    entity_event,
    insert_event,
)
from minds.domain.ledger import DecisionRecord, idempotency_key, mask_note, mask_secrets

__all__ = ["VolitionStore"]


class VolitionStore(SessionOwner):
    engine: Any

    def upsert_want(
        self,
        *,
        namespace: str,
        mind: str,
        want_id: str,
        subject: str,
        status: str,
        strength: float,
        data: Mapping[str, JsonValue],
        at: datetime,
    ) -> bool:
        """Create or update a want; an event tells each change. False: nothing changed."""
        payload = mask_secrets(dict(data))
        with self.session() as session:
            row = session.get(WantRow, want_id, with_for_update=True)
            if row is not None and row.status == status and row.data == payload:
                return False
            if row is None:
                row = WantRow(
                    id=want_id,
                    namespace=namespace,
                    mind=mind,
                    subject=subject,
                    status=status,
                    strength=strength,
                    data=payload,
                    version=1,
                    created_at=at,
                    updated_at=at,
                )
                session.add(row)
                event_type = "want_derived"
            else:
                event_type = "want_updated" if row.status == status else f"want_{status}"
                row.status, row.strength, row.data = status, strength, payload
                row.version += 1
                row.updated_at = at
            session.flush()
            insert_event(
                session,
                entity_event(
                    namespace=namespace,
                    mind=mind,
                    type=event_type,
                    kind="Want",
                    entity_id=want_id,
                    payload={"subject": subject, "status": status, "strength": strength},
                    at=at,
                    key=idempotency_key("want", want_id, str(row.version)),
                ),
            )
            return True

    def wants(self, namespace: str, mind: str, status: str | None = None) -> list[dict[str, Any]]:
        query = select(WantRow).where(WantRow.namespace == namespace, WantRow.mind == mind)
        if status is not None:
            query = query.where(WantRow.status == status)
        with self.session() as session:
            return [
                dict(r.data) for r in session.execute(query.order_by(WantRow.created_at)).scalars()
            ]

    def save_conflict(
        self,
        *,
        namespace: str,
        mind: str,
        conflict_id: str,
        open_: bool,
        data: Mapping[str, JsonValue],
        at: datetime,
    ) -> None:
        """Keep a conflict's current state (its changes are recorded as decisions). Its data
        quotes the wants in conflict, which may quote a spec: masked like them."""
        masked = mask_secrets(dict(data))
        statement = insert(ConflictRow).values(
            id=conflict_id,
            namespace=namespace,
            mind=mind,
            open=open_,
            data=masked,
            updated_at=at,
        )
        statement = statement.on_conflict_do_update(
            index_elements=[ConflictRow.id],
            set_={"open": open_, "data": masked, "updated_at": at},
        )
        with self.session() as session:
            session.execute(statement)

    def conflicts(
        self, namespace: str, mind: str, *, open_only: bool = True
    ) -> list[dict[str, Any]]:
        query = select(ConflictRow).where(
            ConflictRow.namespace == namespace, ConflictRow.mind == mind
        )
        if open_only:
            query = query.where(ConflictRow.open.is_(True))
        with self.session() as session:
            return [dict(r.data) for r in session.execute(query).scalars()]

    def record_decision(
        self,
        *,
        namespace: str,
        mind: str,
        kind: str,
        outcome: str,
        subjects: Mapping[str, str],
        data: Mapping[str, JsonValue],
        at: datetime,
        key: str,
    ) -> bool:
        """Append one choice; False if its key was already recorded (a replayed cycle)."""
        statement = returning_chained(
            insert(VolitionDecisionRow).values(
                namespace=namespace,
                mind=mind,
                kind=kind,
                outcome=outcome,
                subjects=dict(subjects),
                data=mask_secrets(dict(data)),
                decided_at=at,
                idempotency_key=key,
            ),
            VolitionDecisionRow.id,
        )
        with self.session() as session:
            return bool(appended(session, statement))

    def decisions(
        self,
        *,
        namespace: str,
        mind: str | None = None,
        kind: str | None = None,
        subject: tuple[str, str] | None = None,
    ) -> list[DecisionRecord]:
        """Choices in the order made; ``subject`` = (role, id), e.g. ("intention", "int-...")."""
        query = select(VolitionDecisionRow).where(VolitionDecisionRow.namespace == namespace)
        if mind is not None:
            query = query.where(VolitionDecisionRow.mind == mind)
        if kind is not None:
            query = query.where(VolitionDecisionRow.kind == kind)
        if subject is not None:
            query = query.where(VolitionDecisionRow.subjects.contains({subject[0]: subject[1]}))
        with self.session() as session:
            return [
                DecisionRecord(
                    r.id,
                    r.namespace,
                    r.mind,
                    r.kind,
                    r.outcome,
                    dict(r.subjects),
                    dict(r.data),
                    r.decided_at,
                )
                for r in session.execute(query.order_by(VolitionDecisionRow.id)).scalars()
            ]

    def set_commitment_state(
        self, namespace: str, mind: str, name: str, state: str, reason: str | None, at: datetime
    ) -> bool:
        """Move a commitment to ``state``; False if it already was there."""
        reason = None if reason is None else mask_note(reason)
        with self.session() as session:
            row = session.get(CommitmentStateRow, (namespace, mind, name), with_for_update=True)
            if row is not None and row.state == state:
                return False
            if row is None:
                session.add(
                    CommitmentStateRow(
                        namespace=namespace,
                        mind=mind,
                        name=name,
                        state=state,
                        reason=reason,
                        updated_at=at,
                    )
                )
            else:
                row.state, row.reason, row.updated_at = state, reason, at
            insert_event(
                session,
                entity_event(
                    namespace=namespace,
                    mind=mind,
                    type=f"commitment_{state}",
                    kind="Commitment",
                    entity_id=f"{mind}/{name}",
                    payload={"commitment": name, "reason": reason},
                    at=at,
                    key=idempotency_key("commitment", namespace, mind, name, state, at.isoformat()),
                ),
            )
            return True

    def commitment_states(self, namespace: str, mind: str) -> dict[str, str]:
        query = select(CommitmentStateRow).where(
            CommitmentStateRow.namespace == namespace, CommitmentStateRow.mind == mind
        )
        with self.session() as session:
            return {r.name: r.state for r in session.execute(query).scalars()}

    def commitment_updated_at(self, namespace: str, mind: str) -> dict[str, datetime]:
        """When each commitment's state was last recorded (a fulfilled one's: when it was
        fulfilled, from which a recurring one is due again at the next period start)."""
        query = select(CommitmentStateRow).where(
            CommitmentStateRow.namespace == namespace, CommitmentStateRow.mind == mind
        )
        with self.session() as session:
            return {r.name: r.updated_at for r in session.execute(query).scalars()}

    @contextmanager
    def cycle_lock(self, namespace: str, mind: str) -> Iterator[bool]:
        """Hold a session advisory lock for one mind's cycle; yields False if another holder
        (another controller) has it. Released when the block ends, or if the process dies."""
        with advisory_lock(self.engine, "cycle", namespace, mind) as mine:
            yield mine

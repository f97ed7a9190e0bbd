"""Procedural memories in the ledger: append-only, one per completed plan."""

from __future__ import annotations

from pydantic import JsonValue
from sqlalchemy import select
from sqlalchemy.dialects.postgresql import insert

from minds.adapters.ledger.schema import ProceduralMemoryRow
from minds.adapters.ledger.sealing import appended, returning_chained
from minds.adapters.ledger.store_common import SessionOwner, entity_event, insert_event
from minds.domain.ledger import idempotency_key, mask_note
from minds.domain.procedures import PROCEDURE_STORED, ProceduralMemory

__all__ = ["ProcedureStore"]


class ProcedureStore(SessionOwner):
    def store_procedure(self, memory: ProceduralMemory) -> bool:
        """Store the memory and its `procedure_stored` event; False if its id was already
        there (the first write stands)."""
        statement = returning_chained(
            insert(ProceduralMemoryRow).values(
                id=memory.id,
                namespace=memory.namespace,
                mind=memory.mind,
                subject=memory.subject,
                body=mask_note(memory.text),
                confidence=memory.confidence,
                plan=memory.plan,
                revision=memory.revision,
                created_at=memory.created_at,
            ),
            ProceduralMemoryRow.id,
        )
        with self.session() as session:
            if not appended(session, statement):
                return False
            payload: dict[str, JsonValue] = memory.model_dump(
                mode="json", include={"subject", "text", "confidence", "plan", "revision"}
            )
            event = entity_event(
                namespace=memory.namespace,
                mind=memory.mind,
                type=PROCEDURE_STORED,
                kind="ProceduralMemory",
                entity_id=memory.id,
                payload=payload,
                at=memory.created_at,
                key=idempotency_key("procedure", memory.id),
            )
            insert_event(session, event)
            return True

    def procedures(
        self, namespace: str, mind: str, subject: str | None = None
    ) -> list[ProceduralMemory]:
        """The mind's procedural memories (about `subject`, if given), oldest first."""
        query = (
            select(ProceduralMemoryRow)
            .where(ProceduralMemoryRow.namespace == namespace, ProceduralMemoryRow.mind == mind)
            .order_by(ProceduralMemoryRow.created_at, ProceduralMemoryRow.id)
        )
        if subject is not None:
            query = query.where(ProceduralMemoryRow.subject == subject)
        with self.session() as session:
            return [_memory(row) for row in session.scalars(query)]


def _memory(row: ProceduralMemoryRow) -> ProceduralMemory:
    return ProceduralMemory(
        id=row.id,
        namespace=row.namespace,
        mind=row.mind,
        subject=row.subject,
        text=row.body,
        confidence=row.confidence,
        plan=row.plan,
        revision=row.revision,
        created_at=row.created_at,
    )

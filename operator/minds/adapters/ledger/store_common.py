"""What the ledger's store modules share: a session per call, and appending an event inside it.

A change to current state (an intention's status, a belief's confidence) and the event that
tells it are written in one transaction, so the ledger never shows one without the other.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager
from datetime import datetime

from pydantic import JsonValue
from sqlalchemy import Engine, text
from sqlalchemy.dialects.postgresql import insert
from sqlalchemy.orm import Session

from minds.adapters.ledger.observer import note_appended
from minds.adapters.ledger.schema import EventRow, table_of
from minds.adapters.ledger.sealing import appended, returning_chained
from minds.domain.ledger import EventRecord, SubjectRef, idempotency_key, mask_secrets

__all__ = ["SessionOwner", "entity_event", "insert_event", "insert_events"]


class SessionOwner:
    """Base of the store mixins: `Ledger` provides the session."""

    def session(self) -> AbstractContextManager[Session]:
        """A session in one transaction: committed on success, rolled back on error."""
        raise NotImplementedError


#: One statement for every append, built once: a statement built per call (values bound into
#: it) costs the ORM more CPU to compile and cache-key than the database takes to run it.
#: No ON CONFLICT: the sealing trigger writes each row's key into its keys table first and
#: skips a row whose key is there (see `chain.chain_trigger_sql`), so a replay returns nothing.
_EVENTS = table_of(EventRow)
_APPEND = returning_chained(
    insert(_EVENTS),
    _EVENTS.c.idempotency_key,
)


def insert_event(session: Session, record: EventRecord) -> bool:
    """Append one event in the caller's transaction; False if its key was already there."""
    return insert_events(session, [record])[0]


def insert_events(session: Session, records: Sequence[EventRecord]) -> list[bool]:
    """Append events in the caller's transaction, in one statement; for each, False if its
    key was already there (or earlier in ``records``)."""
    if not records:
        return []
    rows = [
        {
            "mind": record.mind,
            "namespace": record.namespace,
            "type": record.type,
            "subject_kind": record.subject.kind,
            "subject_name": record.subject.name,
            "subject_uid": record.subject.uid,
            "payload": mask_secrets(record.payload),
            "occurred_at": record.occurred_at,
            "idempotency_key": record.idempotency_key,
        }
        for record in records
    ]
    fresh = set(appended(session, _APPEND, rows))
    new: list[bool] = []
    for record in records:
        first = record.idempotency_key in fresh
        fresh.discard(record.idempotency_key)
        new.append(first)
        if first:
            note_appended(session, record)
    return new


def entity_event(
    *,
    namespace: str,
    mind: str,
    type: str,
    kind: str,
    entity_id: str,
    payload: dict[str, JsonValue],
    at: datetime,
    key: str,
) -> EventRecord:
    """An event about a ledger entity. Its id is both the subject's name and uid, so
    `Ledger.events(subject_uid=id)` reads back the entity's whole story."""
    return EventRecord(
        mind=mind,
        namespace=namespace,
        type=type,
        subject=SubjectRef(kind=kind, name=entity_id, uid=entity_id),
        payload=payload,
        occurred_at=at,
        idempotency_key=key,
    )


#: Session locks (a mind's cycle, a writing action on a target) hold a pooled connection for a
#: whole block, and the block's own transactions need more. If lock holders could take every
#: kept connection, their transactions would wait for connections only they can free (a start
#: with many minds exhausted the pool so). So at most half of an engine's kept connections are
#: held by locks at once; a thread that already holds one (a lock inside a lock) takes no slot.
_LOCK_SLOTS: dict[int, threading.BoundedSemaphore] = {}
_LOCK_SLOTS_GUARD = threading.Lock()
_HOLDING = threading.local()


def _lock_slots(engine: Engine) -> threading.BoundedSemaphore | None:
    size = getattr(engine.pool, "size", None)
    if not callable(size):
        return None  # a pool without a bound cannot be exhausted
    with _LOCK_SLOTS_GUARD:
        slots = _LOCK_SLOTS.get(id(engine))
        if slots is None:
            slots = _LOCK_SLOTS[id(engine)] = threading.BoundedSemaphore(max(1, size() // 2))
        return slots


@contextmanager
def _lock_slot(engine: Engine) -> Iterator[None]:
    depth: int = getattr(_HOLDING, "depth", 0)
    slots = None if depth else _lock_slots(engine)
    if slots is not None:
        slots.acquire()
    _HOLDING.depth = depth + 1
    try:
        yield
    finally:
        _HOLDING.depth = depth
        if slots is not None:
            slots.release()


@contextmanager
def advisory_lock(engine: Engine, *parts: str) -> Iterator[bool]:
    """Hold a session advisory lock named by ``parts`` for the block; yields False (holding
    nothing) when another holder (another controller) has it. Released when the block ends, or
    if the process dies."""
    key = int(idempotency_key(*parts)[:15], 16)
    with _lock_slot(engine), engine.connect() as connection:
        got = bool(connection.execute(text("SELECT pg_try_advisory_lock(:k)"), {"k": key}).scalar())
        try:
            yield got
        finally:
            if got:
                connection.execute(text("SELECT pg_advisory_unlock(:k)"), {"k": key})
                connection.commit()

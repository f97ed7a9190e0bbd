"""The ledger store: append events, query them, keep the current state of minds.

Every write is idempotent. Events are keyed by a deterministic idempotency key, and an insert
whose key is already in `event_keys` adds nothing (the sealing trigger skips it, in whatever
month's partition it would land), so replaying a transition after a crash adds nothing; mind
rows are only moved forward (newer generation, or a new uid after delete and re-create), so a
replayed or stale observation leaves them as they are. Payloads and specs pass through
`mask_secrets` first.

Intentions, beliefs, predictions, procedural memories and routine's series live in the store
mixins (`store_intentions`, `store_beliefs`, `store_procedures`, `store_series`); `Ledger`
exposes their methods.

The API is synchronous; async callers run it in a thread (`asyncio.to_thread`).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from datetime import datetime
from types import TracebackType
from typing import Any, Self

from pydantic import JsonValue
from sqlalchemy import URL, Engine, Select, select, text
from sqlalchemy.dialects.postgresql import insert
from sqlalchemy.exc import SQLAlchemyError
from sqlalchemy.orm import Session, sessionmaker

from minds.adapters.ledger import observer as observing
from minds.adapters.ledger.chain import CHAINED_TABLES, journal_lock_sql
from minds.adapters.ledger.db import make_engine, redact_url
from minds.adapters.ledger.migrate import (
    SchemaStatus,
    raise_unless_at_head,
    schema_status_on,
)
from minds.adapters.ledger.observer import NO_OBSERVER, LedgerObserver
from minds.adapters.ledger.schema import (
    EventRow,
    ExecutionOutcomeRow,
    ExecutionRow,
    MindRow,
    PredictionRow,
    table_of,
)
from minds.adapters.ledger.sealing import Sealer, appended, returning_chained
from minds.adapters.ledger.store_beliefs import BeliefStore
from minds.adapters.ledger.store_checkpoints import CheckpointStore
from minds.adapters.ledger.store_common import advisory_lock, insert_event, insert_events
from minds.adapters.ledger.store_intentions import IntentionStore
from minds.adapters.ledger.store_procedures import ProcedureStore
from minds.adapters.ledger.store_series import SeriesStore
from minds.adapters.ledger.store_volition import VolitionStore
from minds.domain.beliefs import PredictionStatus
from minds.domain.executions import (
    ExecutionOrigin,
    ExecutionOutcome,
    ExecutionRecord,
    ExecutionStatus,
)
from minds.domain.ledger import (
    EventRecord,
    MindChange,
    MindRecord,
    MindUpsert,
    SubjectRef,
    mask_json,
    mask_note,
    mask_secrets,
)
from minds.domain.ledger_seal import SealingKey

__all__ = ["Ledger"]

# Built once (see store_common): an execution's two rows are written on every step.
_EXECUTIONS, _OUTCOMES = table_of(ExecutionRow), table_of(ExecutionOutcomeRow)
_BEGIN = returning_chained(
    insert(_EXECUTIONS),
    _EXECUTIONS.c.id,
)
_FINISH = returning_chained(
    insert(_OUTCOMES),
    _OUTCOMES.c.id,
)


#: The locks a mind's journal is held by, in the order every transaction that appends to both
#: takes them (an action's write-ahead row, then the events that tell of it): the events table
#: holds every approval's lifecycle, and whoever holds it may go on to write an action's row
#: in the same transaction. Taken in another order, two transactions would deadlock.
_JOURNAL_LOCKS = tuple(
    journal_lock_sql(next(t for t in CHAINED_TABLES if t.name == name))
    for name in ("executions", "events")
)


class Ledger(
    IntentionStore, BeliefStore, ProcedureStore, VolitionStore, CheckpointStore, SeriesStore
):
    """The Postgres ledger. Thread-safe: each call runs in its own session and transaction."""

    def __init__(self, engine: Engine, key: SealingKey | None = None) -> None:
        self._engine = engine
        #: Seals what each transaction appends, with ``key`` (None: unsealed, development).
        self.sealer = Sealer(key)
        self._sessions = sessionmaker(engine, expire_on_commit=False)
        observing.track_writes(self._sessions)
        self._observer: LedgerObserver = NO_OBSERVER
        # The transaction a thread is inside of, if any: calls made within it join it.
        self._current = threading.local()

    @classmethod
    def from_url(cls, url: str | URL, key: SealingKey | None = None, **engine_kwargs: Any) -> Self:
        return cls(make_engine(url, **engine_kwargs), key)

    @property
    def engine(self) -> Engine:
        return self._engine

    def __repr__(self) -> str:
        return f"Ledger({redact_url(self._engine.url)!r})"

    def close(self) -> None:
        """Close pooled connections. The ledger reconnects if used again."""
        self._engine.dispose()

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.close()

    def answers(self) -> bool:
        """Whether the database answers a trivial query now (a Mind is not Ready otherwise)."""
        try:
            with self._engine.connect() as connection:
                connection.execute(text("SELECT 1"))
        except SQLAlchemyError:
            return False
        return True

    def observe(self, observer: LedgerObserver) -> None:
        """Tell ``observer`` about every transaction from now on."""
        self._observer = observer

    @contextmanager
    def session(self) -> Iterator[Session]:
        """A session in one transaction: committed on success, rolled back on error. Inside
        ``transaction`` it is that transaction's session, which commits at its end."""
        joined: Session | None = getattr(self._current, "session", None)
        if joined is not None:
            yield joined
            return
        started = time.perf_counter()
        committed: list[Callable[[], None]] = []
        try:
            with self._sessions.begin() as session:
                self._current.session = session
                self._current.committed = committed
                try:
                    yield session
                    # The seals of what it appended, in the transaction itself, last.
                    switched = self.sealer.seal(session)
                    if switched:
                        committed.append(lambda: self.sealer.remember(switched))
                finally:
                    self._current.session = None
                    self._current.committed = None
        except SQLAlchemyError:
            self._observer.failed()
            raise
        self._observer.committed(
            observing.appended(session), time.perf_counter() - started, observing.wrote(session)
        )
        for then in committed:
            then()

    def after_commit(self, then: Callable[[], None]) -> None:
        """Run ``then`` once this thread's transaction commits (at once, outside one); never if
        it rolls back."""
        waiting: list[Callable[[], None]] | None = getattr(self._current, "committed", None)
        if waiting is None:
            then()
        else:
            waiting.append(then)

    def hold_journal(self, namespace: str, mind: str) -> None:
        """Take, for this transaction, the locks each append to the mind's journal and to its
        actions' rows takes (see ``chain.journal_lock_sql``), in the order appends take them:
        they are held until the transaction ends."""
        session: Session | None = getattr(self._current, "session", None)
        if session is None:
            raise RuntimeError("hold_journal outside a transaction holds nothing")
        for lock in _JOURNAL_LOCKS:
            session.execute(text(lock), {"namespace": namespace, "mind": mind})

    @contextmanager
    def transaction(self) -> Iterator[None]:
        """Every call this thread makes inside is one transaction: a step's rows and the
        intention and prediction changes they bring are all there afterwards, or none is."""
        with self.session():
            yield

    # -- schema ---------------------------------------------------------------------------

    def schema_status(self) -> SchemaStatus:
        """The database's migration revision against the newest this code ships."""
        with self._engine.connect() as connection:
            return schema_status_on(connection)

    def check_schema(self) -> SchemaStatus:
        """Raise `SchemaBehindError` / `SchemaAheadError` unless the schema is at head."""
        return raise_unless_at_head(self.schema_status(), self._engine.url)

    # -- executions -----------------------------------------------------------------------

    def begin_execution(
        self,
        record: ExecutionRecord,
        told: Callable[[ExecutionRecord], Sequence[EventRecord]] | None = None,
    ) -> tuple[ExecutionRecord, bool]:
        """Write the write-ahead row; if its origin key exists, return that row and False.

        The unique origin key is what makes "an approved action executes exactly once" hold
        across controllers: only one insert can win. ``told``: the event rows that tell of a
        new write-ahead row, computed from it as inserted and written in its transaction, so
        they are there if and only if it is.
        """
        row = {
            "origin_key": record.origin_key,
            "mind": record.mind,
            "namespace": record.namespace,
            "capability": record.capability,
            "target": record.target,
            "parameters": mask_secrets(record.parameters),
            "origin": record.origin.to_k8s(),
            "evidence": mask_secrets(record.evidence),
            "authority": record.authority,
            "started_at": record.started_at,
        }
        with self.session() as session:
            new_id = next(iter(appended(session, _BEGIN, row)), None)
            if new_id is not None:
                inserted = record.model_copy(update={"id": new_id})
                insert_events(session, told(inserted) if told is not None else ())
                return inserted, True
            existing = session.execute(
                select(ExecutionRow).where(ExecutionRow.origin_key == record.origin_key)
            ).scalar_one()
            return _execution_record(existing), False

    def finish_execution(self, outcome: ExecutionOutcome, told: Sequence[EventRecord] = ()) -> bool:
        """Record the outcome once, with the event rows that tell of it in the same
        transaction; False if one was already recorded (and so were they)."""
        row = {
            "execution_id": outcome.execution_id,
            "status": outcome.status.value,
            "summary": mask_note(outcome.summary),
            "fields": mask_secrets(outcome.fields),
            "output": mask_json(outcome.output),
            "error": None if outcome.error is None else mask_note(outcome.error),
            "finished_at": outcome.finished_at,
        }
        with self.session() as session:
            if not appended(session, _FINISH, row):
                return False
            insert_events(session, told)
            return True

    def execution(self, origin_key: str) -> tuple[ExecutionRecord, ExecutionOutcome | None] | None:
        """The execution with this origin key and its outcome (None: outcome unknown)."""
        with self.session() as session:
            row = session.execute(
                select(ExecutionRow).where(ExecutionRow.origin_key == origin_key)
            ).scalar_one_or_none()
            if row is None:
                return None
            outcome = session.execute(
                select(ExecutionOutcomeRow).where(ExecutionOutcomeRow.execution_id == row.id)
            ).scalar_one_or_none()
            return _execution_record(row), (_outcome(outcome) if outcome else None)

    def executions(
        self,
        *,
        namespace: str | None = None,
        mind: str | None = None,
        capability: str | None = None,
    ) -> list[ExecutionRecord]:
        query = select(ExecutionRow).order_by(ExecutionRow.id)
        if namespace is not None:
            query = query.where(ExecutionRow.namespace == namespace)
        if mind is not None:
            query = query.where(ExecutionRow.mind == mind)
        if capability is not None:
            query = query.where(ExecutionRow.capability == capability)
        with self.session() as session:
            return [_execution_record(r) for r in session.execute(query).scalars()]

    def verified_writes_on(
        self, namespace: str, target: str, since: datetime
    ) -> list[ExecutionRecord]:
        """Write-ahead rows of actions on ``target`` started at or after ``since`` whose
        prediction an observation confirmed."""
        query = (
            select(ExecutionRow)
            .join(PredictionRow, PredictionRow.execution_id == ExecutionRow.id)
            .where(
                ExecutionRow.namespace == namespace,
                ExecutionRow.target == target,
                ExecutionRow.started_at >= since,
                PredictionRow.status == PredictionStatus.CONFIRMED.value,
            )
            .order_by(ExecutionRow.id)
        )
        with self.session() as session:
            return [_execution_record(r) for r in session.execute(query).scalars()]

    @contextmanager
    def target_lock(self, namespace: str, target: str) -> Iterator[bool]:
        """Hold a session advisory lock for writing actions on one target; yields False if
        another holder (another plan, another controller) has it. Released when the block
        ends, or if the process dies."""
        with advisory_lock(self.engine, "target", namespace, target) as mine:
            yield mine

    # -- events ---------------------------------------------------------------------------

    def append_event(self, record: EventRecord) -> bool:
        """Append one event; True if a row was written, False if its key was already there."""
        with self.session() as session:
            return insert_event(session, record)

    def append_events(self, records: Sequence[EventRecord]) -> list[bool]:
        """Append every record in one transaction: all are there afterwards, or none is (a
        failure rolls back the rows before it). For each, True if it was written, False if
        its key was already there."""
        with self.session() as session:
            return insert_events(session, records)

    def events(
        self,
        *,
        mind: str | None = None,
        namespace: str | None = None,
        type: str | Iterable[str] | None = None,
        subject_uid: str | None = None,
        since: datetime | None = None,
        until: datetime | None = None,
        after_id: int | None = None,
        limit: int | None = None,
    ) -> list[EventRecord]:
        """Events matching every given filter, in the order they were recorded.

        `since` is inclusive and `until` exclusive, both on `occurred_at`; `after_id` pages
        through the ledger (pass the last id seen).
        """
        query: Select[Any] = select(EventRow).order_by(EventRow.id)
        if mind is not None:
            query = query.where(EventRow.mind == mind)
        if namespace is not None:
            query = query.where(EventRow.namespace == namespace)
        if type is not None:
            types = [type] if isinstance(type, str) else list(type)
            query = query.where(EventRow.type.in_(types))
        if subject_uid is not None:
            query = query.where(EventRow.subject_uid == subject_uid)
        if since is not None:
            query = query.where(EventRow.occurred_at >= since)
        if until is not None:
            query = query.where(EventRow.occurred_at < until)
        if after_id is not None:
            query = query.where(EventRow.id > after_id)
        if limit is not None:
            query = query.limit(limit)
        with self.session() as session:
            return [_event_record(row) for row in session.scalars(query)]

    def event(self, idempotency_key: str) -> EventRecord | None:
        """The event written under this key, if any."""
        query = select(EventRow).where(EventRow.idempotency_key == idempotency_key)
        with self.session() as session:
            row = session.scalars(query).one_or_none()
            return None if row is None else _event_record(row)

    # -- minds ----------------------------------------------------------------------------

    def upsert_mind(self, record: MindRecord) -> MindUpsert:
        """Record an observed Mind; only moves the row forward, so replays change nothing.

        `record.updated_at` is when the Mind was observed; `record.registered_at` is used only
        when this call registers it. A new uid under the same name means the Mind was deleted
        and re-created: the row is registered afresh, unless the stored observation is newer.
        `record.deleted_at` is ignored: deletion goes through `mark_mind_deleted`.
        """
        at = record.updated_at
        spec = mask_secrets(record.spec)
        with self.session() as session:
            inserted = session.execute(
                insert(MindRow)
                .values(
                    namespace=record.namespace,
                    name=record.name,
                    uid=record.uid,
                    generation=record.generation,
                    spec=spec,
                    registered_at=record.registered_at,
                    updated_at=at,
                    deleted_at=None,
                )
                .on_conflict_do_nothing(index_elements=[MindRow.namespace, MindRow.name])
                .returning(MindRow)
            ).scalar_one_or_none()
            if inserted is not None:
                return MindUpsert(record=_mind_record(inserted), change=MindChange.REGISTERED)

            # The row exists: lock it so concurrent upserts of one Mind apply one at a time.
            row = session.get_one(MindRow, (record.namespace, record.name), with_for_update=True)
            if row.uid != record.uid:
                if at < row.updated_at:
                    return MindUpsert(record=_mind_record(row), change=MindChange.UNCHANGED)
                row.registered_at = record.registered_at
                row.deleted_at = None
                change = MindChange.REGISTERED
            elif _stale_or_same(row, record.generation, spec):
                return MindUpsert(record=_mind_record(row), change=MindChange.UNCHANGED)
            else:
                change = MindChange.UPDATED
            row.uid = record.uid
            row.generation = record.generation
            row.spec = spec
            row.updated_at = at
            session.flush()
            return MindUpsert(record=_mind_record(row), change=change)

    def mark_mind_deleted(self, namespace: str, name: str, uid: str | None, at: datetime) -> bool:
        """Mark a Mind deleted; True if this call did it.

        A uid, if given, must match the row, so deleting an old incarnation never marks a
        re-created Mind of the same name.
        """
        with self.session() as session:
            row = session.get(MindRow, (namespace, name), with_for_update=True)
            if row is None or row.deleted_at is not None:
                return False
            if uid is not None and row.uid != uid:
                return False
            row.deleted_at = at
            return True

    def mind(self, namespace: str, name: str) -> MindRecord | None:
        with self.session() as session:
            row = session.get(MindRow, (namespace, name))
            return None if row is None else _mind_record(row)

    def minds(
        self, *, namespace: str | None = None, include_deleted: bool = False
    ) -> list[MindRecord]:
        query = select(MindRow).order_by(MindRow.namespace, MindRow.name)
        if namespace is not None:
            query = query.where(MindRow.namespace == namespace)
        if not include_deleted:
            query = query.where(MindRow.deleted_at.is_(None))
        with self.session() as session:
            return [_mind_record(row) for row in session.scalars(query)]


def _stale_or_same(row: MindRow, generation: int, spec: Mapping[str, JsonValue]) -> bool:
    if row.deleted_at is not None or generation < row.generation:
        return True  # deleted under this uid, or an observation older than the stored one
    return generation == row.generation and spec == row.spec


def _event_record(row: EventRow) -> EventRecord:
    return EventRecord(
        id=row.id,
        mind=row.mind,
        namespace=row.namespace,
        type=row.type,
        subject=SubjectRef(kind=row.subject_kind, name=row.subject_name, uid=row.subject_uid),
        payload=row.payload,
        occurred_at=row.occurred_at,
        recorded_at=row.recorded_at,
        idempotency_key=row.idempotency_key,
    )


def _mind_record(row: MindRow) -> MindRecord:
    return MindRecord(
        namespace=row.namespace,
        name=row.name,
        uid=row.uid,
        generation=row.generation,
        spec=row.spec,
        registered_at=row.registered_at,
        updated_at=row.updated_at,
        deleted_at=row.deleted_at,
    )


def _execution_record(row: ExecutionRow) -> ExecutionRecord:
    return ExecutionRecord(
        id=row.id,
        origin_key=row.origin_key,
        mind=row.mind,
        namespace=row.namespace,
        capability=row.capability,
        target=row.target,
        parameters=row.parameters,
        origin=ExecutionOrigin.model_validate(row.origin),
        evidence=row.evidence,
        authority=row.authority,
        started_at=row.started_at,
    )


def _outcome(row: ExecutionOutcomeRow) -> ExecutionOutcome:
    return ExecutionOutcome(
        execution_id=row.execution_id,
        status=ExecutionStatus(row.status),
        summary=row.summary,
        fields=row.fields,
        output=row.output,
        error=row.error,
        finished_at=row.finished_at,
    )

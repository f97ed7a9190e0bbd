"""The engine's view of the world: small protocols the adapters implement.

The engine never imports a Kubernetes or database client directly; it is handed objects that
satisfy these protocols, which keeps each use case readable and lets the wiring choose the
real adapters.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from contextlib import AbstractContextManager
from datetime import datetime
from typing import Any, Protocol

from pydantic import JsonValue

from minds.domain.beliefs import BeliefRecord, PredictionRecord, PredictionStatus
from minds.domain.errors import AlreadyExists, Conflict, NotFound
from minds.domain.executions import ExecutionOutcome, ExecutionRecord
from minds.domain.intentions import IntentionRecord, IntentionStatus, Unset
from minds.domain.ledger import DecisionRecord, EventRecord, MindRecord
from minds.domain.procedures import ProceduralMemory
from minds.domain.resources.kinds import Kind
from minds.domain.series import Series, SeriesKind

Clock = Callable[[], datetime]

__all__ = [
    "AlreadyExists",
    "Beliefs",
    "Clock",
    "Conflict",
    "Decisions",
    "EventPort",
    "Executions",
    "ExecutorLedger",
    "History",
    "Intentions",
    "Journal",
    "LedgerPort",
    "LedgerReading",
    "NotFound",
    "Procedures",
    "ResourcePort",
    "ResourceReader",
    "ResourceWriter",
    "SeriesReading",
    "SeriesStore",
    "TargetLocks",
    "Transactional",
    "VolitionStore",
]


class LedgerPort(Protocol):
    def append_event(self, record: EventRecord) -> bool:
        """Append once; False when a row with the same idempotency key already exists."""
        ...

    def upsert_mind(self, record: MindRecord) -> object: ...

    def mark_mind_deleted(
        self, namespace: str, name: str, uid: str | None, at: datetime
    ) -> object: ...

    def answers(self) -> bool:
        """Whether the ledger's database answers now; never raises."""
        ...


class Journal(Protocol):
    """Append-only rows about what happened."""

    def append_event(self, record: EventRecord) -> bool:
        """Append once; False when a row with the same idempotency key already exists."""
        ...

    def append_events(self, records: Sequence[EventRecord]) -> list[bool]:
        """Append all in one transaction (all or none); for each, whether it was new."""
        ...

    def event(self, idempotency_key: str) -> EventRecord | None:
        """The row with that key, if it was ever appended."""
        ...


class JournalLock(Protocol):
    def hold_journal(self, namespace: str, mind: str) -> None:
        """Inside a transaction: wait until no other transaction appends to this mind's
        journal, and keep every other from appending to it until this one ends. What the
        transaction reads of the journal after is what the next writer will read: a decision
        read, made and written under it is never made twice on different histories. Raises
        RuntimeError outside a transaction (a lock that ended at once would hold nothing)."""
        ...


class History(Protocol):
    """The journal's rows, read back (newest last)."""

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
    ) -> list[EventRecord]: ...


class IntentionReading(Protocol):
    def intention(self, intention_id: str) -> IntentionRecord | None: ...


class Intentions(IntentionReading, Protocol):
    """What a mind means to do; each change is written with its event, in one transaction."""

    def form_intention(self, record: IntentionRecord) -> tuple[IntentionRecord, bool]:
        """Form it, or return the one with its id and False."""
        ...

    def transition_intention(
        self, intention_id: str, status: IntentionStatus, reason: str | None, at: datetime
    ) -> IntentionRecord | None:
        """None when the move is not allowed from the current (final) status."""
        ...

    def update_intention(
        self,
        intention_id: str,
        *,
        plan: str | Unset | None = ...,
        replans: int | Unset = ...,
        failed_strategies: Sequence[str] | Unset = ...,
        at: datetime,
    ) -> IntentionRecord: ...

    def intentions(
        self,
        *,
        namespace: str | None = None,
        mind: str | None = None,
        status: IntentionStatus | Collection[IntentionStatus] | None = None,
        parent_id: str | None = None,
    ) -> list[IntentionRecord]: ...


class BeliefReading(Protocol):
    def belief(self, belief_id: str) -> BeliefRecord | None: ...

    def predictions(
        self, namespace: str, mind: str, status: PredictionStatus | None = None
    ) -> list[PredictionRecord]: ...


class Beliefs(BeliefReading, Protocol):
    """What a mind believes, and the predictions that test it."""

    def upsert_belief(
        self, namespace: str, mind: str, statement: str, confidence: float, at: datetime
    ) -> BeliefRecord: ...

    def beliefs(self, namespace: str, mind: str) -> list[BeliefRecord]: ...

    def add_evidence(
        self, belief_id: str, *, supports: bool, weight: float, key: str, at: datetime, note: str
    ) -> BeliefRecord:
        """Move the belief by one piece of evidence; a replay of `key` changes nothing."""
        ...

    def open_prediction(self, record: PredictionRecord) -> tuple[PredictionRecord, bool]: ...

    def resolve_prediction(
        self,
        prediction_id: str,
        status: PredictionStatus,
        at: datetime,
        observation: Mapping[str, JsonValue] | None,
    ) -> PredictionRecord | None:
        """None when it was no longer open (resolved before, by us or another)."""
        ...


class DecisionReading(Protocol):
    def decisions(
        self,
        *,
        namespace: str,
        mind: str | None = None,
        kind: str | None = None,
        subject: tuple[str, str] | None = None,
    ) -> list[DecisionRecord]:
        """The choices recorded, oldest first."""
        ...


class Decisions(DecisionReading, Protocol):
    """The append-only record of volition's choices (``volition_decisions``)."""

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
        """Append one choice; False when its key was already recorded (a replay)."""
        ...


class VolitionStore(Protocol):
    """A mind's wants, conflicts and commitment states: its volition between cycles."""

    def wants(
        self, namespace: str, mind: str, status: str | None = None
    ) -> list[dict[str, Any]]: ...

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
    ) -> bool: ...

    def conflicts(
        self, namespace: str, mind: str, *, open_only: bool = True
    ) -> list[dict[str, Any]]: ...

    def save_conflict(
        self,
        *,
        namespace: str,
        mind: str,
        conflict_id: str,
        open_: bool,
        data: Mapping[str, JsonValue],
        at: datetime,
    ) -> None: ...

    def commitment_states(self, namespace: str, mind: str) -> dict[str, str]: ...

    def commitment_updated_at(self, namespace: str, mind: str) -> dict[str, datetime]: ...

    def set_commitment_state(
        self, namespace: str, mind: str, name: str, state: str, reason: str | None, at: datetime
    ) -> bool: ...

    def cycle_lock(self, namespace: str, mind: str) -> AbstractContextManager[bool]:
        """Hold one mind's cycle for the block; yields False (holding nothing) when another
        controller runs it now."""
        ...


class SeriesReading(Protocol):
    def series(
        self,
        namespace: str,
        mind: str,
        *,
        kind: SeriesKind | None = None,
        subject: str | None = None,
    ) -> list[Series]:
        """The current series of each subject of a mind (open, or the last one closed), by
        kind and subject."""
        ...


class SeriesStore(SeriesReading, Protocol):
    """Routine as series (``minds.domain.series``): one current-state row per subject, written
    in place, and the journal's rows when a series is cut or closed."""

    def save_series(
        self, series: Series, *, replaces: int | None, told: Sequence[EventRecord] = ()
    ) -> bool:
        """Write ``series`` as its subject's row if the row there is at version ``replaces``
        now (None: there is none), and append ``told`` in the same transaction; False, writing
        nothing, when another writer moved the row."""
        ...


class Procedures(Protocol):
    def store_procedure(self, memory: ProceduralMemory) -> bool: ...

    def procedures(
        self, namespace: str, mind: str, subject: str | None = None
    ) -> list[ProceduralMemory]: ...


class Executions(Protocol):
    """Write-ahead rows of actions, read back when recovering one."""

    def execution(
        self, origin_key: str
    ) -> tuple[ExecutionRecord, ExecutionOutcome | None] | None: ...

    def executions(
        self,
        *,
        namespace: str | None = None,
        mind: str | None = None,
        capability: str | None = None,
    ) -> list[ExecutionRecord]: ...


class TargetLocks(Protocol):
    """One writing action per target at a time, across plans and controllers."""

    def target_lock(self, namespace: str, target: str) -> AbstractContextManager[bool]:
        """Hold the target's lock for the block; yields False (and holds nothing) when another
        holder has it. Released when the block ends, or if the process dies."""
        ...

    def verified_writes_on(
        self, namespace: str, target: str, since: datetime
    ) -> list[ExecutionRecord]:
        """Write-ahead rows of actions on ``target`` started at or after ``since`` whose
        prediction an observation confirmed."""
        ...


class Transactional(Protocol):
    def transaction(self) -> AbstractContextManager[None]:
        """Every ledger call this thread makes inside is one transaction: all of it is there
        afterwards, or none of it (an error rolls back the calls before it)."""
        ...

    def after_commit(self, then: Callable[[], None]) -> None:
        """Run ``then`` once this thread's transaction commits (at once, outside one); never if
        it rolls back: what tells of a row (an Event, a metric) comes after the row."""
        ...


class ExecutorLedger(
    Journal,
    Intentions,
    Beliefs,
    Procedures,
    Executions,
    Decisions,
    TargetLocks,
    Transactional,
    Protocol,
):
    """Every role of the ledger the executor plays a part in."""


class LedgerReading(
    History,
    IntentionReading,
    BeliefReading,
    DecisionReading,
    Executions,
    SeriesReading,
    Protocol,
):
    """What reading a mind's story needs of the ledger, and nothing it could write with."""


class ResourceReader(Protocol):
    """Reads of the operator's own resources; a watch-fed cache may serve them."""

    def get(self, kind: Kind, namespace: str, name: str) -> dict[str, Any]:
        """The object as the API server has it now; raises NotFound."""
        ...

    # Before ``list``: in this class's scope the name ``list`` is that method.
    def select(
        self, kind: Kind, namespace: str, match: Callable[[Mapping[str, Any]], bool]
    ) -> list[dict[str, Any]]:
        """The objects of a kind in a namespace that ``match`` keeps, as ``list`` has them.
        ``match`` reads each object as it is held and never changes it: a watch-fed cache then
        copies only what is kept, so a reader that wants a few of many pays for the few."""
        ...

    def list(
        self, kind: Kind, namespace: str, label_selector: str | None = None
    ) -> list[dict[str, Any]]: ...


class ResourceWriter(Protocol):
    """Writes, always to the API server; status writes are conditional."""

    def create(self, kind: Kind, namespace: str, body: dict[str, Any]) -> dict[str, Any]:
        """Create; raises AlreadyExists when the name is taken."""
        ...

    def replace_status(
        self, kind: Kind, body: dict[str, Any], status: dict[str, Any]
    ) -> dict[str, Any]:
        """Write ``status`` conditionally on ``body``'s resourceVersion; raises Conflict."""
        ...

    def patch_spec(self, kind: Kind, body: dict[str, Any], spec: dict[str, Any]) -> dict[str, Any]:
        """Merge ``spec`` into the object's spec, conditionally on ``body``'s resourceVersion
        (raises Conflict); what admission allows the controller to change there is little
        (a link such as ``supersededBy``)."""
        ...

    def delete(self, kind: Kind, namespace: str, name: str, uid: str) -> None:
        """Delete the object if it is still this incarnation (``uid``); raises Conflict when
        the name now holds another one. Deleting what is gone is not an error."""
        ...


class ResourcePort(ResourceReader, ResourceWriter, Protocol):
    """Both halves: what a use case that reads and writes is handed."""


class EventPort(Protocol):
    def post(self, body: dict[str, Any], *, type_: str, reason: str, message: str) -> None:
        """Post a Kubernetes Event about ``body`` (best effort: an Event is not the record).

        The adapter masks the message and then cuts it to what an Event holds; callers pass it
        whole, since a cut made first could leave half a secret that no rule recognises."""
        ...

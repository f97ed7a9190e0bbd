"""The ledger's roles in memory: the journal, executions, intentions, beliefs, procedures.

Rows are masked as the real ledger masks them; a batch of events is all or nothing (a row
Postgres would refuse, text with a NUL character, fails the whole batch); keys are unique.
``fail_next_append`` makes the next journal call fail, as a lost connection would.
The volition roles (wants, conflicts, commitment states, the cycle's lock) are here too, so
the mind's own cycle (``MindCycle``) runs over this fake as over the real ledger.
"""

from __future__ import annotations

import copy
import itertools
from collections.abc import Callable, Collection, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from datetime import datetime
from typing import Any, Protocol, TypeVar

from pydantic import JsonValue

from minds.domain.beliefs import (
    BELIEF_EVIDENCE_ADDED,
    BeliefRecord,
    PredictionRecord,
    PredictionStatus,
    belief_id,
    prediction_evidence_key,
    updated_confidence,
)
from minds.domain.errors import NotFound
from minds.domain.executions import ExecutionOutcome, ExecutionRecord
from minds.domain.intentions import (
    INTENTION_FORMED,
    INTENTION_UPDATED,
    UNSET,
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
from minds.domain.ledger import (
    DecisionRecord,
    EventRecord,
    MindChange,
    MindRecord,
    MindUpsert,
    SubjectRef,
    idempotency_key,
    mask_note,
    mask_secrets,
)
from minds.domain.procedures import PROCEDURE_STORED, ProceduralMemory
from minds.domain.series import Series, SeriesKind


class LedgerUnavailable(RuntimeError):
    """What the fake raises where the real ledger would lose its connection."""


#: The transaction's own bookkeeping, which a rollback leaves as it is.
_UNDONE_NEVER = frozenset({"_depth", "_committed"})


class FakeLedger:
    def __init__(self) -> None:
        self.rows: list[EventRecord] = []
        self._keys: set[str] = set()
        #: The journal indexed by key and by type (each type's rows with their place in it).
        self._by_key: dict[str, EventRecord] = {}
        self._by_type: dict[str, list[tuple[int, EventRecord]]] = {}
        self._executions: dict[str, ExecutionRecord] = {}
        self._outcomes: dict[int, ExecutionOutcome] = {}
        self._ids = itertools.count(1)
        self._intentions: dict[str, IntentionRecord] = {}
        self.beliefs_: dict[str, BeliefRecord] = {}
        self.evidence_keys: set[str] = set()
        self.predictions_: dict[str, PredictionRecord] = {}
        self.procedures_: dict[str, ProceduralMemory] = {}
        #: Minds by (namespace, name), as last recorded.
        self.minds_: dict[tuple[str, str], MindRecord] = {}
        self.decisions_: dict[str, DecisionRecord] = {}
        #: Wants by id: (namespace, mind, status, data, version), in the order first stored.
        self.wants_: dict[str, tuple[str, str, str, dict[str, Any], int]] = {}
        self.conflicts_: dict[str, tuple[str, str, bool, dict[str, Any]]] = {}
        self.commitments_: dict[tuple[str, str, str], str] = {}
        self.commitment_times_: dict[tuple[str, str, str], datetime] = {}
        #: Each subject's series by (namespace, mind, kind, subject).
        self.series_: dict[tuple[str, str, str, str], Series] = {}
        #: Minds whose cycle lock is held (a test may hold one, as another controller would).
        self.held_cycles: set[tuple[str, str]] = set()
        #: Targets whose lock is held (a test may hold one, as another controller would).
        self.held_targets: set[tuple[str, str]] = set()
        self.fail_next_append = False
        #: The database gone (a test's outage): ``answers`` says so.
        self.down = False
        self._depth = 0
        self._committed: list[Callable[[], None]] = []

    def answers(self) -> bool:
        return not self.down

    # -- journal ---------------------------------------------------------------------------

    @contextmanager
    def transaction(self) -> Iterator[None]:
        """All or nothing, as the real one: what the calls inside changed is undone on error."""
        if self._depth:
            yield
            return
        # What is stored is never changed in place (records are frozen and replaced, never
        # edited), so a copy of each container is a snapshot, at a cost that lets a test run
        # the mind for simulated days.
        # A method a test replaced on the instance is how the fake is wired, not what it
        # stores: a rollback leaves it as the test left it.
        kept = {
            k: copy.copy(v)
            for k, v in vars(self).items()
            if k not in _UNDONE_NEVER and not callable(v)
        }
        self._depth += 1
        self._committed = []
        try:
            yield
        except BaseException:
            vars(self).update(kept)
            raise
        finally:
            self._depth -= 1
            then, self._committed = self._committed, []
        for each in then:
            each()

    def after_commit(self, then: Callable[[], None]) -> None:
        if self._depth:
            self._committed.append(then)
        else:
            then()

    def hold_journal(self, namespace: str, mind: str) -> None:
        """One thread writes a fake ledger: holding it is only checked to be in a transaction,
        as the real one's lock would hold nothing outside one."""
        if not self._depth:
            raise RuntimeError("hold_journal outside a transaction holds nothing")

    def append_event(self, record: EventRecord) -> bool:
        return self.append_events([record])[0]

    def append_events(self, records: Sequence[EventRecord]) -> list[bool]:
        if self.fail_next_append:
            self.fail_next_append = False
            raise LedgerUnavailable("the journal is unavailable")
        masked = [r.model_copy(update={"payload": mask_secrets(r.payload)}) for r in records]
        for record in masked:
            if _has_nul(record.model_dump(mode="json")):
                raise ValueError("a NUL character cannot be stored as text")
        fresh: list[bool] = []
        batch: set[str] = set()
        for record in masked:
            new = record.idempotency_key not in self._keys and record.idempotency_key not in batch
            batch.add(record.idempotency_key)
            fresh.append(new)
        for record, new in zip(masked, fresh, strict=True):
            if new:
                self.rows.append(record)
                self._keys.add(record.idempotency_key)
                self._by_key[record.idempotency_key] = record
                # A new list, not an append: a transaction's snapshot keeps the old one.
                at = len(self.rows) - 1
                self._by_type[record.type] = [*self._by_type.get(record.type, ()), (at, record)]
        return fresh

    def events(
        self,
        *,
        mind: str | None = None,
        namespace: str | None = None,
        type: str | Iterable[str] | None = None,
        subject_uid: str | None = None,
        since: datetime | None = None,
        until: datetime | None = None,
        **_: Any,
    ) -> list[EventRecord]:
        types = None if type is None else ({type} if isinstance(type, str) else set(type))
        # Read by type when asked by type (the cycle reads a few types of a long journal).
        rows = (
            self.rows
            if types is None
            else [r for _, r in sorted(r for t in types for r in self._by_type.get(t, ()))]
        )
        return [
            r
            for r in rows
            if (mind is None or r.mind == mind)
            and (namespace is None or r.namespace == namespace)
            and (types is None or r.type in types)
            and (subject_uid is None or r.subject.uid == subject_uid)
            and (since is None or r.occurred_at >= since)
            and (until is None or r.occurred_at < until)
        ]

    def event(self, idempotency_key: str) -> EventRecord | None:
        return self._by_key.get(idempotency_key)

    def types(self, subject_uid: str | None = None) -> list[str]:
        return [r.type for r in self.events(subject_uid=subject_uid)]

    def upsert_mind(self, record: MindRecord) -> MindUpsert:
        """Moves a mind's row only forward, as the real ledger: a replay or an older
        observation changes nothing, a new uid is a mind deleted and created again."""
        key = (record.namespace, record.name)
        seen = record.model_copy(update={"spec": mask_secrets(record.spec), "deleted_at": None})
        found = self.minds_.get(key)
        if found is None:
            change = MindChange.REGISTERED
        elif found.uid != record.uid:
            if record.updated_at < found.updated_at:
                return MindUpsert(record=found, change=MindChange.UNCHANGED)
            change = MindChange.REGISTERED
        elif (
            found.deleted
            or record.generation < found.generation
            or (record.generation == found.generation and seen.spec == found.spec)
        ):
            return MindUpsert(record=found, change=MindChange.UNCHANGED)
        else:
            change = MindChange.UPDATED
            seen = seen.model_copy(update={"registered_at": found.registered_at})
        self.minds_[key] = seen
        return MindUpsert(record=seen, change=change)

    def mark_mind_deleted(self, namespace: str, name: str, uid: str | None, at: datetime) -> bool:
        found = self.minds_.get((namespace, name))
        # A uid that is not the row's is an older incarnation: the re-created mind stays.
        if found is None or found.deleted or (uid is not None and found.uid != uid):
            return False
        self.minds_[(namespace, name)] = found.model_copy(update={"deleted_at": at})
        return True

    # -- executions --------------------------------------------------------------------------

    def begin_execution(
        self,
        record: ExecutionRecord,
        told: Callable[[ExecutionRecord], Sequence[EventRecord]] | None = None,
    ) -> tuple[ExecutionRecord, bool]:
        found = self._executions.get(record.origin_key)
        if found is not None:
            return found, False
        stored = record.model_copy(
            update={
                "id": next(self._ids),
                "parameters": mask_secrets(record.parameters),
                "evidence": mask_secrets(record.evidence),
            }
        )
        # One transaction: the rows are checked (and may fail) before anything is kept.
        events = list(told(stored)) if told is not None else []
        if events:
            self.append_events(events)
        self._executions[record.origin_key] = stored
        return stored, True

    def finish_execution(self, outcome: ExecutionOutcome, told: Sequence[EventRecord] = ()) -> bool:
        if outcome.execution_id in self._outcomes:
            return False
        if told:
            self.append_events(told)
        self._outcomes[outcome.execution_id] = outcome
        return True

    def execution(self, origin_key: str) -> tuple[ExecutionRecord, ExecutionOutcome | None] | None:
        found = self._executions.get(origin_key)
        if found is None:
            return None
        assert found.id is not None
        return found, self._outcomes.get(found.id)

    def executions(
        self,
        *,
        namespace: str | None = None,
        mind: str | None = None,
        capability: str | None = None,
    ) -> list[ExecutionRecord]:
        """In the order begun (ids are handed out in that order)."""
        return [
            e
            for e in self._executions.values()
            if (namespace is None or e.namespace == namespace)
            and (mind is None or e.mind == mind)
            and (capability is None or e.capability == capability)
        ]

    def verified_writes_on(
        self, namespace: str, target: str, since: datetime
    ) -> list[ExecutionRecord]:
        confirmed = {
            p.execution_id
            for p in self.predictions_.values()
            if p.status is PredictionStatus.CONFIRMED
        }
        return [
            e
            for e in self._executions.values()
            if e.namespace == namespace
            and e.target == target
            and e.started_at >= since
            and e.id in confirmed
        ]

    @contextmanager
    def target_lock(self, namespace: str, target: str) -> Iterator[bool]:
        key = (namespace, target)
        if key in self.held_targets:
            yield False
            return
        self.held_targets.add(key)
        try:
            yield True
        finally:
            self.held_targets.discard(key)

    # -- intentions ----------------------------------------------------------------------------

    def intention(self, intention_id: str) -> IntentionRecord | None:
        return self._intentions.get(intention_id)

    def form_intention(self, record: IntentionRecord) -> tuple[IntentionRecord, bool]:
        if record.version != 1:
            raise ValueError("an intention is formed at version 1")
        found = self._intentions.get(record.id)
        if found is not None:
            return found, False
        if record.parent_id is not None and record.parent_id not in self._intentions:
            # The real ledger's foreign key refuses it.
            raise LookupError(f"parent intention {record.parent_id!r} is not in the ledger")
        parameters = record.means_parameters
        if parameters is not None:
            record = record.model_copy(update={"means_parameters": mask_secrets(parameters)})
        self._intentions[record.id] = record
        self._intention_event(record, INTENTION_FORMED, formed_payload(record))
        return record, True

    def _intention_event(
        self, record: IntentionRecord, type_: str, payload: dict[str, JsonValue]
    ) -> None:
        self.append_event(
            _entity_event(
                record.namespace,
                record.mind,
                type_,
                "Intention",
                record.id,
                payload,
                record.updated_at,
                intention_event_key(record.id, record.version),
            )
        )

    def _get(self, intention_id: str) -> IntentionRecord:
        found = self._intentions.get(intention_id)
        if found is None:
            raise NotFound(f"intention {intention_id!r} is not in the ledger")
        return found

    def transition_intention(
        self, intention_id: str, status: IntentionStatus, reason: str | None, at: datetime
    ) -> IntentionRecord | None:
        # Masked before the comparison, as the real ledger does: a replay stays a replay.
        reason = None if reason is None else mask_note(reason)
        current = self._get(intention_id)
        after = transitioned(current, status, reason, at)
        if after is None or after.version == current.version:
            return after
        self._intentions[intention_id] = after
        self._intention_event(
            after, intention_event_type(after.status), moved_payload(current, after)
        )
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
        current = self._get(intention_id)
        after = updated(
            current, plan=plan, replans=replans, failed_strategies=failed_strategies, at=at
        )
        if after.version == current.version:
            return current
        # The event names only what moved, as the real ledger's does.
        changed = {
            name: getattr(after, name)
            for name in ("plan", "replans", "failed_strategies")
            if getattr(after, name) != getattr(current, name)
        }
        self._intention_event(
            after, INTENTION_UPDATED, {"version": after.version, "changed": changed}
        )
        self._intentions[intention_id] = after
        return after

    def intentions(
        self,
        *,
        namespace: str | None = None,
        mind: str | None = None,
        status: IntentionStatus | Collection[IntentionStatus] | None = None,
        parent_id: str | None = None,
    ) -> list[IntentionRecord]:
        """Oldest first, as the real ledger orders them: by when formed, not when stored."""
        return sorted(
            (
                i
                for i in self._intentions.values()
                if (namespace is None or i.namespace == namespace)
                and (mind is None or i.mind == mind)
                and (status is None or i.status in statuses_of(status))
                and (parent_id is None or i.parent_id == parent_id)
            ),
            key=lambda i: (i.created_at, i.id),
        )

    # -- beliefs, procedures -------------------------------------------------------------------

    def upsert_belief(
        self, namespace: str, mind: str, statement: str, confidence: float, at: datetime
    ) -> BeliefRecord:
        text = " ".join(statement.split())
        bid = belief_id(namespace, mind, text)
        found = self.beliefs_.get(bid)
        if found is None:
            found = BeliefRecord(
                id=bid,
                namespace=namespace,
                mind=mind,
                statement=text,
                confidence=confidence,
                updated_at=at,
            )
            self.beliefs_[bid] = found
        return found

    def beliefs(self, namespace: str, mind: str) -> list[BeliefRecord]:
        return _of_mind(self.beliefs_.values(), namespace, mind, lambda b: (b.statement, b.id))

    def add_evidence(
        self, belief_id: str, *, supports: bool, weight: float, key: str, at: datetime, note: str
    ) -> BeliefRecord:
        found = self.beliefs_.get(belief_id)
        if found is None:
            raise NotFound(f"belief {belief_id!r} is not in the ledger")
        if key in self.evidence_keys:
            return found
        after = updated_confidence(found.confidence, supports, weight)
        moved = found.model_copy(
            update={
                "confidence": after,
                "evidence_for": found.evidence_for + supports,
                "evidence_against": found.evidence_against + (not supports),
                "updated_at": at,
            }
        )
        told: dict[str, JsonValue] = {
            "supports": supports,
            "weight": weight,
            "note": mask_note(note),
            "confidence_before": found.confidence,
            "confidence_after": after,
            "key": key,
        }
        self.append_event(
            _entity_event(
                found.namespace,
                found.mind,
                BELIEF_EVIDENCE_ADDED,
                "Belief",
                belief_id,
                told,
                at,
                idempotency_key("belief_evidence", key),
            )
        )
        # Kept only once the event is: the real ledger writes both in one transaction.
        self.evidence_keys.add(key)
        self.beliefs_[belief_id] = moved
        return moved

    def open_prediction(self, record: PredictionRecord) -> tuple[PredictionRecord, bool]:
        found = self.predictions_.get(record.id)
        if found is not None:
            return found, False
        self.predictions_[record.id] = record
        return record, True

    def resolve_prediction(
        self,
        prediction_id: str,
        status: PredictionStatus,
        at: datetime,
        observation: Mapping[str, JsonValue] | None,
    ) -> PredictionRecord | None:
        found = self.predictions_.get(prediction_id)
        if found is None or found.status is not PredictionStatus.OPEN:
            return None
        resolved = found.model_copy(
            update={
                "status": status,
                "resolved_at": at,
                "observation": dict(observation) if observation is not None else None,
            }
        )
        self.predictions_[prediction_id] = resolved
        # As the real ledger, in the same call: a confirmed or refuted prediction is evidence
        # for or against the belief it tested.
        if resolved.belief_id in self.beliefs_ and status is not PredictionStatus.EXPIRED:
            self.add_evidence(
                resolved.belief_id,
                supports=status is PredictionStatus.CONFIRMED,
                weight=1.0,
                key=prediction_evidence_key(resolved.id),
                at=at,
                note=f"prediction {resolved.id} {status.value} ({resolved.plan} {resolved.step})",
            )
        return resolved

    def store_procedure(self, memory: ProceduralMemory) -> bool:
        if memory.id in self.procedures_:
            return False
        told: dict[str, JsonValue] = memory.model_dump(
            mode="json", include={"subject", "text", "confidence", "plan", "revision"}
        )
        self.append_event(
            _entity_event(
                memory.namespace,
                memory.mind,
                PROCEDURE_STORED,
                "ProceduralMemory",
                memory.id,
                told,
                memory.created_at,
                idempotency_key("procedure", memory.id),
            )
        )
        self.procedures_[memory.id] = memory.model_copy(update={"text": mask_note(memory.text)})
        return True

    def procedures(
        self, namespace: str, mind: str, subject: str | None = None
    ) -> list[ProceduralMemory]:
        """Oldest first, as the real ledger orders them."""
        mine = _of_mind(self.procedures_.values(), namespace, mind, lambda m: (m.created_at, m.id))
        return [m for m in mine if subject is None or m.subject == subject]

    # -- volition decisions ------------------------------------------------------------------

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
        if key in self.decisions_:
            return False
        self.decisions_[key] = DecisionRecord(
            len(self.decisions_) + 1,
            namespace,
            mind,
            kind,
            outcome,
            dict(subjects),
            mask_secrets(dict(data)),
            at,
        )
        return True

    def decisions(
        self,
        *,
        namespace: str,
        mind: str | None = None,
        kind: str | None = None,
        subject: tuple[str, str] | None = None,
    ) -> list[DecisionRecord]:
        return [
            d
            for d in self.decisions_.values()
            if d.namespace == namespace
            and (mind is None or d.mind == mind)
            and (kind is None or d.kind == kind)
            and (subject is None or d.subjects.get(subject[0]) == subject[1])
        ]

    # -- routine's series ----------------------------------------------------------------------

    def series(
        self,
        namespace: str,
        mind: str,
        *,
        kind: SeriesKind | None = None,
        subject: str | None = None,
    ) -> list[Series]:
        """By kind and subject, as the real ledger orders them."""
        return sorted(
            (
                s
                for (ns, m, k, sub), s in self.series_.items()
                if (ns, m) == (namespace, mind)
                and (kind is None or k == kind.value)
                and (subject is None or sub == subject)
            ),
            key=lambda s: (s.kind.value, s.subject),
        )

    def save_series(
        self, series: Series, *, replaces: int | None, told: Sequence[EventRecord] = ()
    ) -> bool:
        key = (series.namespace, series.mind, series.kind.value, series.subject)
        found = self.series_.get(key)
        if (found.version if found is not None else None) != replaces:
            return False
        # The rows first: a batch that fails leaves the series as it was, as one transaction.
        if told:
            self.append_events(told)
        self.series_[key] = series.model_copy(update={"last": mask_secrets(series.last)})
        return True

    # -- wants, conflicts, commitment states, the cycle's lock -------------------------------

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
        payload = mask_secrets(dict(data))
        found = self.wants_.get(want_id)
        if found is not None and found[2] == status and found[3] == payload:
            return False
        if found is None:
            event_type, version = "want_derived", 1
        else:
            event_type = "want_updated" if found[2] == status else f"want_{status}"
            version = found[4] + 1
        self.wants_[want_id] = (namespace, mind, status, copy.deepcopy(payload), version)
        self.append_event(
            _entity_event(
                namespace,
                mind,
                event_type,
                "Want",
                want_id,
                {"subject": subject, "status": status, "strength": strength},
                at,
                idempotency_key("want", want_id, str(version)),
            )
        )
        return True

    def wants(self, namespace: str, mind: str, status: str | None = None) -> list[dict[str, Any]]:
        return [
            copy.deepcopy(data)
            for ns, m, st, data, _ in self.wants_.values()
            if ns == namespace and m == mind and (status is None or st == status)
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
        self.conflicts_[conflict_id] = (namespace, mind, open_, mask_secrets(dict(data)))

    def conflicts(
        self, namespace: str, mind: str, *, open_only: bool = True
    ) -> list[dict[str, Any]]:
        return [
            copy.deepcopy(data)
            for ns, m, is_open, data in self.conflicts_.values()
            if ns == namespace and m == mind and (is_open or not open_only)
        ]

    def set_commitment_state(
        self, namespace: str, mind: str, name: str, state: str, reason: str | None, at: datetime
    ) -> bool:
        key = (namespace, mind, name)
        if self.commitments_.get(key) == state:
            return False
        self.commitments_[key] = state
        self.commitment_times_[key] = at
        reason = None if reason is None else mask_note(reason)
        self.append_event(
            _entity_event(
                namespace,
                mind,
                f"commitment_{state}",
                "Commitment",
                f"{mind}/{name}",
                {"commitment": name, "reason": reason},
                at,
                idempotency_key("commitment", namespace, mind, name, state, at.isoformat()),
            )
        )
        return True

    def commitment_states(self, namespace: str, mind: str) -> dict[str, str]:
        return {n: s for (ns, m, n), s in self.commitments_.items() if (ns, m) == (namespace, mind)}

    def commitment_updated_at(self, namespace: str, mind: str) -> dict[str, datetime]:
        return {
            n: at
            for (ns, m, n), at in self.commitment_times_.items()
            if (ns, m) == (namespace, mind)
        }

    @contextmanager
    def cycle_lock(self, namespace: str, mind: str) -> Iterator[bool]:
        key = (namespace, mind)
        if key in self.held_cycles:
            yield False
            return
        self.held_cycles.add(key)
        try:
            yield True
        finally:
            self.held_cycles.discard(key)

    def belief(self, belief_id: str) -> BeliefRecord | None:
        return self.beliefs_.get(belief_id)

    def prediction(self, prediction_id: str) -> PredictionRecord | None:
        return self.predictions_.get(prediction_id)

    def predictions(
        self, namespace: str, mind: str, status: PredictionStatus | None = None
    ) -> list[PredictionRecord]:
        """By when their windows open, as the real ledger orders them."""
        mine = _of_mind(
            self.predictions_.values(), namespace, mind, lambda p: (p.window_start, p.id)
        )
        return [p for p in mine if status is None or p.status is status]


class _OfMind(Protocol):
    namespace: str
    mind: str


_R = TypeVar("_R", bound=_OfMind)


def _of_mind(
    records: Iterable[_R], namespace: str, mind: str, order: Callable[[_R], Any]
) -> list[_R]:
    """A mind's records in the order the real ledger reads them back."""
    return sorted((r for r in records if r.namespace == namespace and r.mind == mind), key=order)


def _entity_event(
    namespace: str,
    mind: str,
    type: str,
    kind: str,
    entity_id: str,
    payload: dict[str, JsonValue],
    at: datetime,
    key: str,
) -> EventRecord:
    """An event about a ledger entity, named by its id as the real ledger names it."""
    return EventRecord(
        mind=mind,
        namespace=namespace,
        type=type,
        subject=SubjectRef(kind=kind, name=entity_id, uid=entity_id),
        payload=payload,
        occurred_at=at,
        idempotency_key=key,
    )


def _has_nul(value: object) -> bool:
    if isinstance(value, str):
        return "\x00" in value
    if isinstance(value, dict):
        return any(_has_nul(k) or _has_nul(v) for k, v in value.items())
    if isinstance(value, list):
        return any(_has_nul(v) for v in value)
    return False

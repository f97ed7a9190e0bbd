"""SQLAlchemy models of the ledger tables.

The migrations in `migrations/versions` are the source of truth for the database; these models
mirror them for queries, and an integration test compares the two so they cannot drift. Database
objects that SQLAlchemy does not model (the append-only and chain triggers) live only in the
migrations. Append-only rows carry `prev_hash`/`row_hash` (see `chain`); their id (or `seq`) and
`recorded_at` are assigned by the database, whatever an INSERT says.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import (
    BigInteger,
    Boolean,
    CheckConstraint,
    DateTime,
    Double,
    ForeignKey,
    Index,
    LargeBinary,
    MetaData,
    PrimaryKeyConstraint,
    Table,
    Text,
    UniqueConstraint,
    text,
)
from sqlalchemy.dialects.postgresql import ARRAY, JSONB
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column

# Explicit constraint names keep migrations reviewable and let later migrations drop or alter a
# constraint by a name that is the same on every database.
NAMING_CONVENTION = {
    "ix": "ix_%(table_name)s_%(column_0_N_name)s",
    "uq": "uq_%(table_name)s_%(column_0_N_name)s",
    "ck": "ck_%(table_name)s_%(constraint_name)s",
    "fk": "fk_%(table_name)s_%(column_0_N_name)s_%(referred_table_name)s",
    "pk": "pk_%(table_name)s",
}

# Name of the trigger function that makes a table append-only; later append-only tables
# (volition_decisions, ...) attach the same function. See migration 0001.
REFUSE_MUTATION_FUNCTION = "minds_refuse_mutation"

# Append-only and not chained: the keyed seals of the chained rows, each chain's switch to
# sealing, the checkpoints kept outside the database (see `minds.domain.ledger_seal`) and the
# cuts of archived partitions (written by the owner only: see `privileges`).
SEAL_TABLES = ("ledger_seals", "chain_switches", "ledger_checkpoints", "ledger_cuts")

# Append-only, not chained, unpartitioned: the unique keys of the partitioned chained tables
# (see `chain.CHAINED_TABLES`, migration 0011), written by the sealing trigger with each row.
KEY_TABLES = (
    "event_keys",
    "volition_decision_keys",
    "execution_keys",
    "execution_outcome_keys",
    "belief_evidence_keys",
    "procedural_memory_keys",
)

APPEND_ONLY_TABLES = (
    "volition_decisions",
    "events",
    "executions",
    "execution_outcomes",
    "belief_evidence",
    "procedural_memories",
    *SEAL_TABLES,
    *KEY_TABLES,
)

# Current state, changed in place (every change told by an event): the application may also
# UPDATE these. A table in neither list gets no privilege at all (see `privileges`).
MUTABLE_TABLES = (
    "minds",
    "intentions",
    "beliefs",
    "predictions",
    "wants",
    "commitment_states",
    "conflicts",
    "observation_series",
)

# SQLSTATE the trigger function raises with, so a refusal is recognisable among other errors.
APPEND_ONLY_SQLSTATE = "ML001"


class Chained:
    """The hash-chain columns of an append-only table, filled by its BEFORE INSERT trigger."""

    prev_hash: Mapped[bytes | None] = mapped_column(LargeBinary)
    row_hash: Mapped[bytes] = mapped_column(LargeBinary)


class Base(DeclarativeBase):
    metadata = MetaData(naming_convention=NAMING_CONVENTION)
    type_annotation_map = {
        datetime: DateTime(timezone=True),
        dict[str, Any]: JSONB,
    }


class EventRow(Chained, Base):
    """Append-only: something happened, or something was chosen. Never updated or deleted."""

    __tablename__ = "events"
    __table_args__ = (
        PrimaryKeyConstraint("id", "recorded_at"),
        Index(None, "idempotency_key"),
        Index(None, "namespace", "mind", "occurred_at"),
        Index(None, "type"),
        Index(None, "namespace", "mind", "id"),
        # An object's story (an Approval's decisions) is read by its uid.
        Index(None, "subject_uid"),
    )

    id: Mapped[int] = mapped_column(BigInteger, autoincrement=True)
    mind: Mapped[str] = mapped_column(Text)
    namespace: Mapped[str] = mapped_column(Text)
    type: Mapped[str] = mapped_column(Text)
    subject_kind: Mapped[str] = mapped_column(Text)
    subject_name: Mapped[str] = mapped_column(Text)
    subject_uid: Mapped[str | None] = mapped_column(Text)
    payload: Mapped[dict[str, Any]] = mapped_column(server_default=text("'{}'::jsonb"))
    occurred_at: Mapped[datetime]
    recorded_at: Mapped[datetime] = mapped_column(server_default=text("statement_timestamp()"))
    idempotency_key: Mapped[str] = mapped_column(Text)


class MindRow(Base):
    """Current state of each Mind the controller has seen; updated in place."""

    __tablename__ = "minds"
    __table_args__ = (PrimaryKeyConstraint("namespace", "name"),)

    namespace: Mapped[str] = mapped_column(Text)
    name: Mapped[str] = mapped_column(Text)
    uid: Mapped[str] = mapped_column(Text)
    generation: Mapped[int] = mapped_column(BigInteger)
    spec: Mapped[dict[str, Any]] = mapped_column(server_default=text("'{}'::jsonb"))
    registered_at: Mapped[datetime]
    updated_at: Mapped[datetime]
    deleted_at: Mapped[datetime | None]


class ExecutionRow(Chained, Base):
    """Append-only write-ahead row: written before a capability's side effect."""

    __tablename__ = "executions"
    __table_args__ = (
        PrimaryKeyConstraint("id", "recorded_at"),
        Index(None, "origin_key"),
        Index(None, "namespace", "mind", "started_at"),
        Index(None, "namespace", "mind", "id"),
    )

    id: Mapped[int] = mapped_column(BigInteger, autoincrement=True)
    origin_key: Mapped[str] = mapped_column(Text)
    mind: Mapped[str] = mapped_column(Text)
    namespace: Mapped[str] = mapped_column(Text)
    capability: Mapped[str] = mapped_column(Text)
    target: Mapped[str] = mapped_column(Text)
    parameters: Mapped[dict[str, Any]]
    origin: Mapped[dict[str, Any]]
    evidence: Mapped[dict[str, Any]]
    authority: Mapped[dict[str, Any]]
    started_at: Mapped[datetime]
    recorded_at: Mapped[datetime] = mapped_column(server_default=text("statement_timestamp()"))


class ExecutionOutcomeRow(Chained, Base):
    """Append-only: what came of one execution. At most one per execution."""

    __tablename__ = "execution_outcomes"
    __table_args__ = (
        PrimaryKeyConstraint("id", "recorded_at"),
        Index(None, "execution_id"),
        CheckConstraint("status IN ('executed', 'failed')", name="status"),
        Index(None, "namespace", "mind", "id"),
    )

    id: Mapped[int] = mapped_column(BigInteger, autoincrement=True)
    execution_id: Mapped[int] = mapped_column(BigInteger, ForeignKey("execution_keys.id"))
    # Copied from the execution by the chain trigger: the mind whose chain the row is in.
    namespace: Mapped[str] = mapped_column(Text)
    mind: Mapped[str] = mapped_column(Text)
    status: Mapped[str] = mapped_column(Text)
    summary: Mapped[str] = mapped_column(Text)
    fields: Mapped[dict[str, Any]]
    output: Mapped[Any] = mapped_column(JSONB, nullable=True)
    error: Mapped[str | None] = mapped_column(Text)
    finished_at: Mapped[datetime]
    recorded_at: Mapped[datetime] = mapped_column(server_default=text("statement_timestamp()"))


class IntentionRow(Base):
    """Current state of one intention; updated in place, every change told by an event."""

    __tablename__ = "intentions"
    __table_args__ = (
        Index(None, "namespace", "mind", "status"),
        Index(None, "parent_id"),
        CheckConstraint(
            "status IN ('active', 'blocked', 'suspended', 'fulfilled', 'abandoned',"
            " 'outcome_unverified')",
            name="status",
        ),
        CheckConstraint("kind IN ('action', 'investigation')", name="kind"),
        CheckConstraint("replans >= 0", name="replans"),
        CheckConstraint("version >= 1", name="version"),
    )

    id: Mapped[str] = mapped_column(Text, primary_key=True)
    namespace: Mapped[str] = mapped_column(Text)
    mind: Mapped[str] = mapped_column(Text)
    objective: Mapped[str] = mapped_column(Text)
    kind: Mapped[str] = mapped_column(Text)
    status: Mapped[str] = mapped_column(Text)
    reason: Mapped[str | None] = mapped_column(Text)
    parent_id: Mapped[str | None] = mapped_column(Text, ForeignKey("intentions.id"))
    subject: Mapped[str | None] = mapped_column(Text)
    means_capability: Mapped[str | None] = mapped_column(Text)
    means_parameters: Mapped[dict[str, Any] | None] = mapped_column(JSONB)
    requires_approval: Mapped[bool]
    plan: Mapped[str | None] = mapped_column(Text)
    replans: Mapped[int]
    failed_strategies: Mapped[list[str]] = mapped_column(ARRAY(Text))
    version: Mapped[int] = mapped_column(BigInteger)
    created_at: Mapped[datetime]
    updated_at: Mapped[datetime]


class BeliefRow(Base):
    """Current state of one belief; its evidence is in `belief_evidence`."""

    __tablename__ = "beliefs"
    __table_args__ = (
        Index(None, "namespace", "mind"),
        CheckConstraint("confidence >= 0 AND confidence <= 1", name="confidence"),
    )

    id: Mapped[str] = mapped_column(Text, primary_key=True)
    namespace: Mapped[str] = mapped_column(Text)
    mind: Mapped[str] = mapped_column(Text)
    statement: Mapped[str] = mapped_column(Text)
    confidence: Mapped[float] = mapped_column(Double)
    evidence_for: Mapped[int]
    evidence_against: Mapped[int]
    updated_at: Mapped[datetime]


class BeliefEvidenceRow(Chained, Base):
    """Append-only: one piece of evidence and what it did to the belief's confidence."""

    __tablename__ = "belief_evidence"
    __table_args__ = (
        PrimaryKeyConstraint("id", "recorded_at"),
        Index(None, "belief_id"),
        CheckConstraint("weight >= 0", name="weight"),
        Index(None, "namespace", "mind", "id"),
    )

    id: Mapped[int] = mapped_column(BigInteger, autoincrement=True)
    belief_id: Mapped[str] = mapped_column(Text, ForeignKey("beliefs.id"))
    # Copied from the belief by the chain trigger: the mind whose chain the row is in.
    namespace: Mapped[str] = mapped_column(Text)
    mind: Mapped[str] = mapped_column(Text)
    key: Mapped[str] = mapped_column(Text)
    supports: Mapped[bool]
    weight: Mapped[float] = mapped_column(Double)
    note: Mapped[str] = mapped_column(Text)
    confidence_before: Mapped[float] = mapped_column(Double)
    confidence_after: Mapped[float] = mapped_column(Double)
    occurred_at: Mapped[datetime]
    recorded_at: Mapped[datetime] = mapped_column(server_default=text("statement_timestamp()"))


class PredictionRow(Base):
    """An expectation under test; updated once, when it is resolved."""

    __tablename__ = "predictions"
    __table_args__ = (
        Index(None, "namespace", "mind", "status"),
        CheckConstraint("status IN ('open', 'confirmed', 'refuted', 'expired')", name="status"),
        CheckConstraint("confidence >= 0 AND confidence <= 1", name="confidence"),
        CheckConstraint("window_end >= window_start", name="window"),
        CheckConstraint("(status = 'open') = (resolved_at IS NULL)", name="resolved"),
    )

    id: Mapped[str] = mapped_column(Text, primary_key=True)
    namespace: Mapped[str] = mapped_column(Text)
    mind: Mapped[str] = mapped_column(Text)
    plan: Mapped[str] = mapped_column(Text)
    step: Mapped[str] = mapped_column(Text)
    execution_id: Mapped[int | None] = mapped_column(BigInteger, ForeignKey("execution_keys.id"))
    belief_id: Mapped[str | None] = mapped_column(Text, ForeignKey("beliefs.id"))
    criteria: Mapped[dict[str, Any]]
    confidence: Mapped[float] = mapped_column(Double)
    window_start: Mapped[datetime]
    window_end: Mapped[datetime]
    status: Mapped[str] = mapped_column(Text)
    resolved_at: Mapped[datetime | None]
    observation: Mapped[dict[str, Any] | None] = mapped_column(JSONB)


class ProceduralMemoryRow(Chained, Base):
    """Append-only: what one completed plan taught, in words."""

    __tablename__ = "procedural_memories"
    __table_args__ = (
        Index(None, "namespace", "mind", "subject"),
        CheckConstraint("confidence >= 0 AND confidence <= 1", name="confidence"),
        PrimaryKeyConstraint("id", "recorded_at"),
        Index(None, "namespace", "mind", "seq"),
    )

    id: Mapped[str] = mapped_column(Text)
    # Chain order, assigned by the database (the id is the caller's deterministic key).
    seq: Mapped[int] = mapped_column(BigInteger)
    namespace: Mapped[str] = mapped_column(Text)
    mind: Mapped[str] = mapped_column(Text)
    subject: Mapped[str] = mapped_column(Text)
    # Named `body` here because `text` would shadow sqlalchemy.text in the class body.
    body: Mapped[str] = mapped_column("text", Text)
    confidence: Mapped[float] = mapped_column(Double)
    plan: Mapped[str] = mapped_column(Text)
    revision: Mapped[int]
    created_at: Mapped[datetime]
    recorded_at: Mapped[datetime] = mapped_column(server_default=text("statement_timestamp()"))


class WantRow(Base):
    """Current state of one want; its history is in events and volition_decisions."""

    __tablename__ = "wants"
    __table_args__ = (Index(None, "namespace", "mind", "status"),)

    id: Mapped[str] = mapped_column(Text, primary_key=True)
    namespace: Mapped[str] = mapped_column(Text)
    mind: Mapped[str] = mapped_column(Text)
    subject: Mapped[str] = mapped_column(Text)
    status: Mapped[str] = mapped_column(Text)
    strength: Mapped[float] = mapped_column(Double)
    data: Mapped[dict[str, Any]]
    version: Mapped[int] = mapped_column(BigInteger)
    created_at: Mapped[datetime]
    updated_at: Mapped[datetime]


class CommitmentStateRow(Base):
    """The state each commitment of a mind is in (active, due, overdue, ...)."""

    __tablename__ = "commitment_states"
    __table_args__ = (PrimaryKeyConstraint("namespace", "mind", "name"),)

    namespace: Mapped[str] = mapped_column(Text)
    mind: Mapped[str] = mapped_column(Text)
    name: Mapped[str] = mapped_column(Text)
    state: Mapped[str] = mapped_column(Text)
    reason: Mapped[str | None] = mapped_column(Text)
    updated_at: Mapped[datetime]


class VolitionDecisionRow(Chained, Base):
    """Append-only: one choice (derivation, conflict resolution, formation, ...) with the
    inputs and scores that produced it."""

    __tablename__ = "volition_decisions"
    __table_args__ = (
        PrimaryKeyConstraint("id", "recorded_at"),
        Index(None, "namespace", "mind", "decided_at"),
        Index(None, "subjects", postgresql_using="gin"),
        Index(None, "namespace", "mind", "id"),
    )

    id: Mapped[int] = mapped_column(BigInteger, autoincrement=True)
    namespace: Mapped[str] = mapped_column(Text)
    mind: Mapped[str] = mapped_column(Text)
    kind: Mapped[str] = mapped_column(Text)
    outcome: Mapped[str] = mapped_column(Text)
    subjects: Mapped[dict[str, Any]]
    data: Mapped[dict[str, Any]]
    decided_at: Mapped[datetime]
    recorded_at: Mapped[datetime] = mapped_column(server_default=text("statement_timestamp()"))
    idempotency_key: Mapped[str] = mapped_column(Text)


class ConflictRow(Base):
    """Current state of one conflict between wants; its history is in volition_decisions."""

    __tablename__ = "conflicts"
    __table_args__ = (Index(None, "namespace", "mind", "open"),)

    id: Mapped[str] = mapped_column(Text, primary_key=True)
    namespace: Mapped[str] = mapped_column(Text)
    mind: Mapped[str] = mapped_column(Text)
    open: Mapped[bool] = mapped_column(Boolean)
    data: Mapped[dict[str, Any]]
    updated_at: Mapped[datetime]


class Sealed:
    """A keyed seal (see `minds.domain.ledger_seal`): written by the controller, which holds
    the key; the database only keeps it."""

    seal: Mapped[bytes] = mapped_column(LargeBinary)
    seal_key: Mapped[str] = mapped_column(Text)
    seal_alg: Mapped[str] = mapped_column(Text)


class LedgerSealRow(Sealed, Base):
    """Append-only: the seal of one chained row, written in the transaction that appends it.
    A row has at most one: a second is refused by the key."""

    __tablename__ = "ledger_seals"
    __table_args__ = (PrimaryKeyConstraint("table_name", "row_order"),)

    table_name: Mapped[str] = mapped_column(Text)
    row_order: Mapped[int] = mapped_column(BigInteger)


class ChainSwitchRow(Sealed, Base):
    """Append-only: the first sealed row of one chain. Rows before it were written before
    keyed sealing and are verified by the plain chain; every row from it on must be sealed."""

    __tablename__ = "chain_switches"
    __table_args__ = (PrimaryKeyConstraint("table_name", "namespace", "mind"),)

    table_name: Mapped[str] = mapped_column(Text)
    namespace: Mapped[str] = mapped_column(Text)
    mind: Mapped[str] = mapped_column(Text)
    first_sealed_order: Mapped[int] = mapped_column(BigInteger)
    recorded_at: Mapped[datetime] = mapped_column(server_default=text("now()"))


class LedgerCheckpointRow(Sealed, Base):
    """Append-only: a checkpoint of every chain's head, as written to the object outside the
    database that is named `name`; `sequence` only grows per name."""

    __tablename__ = "ledger_checkpoints"
    __table_args__ = (PrimaryKeyConstraint("name", "sequence"),)

    name: Mapped[str] = mapped_column(Text)
    sequence: Mapped[int] = mapped_column(BigInteger)
    document: Mapped[str] = mapped_column(Text)
    recorded_at: Mapped[datetime] = mapped_column(server_default=text("now()"))


class ObservationSeriesRow(Base):
    """Current state of one subject's series of routine (an observation found the same as the
    last, a cycle that decided nothing): updated in place; the journal has it when it is cut
    or closed (``minds.domain.series``)."""

    __tablename__ = "observation_series"
    __table_args__ = (
        PrimaryKeyConstraint("namespace", "mind", "kind", "subject"),
        CheckConstraint("kind IN ('observation', 'cycle')", name="kind"),
        CheckConstraint("count >= cut_count AND cut_count >= 1", name="count"),
        CheckConstraint("version >= 1", name="version"),
    )

    namespace: Mapped[str] = mapped_column(Text)
    mind: Mapped[str] = mapped_column(Text)
    kind: Mapped[str] = mapped_column(Text)
    subject: Mapped[str] = mapped_column(Text)
    id: Mapped[str] = mapped_column(Text)
    digest: Mapped[str] = mapped_column(Text)
    told: Mapped[str] = mapped_column(Text)
    count: Mapped[int] = mapped_column(BigInteger)
    first_seen: Mapped[datetime]
    last_seen: Mapped[datetime]
    last: Mapped[dict[str, Any]]
    opened_by: Mapped[str] = mapped_column(Text)
    cut_count: Mapped[int] = mapped_column(BigInteger)
    cut_at: Mapped[datetime]
    closed_at: Mapped[datetime | None]
    version: Mapped[int] = mapped_column(BigInteger)


class LedgerCutRow(Sealed, Base):
    """Append-only, written by the owner's `minds db archive`: one chain's rows up to
    `last_order` (the last with hash `head`) left the database into an archive."""

    __tablename__ = "ledger_cuts"
    __table_args__ = (PrimaryKeyConstraint("table_name", "namespace", "mind", "last_order"),)

    table_name: Mapped[str] = mapped_column(Text)
    namespace: Mapped[str] = mapped_column(Text)
    mind: Mapped[str] = mapped_column(Text)
    last_order: Mapped[int] = mapped_column(BigInteger, autoincrement=False)
    head: Mapped[bytes] = mapped_column(LargeBinary)
    partition: Mapped[str] = mapped_column(Text)
    manifest_sha256: Mapped[str] = mapped_column(Text)
    recorded_at: Mapped[datetime] = mapped_column(server_default=text("now()"))


class _Keyed:
    """A key of a partitioned chained table: once here, a second row with it is skipped."""

    recorded_at: Mapped[datetime]


class EventKeyRow(_Keyed, Base):
    __tablename__ = "event_keys"
    idempotency_key: Mapped[str] = mapped_column(Text, primary_key=True)


class VolitionDecisionKeyRow(_Keyed, Base):
    __tablename__ = "volition_decision_keys"
    idempotency_key: Mapped[str] = mapped_column(Text, primary_key=True)


class ExecutionKeyRow(_Keyed, Base):
    """What an outcome or a prediction references: `executions.id`, unique here."""

    __tablename__ = "execution_keys"
    __table_args__ = (UniqueConstraint("id"),)
    origin_key: Mapped[str] = mapped_column(Text, primary_key=True)
    id: Mapped[int] = mapped_column(BigInteger)


class ExecutionOutcomeKeyRow(_Keyed, Base):
    __tablename__ = "execution_outcome_keys"
    execution_id: Mapped[int] = mapped_column(BigInteger, primary_key=True, autoincrement=False)


class BeliefEvidenceKeyRow(_Keyed, Base):
    __tablename__ = "belief_evidence_keys"
    key: Mapped[str] = mapped_column(Text, primary_key=True)


class ProceduralMemoryKeyRow(_Keyed, Base):
    __tablename__ = "procedural_memory_keys"
    id: Mapped[str] = mapped_column(Text, primary_key=True)


def table_of(row: type[Base]) -> Table:
    """The Core table behind a row class: statements built once on it and executed with
    parameters skip the ORM's per-call compilation."""
    return Base.metadata.tables[row.__tablename__]

"""Partition the chained tables by month of `recorded_at`; their keys move beside them.

Per docs/adr/0002-ledger-partitions.md. Each chained table becomes a table partitioned by
RANGE (`recorded_at`), and the table as it was is attached, renamed `<table>_legacy`, as the
partition of everything before this migration: no row is copied and no hash changes. The
current month's rest, three months ahead and a DEFAULT partition are made here (and later by
`minds db maintain`, see `minds.adapters.ledger.partitions`).

- The primary key becomes (key, `recorded_at`), as a partitioned table's unique index must hold
  the partition key. `recorded_at` defaults to `statement_timestamp()`, and the sealing trigger
  sets the same value, so a row is routed by the time the trigger records.
- The unique keys (an event's idempotency key, an execution's origin key, one outcome per
  execution, ...) move to small unpartitioned keys tables (`event_keys`, ...), filled here from
  the rows and written from now on by the sealing trigger in the row's own statement: a key
  already there skips the row, as the unique index's ON CONFLICT DO NOTHING did.
- What referenced `executions.id` (an outcome, a prediction) references `execution_keys.id`.
- The append-only triggers and the chain's rule are unchanged; each partition has its own
  append-only trigger, as a statement trigger of a partitioned table does not fire for a
  statement that names a partition.

Revision ID: 0011
Revises: 0010
Create Date: 2026-12-06
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

from minds.adapters.ledger.chain import CHAINED_TABLES, ChainedTable, chain_trigger_sql
from minds.adapters.ledger.partitions import ensure_partitions

revision: str = "0011"
down_revision: str | Sequence[str] | None = "0010"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

LEGACY = "{table}_legacy"
# (table, column, constraint) of the foreign keys to executions.id, re-pointed to the keys.
EXECUTION_REFERENCES = (
    ("execution_outcomes", "execution_id", "fk_execution_outcomes_execution_id_executions"),
    ("predictions", "execution_id", "fk_predictions_execution_id_executions"),
)
# Tables the ledger reads by their key (`Ledger.event`, `execution`, an outcome of an execution).
LOOKED_UP_BY_KEY = ("events", "executions", "execution_outcomes")
APPEND_ONLY_TRIGGER = (
    "CREATE TRIGGER {table}_append_only BEFORE UPDATE OR DELETE OR TRUNCATE ON {table} "
    "FOR EACH STATEMENT EXECUTE FUNCTION minds_refuse_mutation()"
)


def _schema() -> str:
    return str(op.get_bind().execute(sa.text("SELECT current_schema()")).scalar_one())


def _sequence(table: ChainedTable) -> str:
    return f"{table.name}_{table.order}_seq"


def _key_type(table: ChainedTable) -> str:
    return "bigint" if table.key == "execution_id" else "text"


def _create_keys_table(table: ChainedTable, legacy: str) -> None:
    extra = ""
    if "id" in table.key_columns[1:]:
        extra = f"id bigint NOT NULL CONSTRAINT uq_{table.keys}_id UNIQUE, "
    op.execute(
        f"CREATE TABLE {table.keys} ({table.key} {_key_type(table)} NOT NULL "
        f"CONSTRAINT pk_{table.keys} PRIMARY KEY, {extra}recorded_at timestamptz NOT NULL)"
    )
    columns = ", ".join(table.key_columns)
    op.execute(
        f"INSERT INTO {table.keys} ({columns}, recorded_at) "  # noqa: S608
        f"SELECT {columns}, recorded_at FROM {legacy}"
    )
    op.execute(APPEND_ONLY_TRIGGER.format(table=table.keys))


_OF_TABLE = "format('%I.%I', current_schema(), CAST(:t AS text))::regclass"
# (name, definition) of each index of a table that is no constraint's, and of each foreign key.
_INDEXES = (
    "SELECT i.relname, pg_get_indexdef(i.oid) FROM pg_index AS x "  # noqa: S608
    f"JOIN pg_class AS i ON i.oid = x.indexrelid WHERE x.indrelid = {_OF_TABLE} "
    "AND NOT EXISTS (SELECT 1 FROM pg_constraint AS c WHERE c.conindid = i.oid)"
)
_FOREIGN_KEYS = (
    "SELECT conname, pg_get_constraintdef(oid) FROM pg_constraint WHERE contype = 'f' "  # noqa: S608
    f"AND conrelid = {_OF_TABLE}"
)


def _named(query: str, table: str) -> list[tuple[str, str]]:
    rows = op.get_bind().execute(sa.text(query), {"t": table})
    return [(str(name), str(definition)) for name, definition in rows]


def _partition(table: ChainedTable, schema: str) -> None:
    name, legacy = table.name, LEGACY.format(table=table.name)
    op.execute(f"DROP TRIGGER {name}_chain ON {name}")
    op.execute(f"ALTER TABLE {name} RENAME TO {legacy}")
    # A table has one primary key: the legacy one gives way to the parent's, (id, recorded_at),
    # which ATTACH builds on it (the one index built; the sequence keeps ids unique).
    op.execute(f"ALTER TABLE {legacy} DROP CONSTRAINT pk_{name}")
    op.execute(f"ALTER TRIGGER {name}_append_only ON {legacy} RENAME TO {legacy}_append_only")
    indexes = _named(_INDEXES, legacy)
    # Foreign keys LIKE does not copy (belief_evidence's to beliefs): moved to the parent.
    references = _named(_FOREIGN_KEYS, legacy)
    for constraint, _ in references:
        op.execute(f"ALTER TABLE {legacy} DROP CONSTRAINT {constraint}")
    for index, _ in indexes:
        op.execute(f"ALTER INDEX {index} RENAME TO {index}_legacy")
    _create_keys_table(table, legacy)
    # The parent: the legacy table's columns, defaults, NOT NULLs and checks, keyed by time.
    op.execute(
        f"CREATE TABLE {name} (LIKE {legacy} INCLUDING DEFAULTS INCLUDING CONSTRAINTS) "
        "PARTITION BY RANGE (recorded_at)"
    )
    op.execute(f"ALTER TABLE {name} ALTER COLUMN recorded_at SET DEFAULT statement_timestamp()")
    op.execute(f"ALTER TABLE {name} ADD CONSTRAINT pk_{name} PRIMARY KEY (id, recorded_at)")
    for _, definition in indexes:
        # Same definition on the parent: ATTACH adopts the legacy table's index, no rebuild.
        op.execute(definition.replace(f".{legacy} ", f".{name} ", 1))
    if name in LOOKED_UP_BY_KEY:
        # Read by its key (an event by idempotency key, ...): an index per partition, not unique.
        op.execute(f"CREATE INDEX ix_{name}_{table.key} ON {name} ({table.key})")
    op.execute(f"ALTER SEQUENCE {_sequence(table)} OWNED BY {name}.{table.order}")
    op.execute(
        f"ALTER TABLE {name} ATTACH PARTITION {legacy} FOR VALUES FROM (MINVALUE) TO ('{_cut()}')"
    )
    for constraint, definition in references:
        op.execute(f"ALTER TABLE {name} ADD CONSTRAINT {constraint} {definition}")
    op.execute(APPEND_ONLY_TRIGGER.format(table=name))
    for statement in chain_trigger_sql(
        table, schema=schema, sequence=f'"{schema}".{_sequence(table)}', partitioned=True
    ):
        op.execute(statement)


_CUT: list[str] = []


def _cut() -> str:
    """The legacy partitions' upper bound, one instant for every table: taken once the first
    table is locked by its rename, so every row committed before it is below it."""
    if not _CUT:
        _CUT.append(
            str(op.get_bind().execute(sa.text("SELECT clock_timestamp()::text")).scalar_one())
        )
    return _CUT[0]


def upgrade() -> None:
    schema = _schema()
    _CUT.clear()
    # Every chained table is locked first, so nothing is appended between the cut and the end.
    for table in CHAINED_TABLES:
        op.execute(f"LOCK TABLE {table.name} IN ACCESS EXCLUSIVE MODE")
    for referrer, _, constraint in EXECUTION_REFERENCES:
        op.drop_constraint(constraint, referrer, type_="foreignkey")
    for table in CHAINED_TABLES:
        _partition(table, schema)
    for referrer, column, _ in EXECUTION_REFERENCES:
        op.create_foreign_key(
            f"fk_{referrer}_{column}_execution_keys", referrer, "execution_keys", [column], ["id"]
        )
    _create_cuts()
    ensure_partitions(op.get_bind())


def _create_cuts() -> None:
    """`ledger_cuts`: one row per chain per archived partition (`minds db archive`)."""
    op.create_table(
        "ledger_cuts",
        sa.Column("table_name", sa.Text(), nullable=False),
        sa.Column("namespace", sa.Text(), nullable=False),
        sa.Column("mind", sa.Text(), nullable=False),
        sa.Column("last_order", sa.BigInteger(), nullable=False),
        sa.Column("head", sa.LargeBinary(), nullable=False),
        sa.Column("partition", sa.Text(), nullable=False),
        sa.Column("manifest_sha256", sa.Text(), nullable=False),
        sa.Column("seal", sa.LargeBinary(), nullable=False),
        sa.Column("seal_key", sa.Text(), nullable=False),
        sa.Column("seal_alg", sa.Text(), nullable=False),
        sa.Column(
            "recorded_at",
            sa.DateTime(timezone=True),
            server_default=sa.text("now()"),
            nullable=False,
        ),
        sa.PrimaryKeyConstraint(
            "table_name", "namespace", "mind", "last_order", name="pk_ledger_cuts"
        ),
    )
    op.execute(APPEND_ONLY_TRIGGER.format(table="ledger_cuts"))


def downgrade() -> None:
    schema = _schema()
    op.drop_table("ledger_cuts")
    for referrer, column, _ in EXECUTION_REFERENCES:
        op.drop_constraint(f"fk_{referrer}_{column}_execution_keys", referrer, type_="foreignkey")
    for table in reversed(CHAINED_TABLES):
        _unpartition(table, schema)
    for referrer, column, constraint in EXECUTION_REFERENCES:
        op.create_foreign_key(constraint, referrer, "executions", [column], ["id"])


def _unpartition(table: ChainedTable, schema: str) -> None:
    name, legacy = table.name, LEGACY.format(table=table.name)
    op.execute(f"ALTER TABLE {name} DETACH PARTITION {legacy}")
    # The rows appended since the upgrade go back into the one table, as they are.
    op.execute(f"ALTER TABLE {legacy} DISABLE TRIGGER USER")
    op.execute(f"INSERT INTO {legacy} SELECT * FROM {name}")  # noqa: S608
    op.execute(f"ALTER TABLE {legacy} ENABLE TRIGGER USER")
    op.execute(f"ALTER SEQUENCE {_sequence(table)} OWNED BY {legacy}.{table.order}")
    op.execute(f"DROP TABLE {name}")  # its partitions too
    op.execute(f"DROP TABLE {table.keys}")
    primary = op.get_bind().execute(
        sa.text(
            "SELECT conname FROM pg_constraint WHERE contype = 'p' AND conrelid = "
            "format('%I.%I', current_schema(), CAST(:t AS text))::regclass"
        ),
        {"t": legacy},
    )
    op.execute(f"ALTER TABLE {legacy} DROP CONSTRAINT {primary.scalar_one()}")
    op.execute(f"ALTER TABLE {legacy} ALTER COLUMN recorded_at SET DEFAULT now()")
    for index, _ in _named(_INDEXES, legacy):
        if index.endswith("_legacy"):
            op.execute(f"ALTER INDEX {index} RENAME TO {index.removesuffix('_legacy')}")
        else:  # built by ATTACH for an index the table had not
            op.execute(f"DROP INDEX {index}")
    op.execute(f"ALTER TRIGGER {legacy}_append_only ON {legacy} RENAME TO {name}_append_only")
    op.execute(f"ALTER TABLE {legacy} RENAME TO {name}")
    op.execute(f"ALTER TABLE {name} ADD CONSTRAINT pk_{name} PRIMARY KEY (id)")
    for statement in chain_trigger_sql(
        table, schema=schema, sequence=f'"{schema}".{_sequence(table)}'
    ):
        op.execute(statement)

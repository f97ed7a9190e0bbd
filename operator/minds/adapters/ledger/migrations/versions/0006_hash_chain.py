"""Hash-chain the append-only tables per mind; ids and recorded_at come from the database.

Each append-only row gets `prev_hash` and `row_hash` (see `minds.adapters.ledger.chain`),
computed by a BEFORE INSERT trigger that also assigns the row's id (or `seq`) and
`recorded_at`, overwriting whatever the caller sent. Rows already in the ledger are chained
here, in id order within each mind. `execution_outcomes` and `belief_evidence` gain the
namespace and mind of the row they belong to, copied by the trigger, so they chain per mind too.

The application role's privileges are not granted here but after every migration run (see
`minds.adapters.ledger.privileges`), so they always match the tables this code declares.

Revision ID: 0006
Revises: 0005
Create Date: 2026-12-03
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

from minds.adapters.ledger.chain import (
    CANONICAL_SETTINGS,
    CHAINED_TABLES,
    ChainedTable,
    chain_function_name,
    chain_trigger_sql,
    row_hash_sql,
)

revision: str = "0006"
down_revision: str | Sequence[str] | None = "0005"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

# The tables this revision chains, frozen: a table chained later is a later migration's work.
NAMES = (
    "events",
    "volition_decisions",
    "executions",
    "execution_outcomes",
    "belief_evidence",
    "procedural_memories",
)
TABLES = tuple(t for t in CHAINED_TABLES if t.name in NAMES)

# Existing rows are chained with the append-only trigger off for the duration: as owner, in
# the migration's own transaction, so no other session ever sees it off.
BACKFILL = """
DO $$
DECLARE
    r record;
    prev bytea;
    last_namespace text;
    last_mind text;
BEGIN
    FOR r IN SELECT t.{order} AS k, t.namespace, t.mind FROM {table} AS t
             ORDER BY t.namespace, t.mind, t.{order} LOOP
        IF r.namespace IS DISTINCT FROM last_namespace OR r.mind IS DISTINCT FROM last_mind THEN
            prev := NULL;
        END IF;
        UPDATE {table} AS t SET prev_hash = prev, row_hash = {hash}
            WHERE t.{order} = r.k RETURNING t.row_hash INTO prev;
        last_namespace := r.namespace;
        last_mind := r.mind;
    END LOOP;
END;
$$
"""


def _schema() -> str:
    return str(op.get_bind().execute(sa.text("SELECT current_schema()")).scalar_one())


def _sequence(table: ChainedTable) -> str:
    found = op.get_bind().execute(
        sa.text("SELECT pg_get_serial_sequence(:t, :c)"), {"t": table.name, "c": table.order}
    )
    return str(found.scalar_one())


def _add_columns(table: ChainedTable) -> None:
    if table.parent is not None:
        parent, fk = table.parent
        op.add_column(table.name, sa.Column("namespace", sa.Text(), nullable=True))
        op.add_column(table.name, sa.Column("mind", sa.Text(), nullable=True))
        op.execute(
            f"UPDATE {table.name} AS t SET namespace = p.namespace, mind = p.mind "  # noqa: S608
            f"FROM {parent} AS p WHERE p.id = t.{fk}"
        )
        op.alter_column(table.name, "namespace", nullable=False)
        op.alter_column(table.name, "mind", nullable=False)
    if table.order == "id":
        # The trigger assigns the id under the mind's lock, so chain order is id order.
        op.alter_column(table.name, "id", server_default=None)
    else:
        op.add_column(table.name, sa.Column(table.order, sa.BigInteger(), nullable=True))
        sequence = f"{table.name}_{table.order}_seq"
        op.execute(f"CREATE SEQUENCE {sequence} OWNED BY {table.name}.{table.order}")
        op.execute(
            f"UPDATE {table.name} AS t SET {table.order} = o.n FROM (SELECT id, "  # noqa: S608
            f"nextval('{sequence}') AS n FROM (SELECT id FROM {table.name} "
            "ORDER BY recorded_at, id) AS s) AS o WHERE o.id = t.id"
        )
        op.alter_column(table.name, table.order, nullable=False)
        op.create_unique_constraint(f"uq_{table.name}_{table.order}", table.name, [table.order])
    op.add_column(table.name, sa.Column("prev_hash", sa.LargeBinary(), nullable=True))
    op.add_column(table.name, sa.Column("row_hash", sa.LargeBinary(), nullable=True))
    op.create_index(
        f"ix_{table.name}_namespace_mind_{table.order}",
        table.name,
        ["namespace", "mind", table.order],
    )


def upgrade() -> None:
    schema = _schema()
    for name, value in CANONICAL_SETTINGS.items():
        op.execute(sa.text("SELECT set_config(:n, :v, true)").bindparams(n=name, v=value))
    for table in TABLES:
        op.execute(f"ALTER TABLE {table.name} DISABLE TRIGGER {table.name}_append_only")
        _add_columns(table)
        op.execute(
            BACKFILL.format(table=table.name, order=table.order, hash=row_hash_sql("prev", "t"))
        )
        op.alter_column(table.name, "row_hash", nullable=False)
        op.execute(f"ALTER TABLE {table.name} ENABLE TRIGGER {table.name}_append_only")
        for statement in chain_trigger_sql(table, schema=schema, sequence=_sequence(table)):
            op.execute(statement)


def downgrade() -> None:
    for table in reversed(TABLES):
        op.execute(f"DROP TRIGGER {table.name}_chain ON {table.name}")
        op.execute(f"DROP FUNCTION {chain_function_name(table)}()")
        op.drop_index(f"ix_{table.name}_namespace_mind_{table.order}", table.name)
        op.drop_column(table.name, "row_hash")
        op.drop_column(table.name, "prev_hash")
        if table.order == "id":
            sequence = _sequence(table)
            op.alter_column(
                table.name, "id", server_default=sa.text(f"nextval('{sequence}'::regclass)")
            )
        else:
            op.drop_column(table.name, table.order)  # drops its owned sequence too
        if table.parent is not None:
            op.drop_column(table.name, "mind")
            op.drop_column(table.name, "namespace")

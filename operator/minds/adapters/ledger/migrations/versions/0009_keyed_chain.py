"""Keyed seals: a chain the database cannot recompute.

Three append-only tables, refused UPDATE, DELETE and TRUNCATE by the same trigger as the other
append-only tables: `ledger_seals` (the HMAC of each chained row, written by the controller in
the transaction that appends the row), `chain_switches` (each chain's first sealed row) and
`ledger_checkpoints` (the checkpoints the controller also keeps outside the database). The
chained tables themselves do not change: no column, no trigger, no exception to append-only.
See `minds.domain.ledger_seal` and docs/ledger.md.

Revision ID: 0009
Revises: 0007
Create Date: 2026-12-10
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0009"
down_revision: str | Sequence[str] | None = "0007"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

TABLES = ("ledger_seals", "chain_switches", "ledger_checkpoints")

# The function of migration 0001, attached the same way.
APPEND_ONLY_TRIGGER = """
CREATE TRIGGER {table}_append_only
BEFORE UPDATE OR DELETE OR TRUNCATE ON {table}
FOR EACH STATEMENT EXECUTE FUNCTION minds_refuse_mutation()
"""


def _recorded_and_sealed() -> list[sa.Column[object]]:
    return [
        sa.Column(
            "recorded_at",
            sa.DateTime(timezone=True),
            server_default=sa.text("now()"),
            nullable=False,
        ),
        *_seal_columns(),
    ]


def _seal_columns() -> list[sa.Column[object]]:
    return [
        sa.Column("seal", sa.LargeBinary(), nullable=False),
        sa.Column("seal_key", sa.Text(), nullable=False),
        sa.Column("seal_alg", sa.Text(), nullable=False),
    ]


def upgrade() -> None:
    op.create_table(
        "ledger_seals",
        sa.Column("table_name", sa.Text(), nullable=False),
        sa.Column("row_order", sa.BigInteger(), nullable=False),
        *_seal_columns(),
        sa.PrimaryKeyConstraint("table_name", "row_order", name="pk_ledger_seals"),
    )
    op.create_table(
        "chain_switches",
        sa.Column("table_name", sa.Text(), nullable=False),
        sa.Column("namespace", sa.Text(), nullable=False),
        sa.Column("mind", sa.Text(), nullable=False),
        sa.Column("first_sealed_order", sa.BigInteger(), nullable=False),
        *_recorded_and_sealed(),
        sa.PrimaryKeyConstraint("table_name", "namespace", "mind", name="pk_chain_switches"),
    )
    op.create_table(
        "ledger_checkpoints",
        sa.Column("name", sa.Text(), nullable=False),
        sa.Column("sequence", sa.BigInteger(), nullable=False),
        sa.Column("document", sa.Text(), nullable=False),
        *_recorded_and_sealed(),
        sa.PrimaryKeyConstraint("name", "sequence", name="pk_ledger_checkpoints"),
    )
    for table in TABLES:
        op.execute(APPEND_ONLY_TRIGGER.format(table=table))


def downgrade() -> None:
    for table in reversed(TABLES):
        op.drop_table(table)  # drops its trigger too

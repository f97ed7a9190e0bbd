"""Volition: wants (current state), commitment states, and the append-only record of choices.

Revision ID: 0004
Revises: 0003
Create Date: 2026-12-02
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision: str = "0004"
down_revision: str | Sequence[str] | None = "0003"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

TABLE_TRIGGER = """
CREATE TRIGGER {table}_append_only
BEFORE UPDATE OR DELETE OR TRUNCATE ON {table}
FOR EACH STATEMENT EXECUTE FUNCTION minds_refuse_mutation()
"""


def upgrade() -> None:
    op.create_table(
        "wants",
        sa.Column("id", sa.Text(), nullable=False),
        sa.Column("namespace", sa.Text(), nullable=False),
        sa.Column("mind", sa.Text(), nullable=False),
        sa.Column("subject", sa.Text(), nullable=False),
        sa.Column("status", sa.Text(), nullable=False),
        sa.Column("strength", sa.Double(), nullable=False),
        sa.Column("data", postgresql.JSONB(), nullable=False),
        sa.Column("version", sa.BigInteger(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("id", name="pk_wants"),
    )
    op.create_index("ix_wants_namespace_mind_status", "wants", ["namespace", "mind", "status"])

    op.create_table(
        "commitment_states",
        sa.Column("namespace", sa.Text(), nullable=False),
        sa.Column("mind", sa.Text(), nullable=False),
        sa.Column("name", sa.Text(), nullable=False),
        sa.Column("state", sa.Text(), nullable=False),
        sa.Column("reason", sa.Text(), nullable=True),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("namespace", "mind", "name", name="pk_commitment_states"),
    )

    op.create_table(
        "volition_decisions",
        sa.Column("id", sa.BigInteger(), autoincrement=True, nullable=False),
        sa.Column("namespace", sa.Text(), nullable=False),
        sa.Column("mind", sa.Text(), nullable=False),
        sa.Column("kind", sa.Text(), nullable=False),
        sa.Column("outcome", sa.Text(), nullable=False),
        sa.Column("subjects", postgresql.JSONB(), nullable=False),
        sa.Column("data", postgresql.JSONB(), nullable=False),
        sa.Column("decided_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column(
            "recorded_at",
            sa.DateTime(timezone=True),
            server_default=sa.text("now()"),
            nullable=False,
        ),
        sa.Column("idempotency_key", sa.Text(), nullable=False),
        sa.PrimaryKeyConstraint("id", name="pk_volition_decisions"),
        sa.UniqueConstraint("idempotency_key", name="uq_volition_decisions_idempotency_key"),
    )
    op.create_index(
        "ix_volition_decisions_namespace_mind_decided_at",
        "volition_decisions",
        ["namespace", "mind", "decided_at"],
    )
    op.create_index(
        "ix_volition_decisions_subjects",
        "volition_decisions",
        ["subjects"],
        postgresql_using="gin",
    )
    op.execute(TABLE_TRIGGER.format(table="volition_decisions"))


def downgrade() -> None:
    op.drop_table("volition_decisions")
    op.drop_table("commitment_states")
    op.drop_table("wants")

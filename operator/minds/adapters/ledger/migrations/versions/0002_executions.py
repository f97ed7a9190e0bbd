"""Executions: a write-ahead row before every side effect, and its outcome after.

Revision ID: 0002
Revises: 0001
Create Date: 2026-12-02
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision: str = "0002"
down_revision: str | Sequence[str] | None = "0001"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

TABLE_TRIGGER = """
CREATE TRIGGER {table}_append_only
BEFORE UPDATE OR DELETE OR TRUNCATE ON {table}
FOR EACH STATEMENT EXECUTE FUNCTION minds_refuse_mutation()
"""


def upgrade() -> None:
    op.create_table(
        "executions",
        sa.Column("id", sa.BigInteger(), autoincrement=True, nullable=False),
        sa.Column("origin_key", sa.Text(), nullable=False),
        sa.Column("mind", sa.Text(), nullable=False),
        sa.Column("namespace", sa.Text(), nullable=False),
        sa.Column("capability", sa.Text(), nullable=False),
        sa.Column("target", sa.Text(), nullable=False),
        sa.Column("parameters", postgresql.JSONB(), nullable=False),
        sa.Column("origin", postgresql.JSONB(), nullable=False),
        sa.Column("evidence", postgresql.JSONB(), nullable=False),
        sa.Column("authority", postgresql.JSONB(), nullable=False),
        sa.Column("started_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column(
            "recorded_at",
            sa.DateTime(timezone=True),
            server_default=sa.text("now()"),
            nullable=False,
        ),
        sa.PrimaryKeyConstraint("id", name="pk_executions"),
        sa.UniqueConstraint("origin_key", name="uq_executions_origin_key"),
    )
    op.create_index(
        "ix_executions_namespace_mind_started_at",
        "executions",
        ["namespace", "mind", "started_at"],
    )
    op.execute(TABLE_TRIGGER.format(table="executions"))

    op.create_table(
        "execution_outcomes",
        sa.Column("id", sa.BigInteger(), autoincrement=True, nullable=False),
        sa.Column("execution_id", sa.BigInteger(), nullable=False),
        sa.Column("status", sa.Text(), nullable=False),
        sa.Column("summary", sa.Text(), nullable=False),
        sa.Column("fields", postgresql.JSONB(), nullable=False),
        sa.Column("output", postgresql.JSONB(), nullable=True),
        sa.Column("error", sa.Text(), nullable=True),
        sa.Column("finished_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column(
            "recorded_at",
            sa.DateTime(timezone=True),
            server_default=sa.text("now()"),
            nullable=False,
        ),
        sa.PrimaryKeyConstraint("id", name="pk_execution_outcomes"),
        sa.UniqueConstraint("execution_id", name="uq_execution_outcomes_execution_id"),
        sa.ForeignKeyConstraint(
            ["execution_id"],
            ["executions.id"],
            name="fk_execution_outcomes_execution_id_executions",
        ),
        sa.CheckConstraint("status IN ('executed', 'failed')", name="ck_execution_outcomes_status"),
    )
    op.execute(TABLE_TRIGGER.format(table="execution_outcomes"))


def downgrade() -> None:
    op.drop_table("execution_outcomes")
    op.drop_table("executions")

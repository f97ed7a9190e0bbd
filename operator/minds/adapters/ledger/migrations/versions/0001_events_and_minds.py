"""Ledger events (append-only) and the current state of minds.

Revision ID: 0001
Revises:
Create Date: 2025-12-02
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision: str = "0001"
down_revision: str | Sequence[str] | None = None
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

# One function for every append-only table: attach it with a statement-level trigger for
# UPDATE, DELETE and TRUNCATE. Statement level, so even an UPDATE or DELETE that matches no row
# is refused: a caller that tries either has a bug, whatever the table holds at the time.
# SQLSTATE ML001 is ours (user-defined class "ML"), so callers can tell this refusal from any
# other error; keep it in step with schema.APPEND_ONLY_SQLSTATE.
REFUSE_MUTATION = """
CREATE FUNCTION minds_refuse_mutation() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION 'minds ledger: % on table "%" is refused: the table is append-only',
        TG_OP, TG_TABLE_NAME
        USING ERRCODE = 'ML001',
              HINT = 'Ledger rows are never changed or removed; append a new event instead.';
END;
$$
"""

TABLE_TRIGGER = """
CREATE TRIGGER {table}_append_only
BEFORE UPDATE OR DELETE OR TRUNCATE ON {table}
FOR EACH STATEMENT EXECUTE FUNCTION minds_refuse_mutation()
"""


def upgrade() -> None:
    op.execute(REFUSE_MUTATION)

    op.create_table(
        "events",
        sa.Column("id", sa.BigInteger(), autoincrement=True, nullable=False),  # bigserial
        sa.Column("mind", sa.Text(), nullable=False),
        sa.Column("namespace", sa.Text(), nullable=False),
        sa.Column("type", sa.Text(), nullable=False),
        sa.Column("subject_kind", sa.Text(), nullable=False),
        sa.Column("subject_name", sa.Text(), nullable=False),
        sa.Column("subject_uid", sa.Text(), nullable=True),
        sa.Column(
            "payload",
            postgresql.JSONB(),
            server_default=sa.text("'{}'::jsonb"),
            nullable=False,
        ),
        sa.Column("occurred_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column(
            "recorded_at",
            sa.DateTime(timezone=True),
            server_default=sa.text("now()"),
            nullable=False,
        ),
        sa.Column("idempotency_key", sa.Text(), nullable=False),
        sa.PrimaryKeyConstraint("id", name="pk_events"),
        sa.UniqueConstraint("idempotency_key", name="uq_events_idempotency_key"),
    )
    op.create_index(
        "ix_events_namespace_mind_occurred_at", "events", ["namespace", "mind", "occurred_at"]
    )
    op.create_index("ix_events_type", "events", ["type"])
    op.execute(TABLE_TRIGGER.format(table="events"))

    op.create_table(
        "minds",
        sa.Column("namespace", sa.Text(), nullable=False),
        sa.Column("name", sa.Text(), nullable=False),
        sa.Column("uid", sa.Text(), nullable=False),
        sa.Column("generation", sa.BigInteger(), nullable=False),
        sa.Column(
            "spec", postgresql.JSONB(), server_default=sa.text("'{}'::jsonb"), nullable=False
        ),
        sa.Column("registered_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("deleted_at", sa.DateTime(timezone=True), nullable=True),
        sa.PrimaryKeyConstraint("namespace", "name", name="pk_minds"),
    )


def downgrade() -> None:
    op.drop_table("minds")
    op.drop_table("events")
    op.execute("DROP FUNCTION minds_refuse_mutation()")

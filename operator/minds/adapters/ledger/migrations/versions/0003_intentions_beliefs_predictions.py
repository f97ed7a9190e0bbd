"""Intentions, beliefs and their evidence, predictions, procedural memories.

Intentions, beliefs and predictions are current state (changed in place, every change told by an
event); belief evidence and procedural memories are append-only.

Revision ID: 0003
Revises: 0002
Create Date: 2026-12-03
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision: str = "0003"
down_revision: str | Sequence[str] | None = "0002"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

TABLE_TRIGGER = """
CREATE TRIGGER {table}_append_only
BEFORE UPDATE OR DELETE OR TRUNCATE ON {table}
FOR EACH STATEMENT EXECUTE FUNCTION minds_refuse_mutation()
"""


def _recorded_at() -> sa.Column[datetime]:
    return sa.Column(
        "recorded_at",
        sa.DateTime(timezone=True),
        server_default=sa.text("now()"),
        nullable=False,
    )


def upgrade() -> None:
    op.create_table(
        "intentions",
        sa.Column("id", sa.Text(), nullable=False),
        sa.Column("namespace", sa.Text(), nullable=False),
        sa.Column("mind", sa.Text(), nullable=False),
        sa.Column("objective", sa.Text(), nullable=False),
        sa.Column("kind", sa.Text(), nullable=False),
        sa.Column("status", sa.Text(), nullable=False),
        sa.Column("reason", sa.Text(), nullable=True),
        sa.Column("parent_id", sa.Text(), nullable=True),
        sa.Column("subject", sa.Text(), nullable=True),
        sa.Column("means_capability", sa.Text(), nullable=True),
        sa.Column("means_parameters", postgresql.JSONB(), nullable=True),
        sa.Column("requires_approval", sa.Boolean(), nullable=False),
        sa.Column("plan", sa.Text(), nullable=True),
        sa.Column("replans", sa.Integer(), nullable=False),
        sa.Column("failed_strategies", postgresql.ARRAY(sa.Text()), nullable=False),
        sa.Column("version", sa.BigInteger(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("id", name="pk_intentions"),
        sa.ForeignKeyConstraint(
            ["parent_id"], ["intentions.id"], name="fk_intentions_parent_id_intentions"
        ),
        sa.CheckConstraint(
            "status IN ('active', 'blocked', 'suspended', 'fulfilled', 'abandoned', 'outcome_unverified')",
            name="ck_intentions_status",
        ),
        sa.CheckConstraint("kind IN ('action', 'investigation')", name="ck_intentions_kind"),
        sa.CheckConstraint("replans >= 0", name="ck_intentions_replans"),
        sa.CheckConstraint("version >= 1", name="ck_intentions_version"),
    )
    op.create_index(
        "ix_intentions_namespace_mind_status", "intentions", ["namespace", "mind", "status"]
    )
    op.create_index("ix_intentions_parent_id", "intentions", ["parent_id"])

    op.create_table(
        "beliefs",
        sa.Column("id", sa.Text(), nullable=False),
        sa.Column("namespace", sa.Text(), nullable=False),
        sa.Column("mind", sa.Text(), nullable=False),
        sa.Column("statement", sa.Text(), nullable=False),
        sa.Column("confidence", sa.Double(), nullable=False),
        sa.Column("evidence_for", sa.Integer(), nullable=False),
        sa.Column("evidence_against", sa.Integer(), nullable=False),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("id", name="pk_beliefs"),
        sa.CheckConstraint("confidence >= 0 AND confidence <= 1", name="ck_beliefs_confidence"),
    )
    op.create_index("ix_beliefs_namespace_mind", "beliefs", ["namespace", "mind"])

    op.create_table(
        "belief_evidence",
        sa.Column("id", sa.BigInteger(), autoincrement=True, nullable=False),
        sa.Column("belief_id", sa.Text(), nullable=False),
        sa.Column("key", sa.Text(), nullable=False),
        sa.Column("supports", sa.Boolean(), nullable=False),
        sa.Column("weight", sa.Double(), nullable=False),
        sa.Column("note", sa.Text(), nullable=False),
        sa.Column("confidence_before", sa.Double(), nullable=False),
        sa.Column("confidence_after", sa.Double(), nullable=False),
        sa.Column("occurred_at", sa.DateTime(timezone=True), nullable=False),
        _recorded_at(),
        sa.PrimaryKeyConstraint("id", name="pk_belief_evidence"),
        sa.UniqueConstraint("key", name="uq_belief_evidence_key"),
        sa.ForeignKeyConstraint(
            ["belief_id"], ["beliefs.id"], name="fk_belief_evidence_belief_id_beliefs"
        ),
        sa.CheckConstraint("weight >= 0", name="ck_belief_evidence_weight"),
    )
    op.create_index("ix_belief_evidence_belief_id", "belief_evidence", ["belief_id"])
    op.execute(TABLE_TRIGGER.format(table="belief_evidence"))

    op.create_table(
        "predictions",
        sa.Column("id", sa.Text(), nullable=False),
        sa.Column("namespace", sa.Text(), nullable=False),
        sa.Column("mind", sa.Text(), nullable=False),
        sa.Column("plan", sa.Text(), nullable=False),
        sa.Column("step", sa.Text(), nullable=False),
        sa.Column("execution_id", sa.BigInteger(), nullable=True),
        sa.Column("belief_id", sa.Text(), nullable=True),
        sa.Column("criteria", postgresql.JSONB(), nullable=False),
        sa.Column("confidence", sa.Double(), nullable=False),
        sa.Column("window_start", sa.DateTime(timezone=True), nullable=False),
        sa.Column("window_end", sa.DateTime(timezone=True), nullable=False),
        sa.Column("status", sa.Text(), nullable=False),
        sa.Column("resolved_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("observation", postgresql.JSONB(), nullable=True),
        sa.PrimaryKeyConstraint("id", name="pk_predictions"),
        sa.ForeignKeyConstraint(
            ["execution_id"], ["executions.id"], name="fk_predictions_execution_id_executions"
        ),
        sa.ForeignKeyConstraint(
            ["belief_id"], ["beliefs.id"], name="fk_predictions_belief_id_beliefs"
        ),
        sa.CheckConstraint(
            "status IN ('open', 'confirmed', 'refuted', 'expired')", name="ck_predictions_status"
        ),
        sa.CheckConstraint("confidence >= 0 AND confidence <= 1", name="ck_predictions_confidence"),
        sa.CheckConstraint("window_end >= window_start", name="ck_predictions_window"),
        sa.CheckConstraint(
            "(status = 'open') = (resolved_at IS NULL)", name="ck_predictions_resolved"
        ),
    )
    op.create_index(
        "ix_predictions_namespace_mind_status", "predictions", ["namespace", "mind", "status"]
    )

    op.create_table(
        "procedural_memories",
        sa.Column("id", sa.Text(), nullable=False),
        sa.Column("namespace", sa.Text(), nullable=False),
        sa.Column("mind", sa.Text(), nullable=False),
        sa.Column("subject", sa.Text(), nullable=False),
        sa.Column("text", sa.Text(), nullable=False),
        sa.Column("confidence", sa.Double(), nullable=False),
        sa.Column("plan", sa.Text(), nullable=False),
        sa.Column("revision", sa.Integer(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        _recorded_at(),
        sa.PrimaryKeyConstraint("id", name="pk_procedural_memories"),
        sa.CheckConstraint(
            "confidence >= 0 AND confidence <= 1", name="ck_procedural_memories_confidence"
        ),
    )
    op.create_index(
        "ix_procedural_memories_namespace_mind_subject",
        "procedural_memories",
        ["namespace", "mind", "subject"],
    )
    op.execute(TABLE_TRIGGER.format(table="procedural_memories"))


def downgrade() -> None:
    op.drop_table("procedural_memories")
    op.drop_table("predictions")
    op.drop_table("belief_evidence")
    op.drop_table("beliefs")
    op.drop_table("intentions")

"""Routine is a series: one current-state row per subject of a mind's routine (an observation
found the same as the last, a cycle that decided nothing), updated in place. The journal
(`events`, chained) has each series when it is cut or closed; this table holds no history.

The application role may SELECT, INSERT and UPDATE it, as every current-state table: the
privileges are granted after every migration run (see `minds.adapters.ledger.privileges`).

Revision ID: 0010
Revises: 0009
Create Date: 2026-12-08
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision: str = "0010"
down_revision: str | Sequence[str] | None = "0009"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "observation_series",
        sa.Column("namespace", sa.Text(), nullable=False),
        sa.Column("mind", sa.Text(), nullable=False),
        sa.Column("kind", sa.Text(), nullable=False),
        sa.Column("subject", sa.Text(), nullable=False),
        sa.Column("id", sa.Text(), nullable=False),
        sa.Column("digest", sa.Text(), nullable=False),
        sa.Column("told", sa.Text(), nullable=False),
        sa.Column("count", sa.BigInteger(), nullable=False),
        sa.Column("first_seen", sa.DateTime(timezone=True), nullable=False),
        sa.Column("last_seen", sa.DateTime(timezone=True), nullable=False),
        sa.Column("last", postgresql.JSONB(), nullable=False),
        sa.Column("opened_by", sa.Text(), nullable=False),
        sa.Column("cut_count", sa.BigInteger(), nullable=False),
        sa.Column("cut_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("closed_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("version", sa.BigInteger(), nullable=False),
        sa.CheckConstraint("kind IN ('observation', 'cycle')", name="ck_observation_series_kind"),
        sa.CheckConstraint(
            "count >= cut_count AND cut_count >= 1", name="ck_observation_series_count"
        ),
        sa.CheckConstraint("version >= 1", name="ck_observation_series_version"),
        sa.PrimaryKeyConstraint(
            "namespace", "mind", "kind", "subject", name="pk_observation_series"
        ),
    )


def downgrade() -> None:
    op.drop_table("observation_series")

"""Events are looked up by their subject: an Approval's story is read on every event it gets.

Revision ID: 0007
Revises: 0006
Create Date: 2026-12-03
"""

from __future__ import annotations

from collections.abc import Sequence

from alembic import op

revision: str = "0007"
down_revision: str | Sequence[str] | None = "0006"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_index("ix_events_subject_uid", "events", ["subject_uid"])


def downgrade() -> None:
    op.drop_index("ix_events_subject_uid", table_name="events")

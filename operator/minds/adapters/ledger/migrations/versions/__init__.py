"""Migration scripts, one per revision, applied in order by Alembic."""

"""Alembic migrations of the ledger (loaded by Alembic from this folder, not imported)."""

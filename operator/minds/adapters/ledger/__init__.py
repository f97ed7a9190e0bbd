"""The Postgres ledger: append-only events and the current state of minds.

Schema changes go through the migrations shipped in this package (`migrate.upgrade`); the
controller refuses to run against a schema that is behind (`check_schema`).
"""

from minds.adapters.ledger.db import DATABASE_URL_ENV, make_engine, normalize_url, redact_url
from minds.adapters.ledger.migrate import (
    MIGRATIONS_DIR,
    SchemaAheadError,
    SchemaBehindError,
    SchemaError,
    SchemaStatus,
    check_schema,
    current,
    head,
    schema_status,
    upgrade,
)
from minds.adapters.ledger.schema import APPEND_ONLY_SQLSTATE
from minds.adapters.ledger.store import Ledger

__all__ = [
    "APPEND_ONLY_SQLSTATE",
    "DATABASE_URL_ENV",
    "MIGRATIONS_DIR",
    "Ledger",
    "SchemaAheadError",
    "SchemaBehindError",
    "SchemaError",
    "SchemaStatus",
    "check_schema",
    "current",
    "head",
    "make_engine",
    "normalize_url",
    "redact_url",
    "schema_status",
    "upgrade",
]

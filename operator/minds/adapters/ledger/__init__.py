"""The Postgres ledger: append-only events and the current state of minds.

Schema changes go through the migrations shipped in this package (`migrate.upgrade`), run as the
owner role; the controller refuses to run against a schema that is behind (`check_schema`) or
as a role that could rewrite the ledger (`check_app_role`). Append-only rows are hash-chained
per mind (`chain`), and `verify_chains` recomputes the chains.
"""

from minds.adapters.ledger.db import (
    DATABASE_URL_ENV,
    OWNER_URL_ENV,
    READER_URL_ENV,
    make_engine,
    normalize_url,
    redact_url,
)
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
from minds.adapters.ledger.privileges import (
    APP_ROLE_ENV,
    DEFAULT_APP_ROLE,
    DEFAULT_READER_ROLE,
    READER_ROLE_ENV,
    LedgerRoleError,
    check_app_role,
)
from minds.adapters.ledger.schema import APPEND_ONLY_SQLSTATE
from minds.adapters.ledger.store import Ledger
from minds.adapters.ledger.verify import Verification, verify_chains

__all__ = [
    "APPEND_ONLY_SQLSTATE",
    "APP_ROLE_ENV",
    "DATABASE_URL_ENV",
    "DEFAULT_APP_ROLE",
    "DEFAULT_READER_ROLE",
    "MIGRATIONS_DIR",
    "OWNER_URL_ENV",
    "READER_ROLE_ENV",
    "READER_URL_ENV",
    "Ledger",
    "LedgerRoleError",
    "SchemaAheadError",
    "SchemaBehindError",
    "SchemaError",
    "SchemaStatus",
    "Verification",
    "check_app_role",
    "check_schema",
    "current",
    "head",
    "make_engine",
    "normalize_url",
    "redact_url",
    "schema_status",
    "upgrade",
    "verify_chains",
]

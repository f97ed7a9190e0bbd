"""Schema migrations of the ledger, driven by Alembic without an alembic.ini.

The migrations ship inside the package (`minds/adapters/ledger/migrations`), so an installed
controller finds them next to this module whatever the working directory or install layout; the
Alembic configuration is built here in code. The controller only checks the schema
(`check_schema`); people apply migrations explicitly (`minds db upgrade`), so a rollout never
changes the database behind an operator's back.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path

from alembic import command
from alembic.config import Config
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory
from sqlalchemy import URL, Connection, text
from sqlalchemy.pool import NullPool

from minds.adapters.ledger.db import make_engine, redact_url
from minds.adapters.ledger.partitions import Maintenance, ensure_partitions, is_partitioned

__all__ = [
    "MIGRATIONS_DIR",
    "SchemaAheadError",
    "SchemaBehindError",
    "SchemaError",
    "SchemaStatus",
    "alembic_config",
    "check_schema",
    "current",
    "current_on",
    "head",
    "maintain",
    "raise_unless_at_head",
    "schema_status",
    "schema_status_on",
    "status_of",
    "upgrade",
]

MIGRATIONS_DIR = Path(__file__).resolve().parent / "migrations"

# Arbitrary but fixed: every process that migrates this database takes the same advisory lock,
# so two controllers or a controller and a CLI never run migrations at the same time.
_MIGRATION_LOCK_ID = 0x6D696E6473  # "minds"


class SchemaError(RuntimeError):
    """The database schema does not match what this code needs."""


class SchemaBehindError(SchemaError):
    """The database is missing migrations this code needs."""


class SchemaAheadError(SchemaError):
    """The database was migrated by newer code: this release does not know its revision."""


@dataclass(frozen=True)
class SchemaStatus:
    """Where the database schema is, against the newest migration this code ships."""

    current: str | None
    head: str
    known: bool
    # What the person who migrated should know and do (an upgrade's, e.g. a role it could not
    # create); empty for a status that was only read.
    notes: tuple[str, ...] = ()

    @property
    def at_head(self) -> bool:
        return self.current == self.head

    @property
    def behind(self) -> bool:
        return self.known and not self.at_head

    @property
    def ahead(self) -> bool:
        return not self.known

    def describe(self) -> str:
        at = self.current or "empty (no migrations applied)"
        if self.at_head:
            return f"database schema is at {at}, the newest this code knows"
        if self.ahead:
            return (
                f"database schema is at {at}, which this code does not know "
                f"(newest known: {self.head}); it was migrated by a newer release"
            )
        return f"database schema is at {at}, code needs {self.head}; run `minds db upgrade`"


def alembic_config(url: str | URL | None = None) -> Config:
    """An Alembic configuration pointing at the packaged migrations.

    The URL is passed as an attribute, not as `sqlalchemy.url`, because Alembic's ini parser
    would treat `%` in a password as interpolation.
    """
    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS_DIR))
    if url is not None:
        config.attributes["url"] = url
    return config


def head() -> str:
    """The newest revision this code ships."""
    revision = ScriptDirectory.from_config(alembic_config()).get_current_head()
    if revision is None:
        raise SchemaError(f"no migrations found in {MIGRATIONS_DIR}")
    return revision


def _known_revisions() -> set[str]:
    scripts = ScriptDirectory.from_config(alembic_config())
    return {script.revision for script in scripts.walk_revisions()}


def current_on(connection: Connection) -> str | None:
    """The revision the database behind this connection is at; None if never migrated."""
    return MigrationContext.configure(connection).get_current_revision()


def current(url: str | URL) -> str | None:
    """The revision the database is at; None if no migration was ever applied."""
    # One-shot engines (NullPool) keep no connection open after the call, so a caller can drop
    # the database right after, as the tests do.
    engine = make_engine(url, read_only=True, poolclass=NullPool)
    try:
        with engine.connect() as connection:
            return current_on(connection)
    finally:
        engine.dispose()


def schema_status(url: str | URL) -> SchemaStatus:
    return status_of(current(url))


def schema_status_on(connection: Connection) -> SchemaStatus:
    return status_of(current_on(connection))


def status_of(revision: str | None) -> SchemaStatus:
    """How a database at `revision` compares with the migrations this code ships."""
    known = revision is None or revision in _known_revisions()
    return SchemaStatus(current=revision, head=head(), known=known)


def check_schema(url: str | URL) -> SchemaStatus:
    """Refuse to run against a database whose schema is not the one this code was written for."""
    return raise_unless_at_head(schema_status(url), url)


def raise_unless_at_head(status: SchemaStatus, url: str | URL) -> SchemaStatus:
    if status.at_head:
        return status
    message = f"{status.describe()} (database: {redact_url(url)})"
    if status.ahead:
        raise SchemaAheadError(message)
    raise SchemaBehindError(message)


def upgrade(
    url: str | URL,
    revision: str = "head",
    *,
    app_role: str | None = None,
    reader_role: str | None = None,
) -> SchemaStatus:
    """Apply migrations up to `revision`, in one transaction, under an advisory lock, then
    grant the application role (`app_role`, else MINDS_DATABASE_APP_ROLE, else minds_app)
    and the reader role (`reader_role`, else MINDS_DATABASE_READER_ROLE, else minds_reader)
    exactly their privileges. Run as the owner role."""
    engine = make_engine(url, poolclass=NullPool)
    try:
        with engine.begin() as connection:
            lock = text("SELECT pg_advisory_xact_lock(:id)")
            connection.execute(lock, {"id": _MIGRATION_LOCK_ID})
            config = alembic_config()
            config.attributes["connection"] = connection
            config.attributes["app_role"] = app_role
            config.attributes["reader_role"] = reader_role
            command.upgrade(config, revision)
            if is_partitioned(connection):
                ensure_partitions(connection)
            notes = tuple(config.attributes.get("notes", ()))
            return replace(status_of(current_on(connection)), notes=notes)
    finally:
        engine.dispose()


def maintain(url: str | URL) -> Maintenance:
    """Make the chained tables' months ahead and count the rows their default partitions
    hold (see `minds.adapters.ledger.partitions`), as the owner role, under the migrations'
    lock; idempotent. Refuses a database not yet migrated to partitions."""
    engine = make_engine(url, poolclass=NullPool)
    try:
        with engine.begin() as connection:
            connection.execute(
                text("SELECT pg_advisory_xact_lock(:id)"), {"id": _MIGRATION_LOCK_ID}
            )
            owner = connection.execute(
                text(
                    "SELECT pg_has_role(current_user, relowner, 'MEMBER') FROM pg_class "
                    "WHERE oid = to_regclass('events')"
                )
            ).scalar()
            if not owner:
                raise SchemaError(
                    "the ledger's partitions are made by its owner: run `minds db maintain` "
                    f"with MINDS_DATABASE_OWNER_URL (database: {redact_url(url)})"
                )
            if not is_partitioned(connection):
                raise SchemaBehindError(
                    f"{schema_status_on(connection).describe()}: the ledger is not partitioned "
                    f"yet (database: {redact_url(url)})"
                )
            return ensure_partitions(connection)
    finally:
        engine.dispose()

"""Alembic environment for the ledger.

Configured in code (see `minds.adapters.ledger.migrate.alembic_config`), not by an alembic.ini.
A caller either hands over an open connection (`config.attributes["connection"]`, which is how
`migrate.upgrade` runs everything in its own transaction and advisory lock) or a URL
(`config.attributes["url"]`, falling back to MINDS_DATABASE_URL).

Every online run ends by re-applying the application role's privileges
(`config.attributes["app_role"]`, else MINDS_DATABASE_APP_ROLE, else minds_app) and the reader
role's (`config.attributes["reader_role"]`, else MINDS_DATABASE_READER_ROLE, else minds_reader),
in the same transaction: whatever the migrations created, each role gets exactly what the code
declares. What the person upgrading should know is left in `config.attributes["notes"]`.
"""

from __future__ import annotations

import os

from alembic import context
from sqlalchemy import Connection
from sqlalchemy.pool import NullPool

from minds.adapters.ledger.db import DATABASE_URL_ENV, make_engine, normalize_url
from minds.adapters.ledger.privileges import (
    LedgerRoleError,
    app_role,
    apply_privileges,
    apply_reader_privileges,
    reader_role,
)
from minds.adapters.ledger.schema import Base

config = context.config
target_metadata = Base.metadata


def _url() -> str:
    url = config.attributes.get("url") or os.environ.get(DATABASE_URL_ENV)
    if not url:
        raise RuntimeError(f"no database to migrate: pass a URL or set {DATABASE_URL_ENV}")
    return normalize_url(url).render_as_string(hide_password=False)


def _configure(connection: Connection) -> None:
    context.configure(
        connection=connection,
        target_metadata=target_metadata,
        compare_type=True,
        transaction_per_migration=False,
    )
    with context.begin_transaction():
        context.run_migrations()
        application = app_role(config.attributes.get("app_role"))
        reader = reader_role(config.attributes.get("reader_role"))
        if reader == application:
            # Granting the reader's privileges would take the application's writes away.
            raise LedgerRoleError(f"the reader role and the application role are both {reader!r}")
        apply_privileges(connection, application)
        note = apply_reader_privileges(connection, reader)
        config.attributes.setdefault("notes", []).extend([note] if note else [])


def run_offline() -> None:
    context.configure(url=_url(), target_metadata=target_metadata, literal_binds=True)
    with context.begin_transaction():
        context.run_migrations()


def run_online() -> None:
    connection = config.attributes.get("connection")
    if connection is not None:
        _configure(connection)
        return
    engine = make_engine(_url(), poolclass=NullPool)
    try:
        with engine.begin() as connection:
            _configure(connection)
    finally:
        engine.dispose()


if context.is_offline_mode():
    run_offline()
else:
    run_online()

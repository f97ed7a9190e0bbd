"""Database URLs and engines for the ledger.

People write `postgresql://...` (libpq style, what `MINDS_DATABASE_URL` usually holds), but
SQLAlchemy maps that to psycopg2, which we do not ship. Every engine is built here so the driver
is always psycopg 3 and every session runs in UTC.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import URL, Engine, create_engine, make_url

__all__ = [
    "DATABASE_URL_ENV",
    "OWNER_URL_ENV",
    "READER_URL_ENV",
    "make_engine",
    "normalize_url",
    "redact_url",
]

# The controller's connection: a member of the application role, never the owner.
DATABASE_URL_ENV = "MINDS_DATABASE_URL"
# Migrations' connection: the role that owns the ledger's tables.
OWNER_URL_ENV = "MINDS_DATABASE_OWNER_URL"
# What reads the ledger (`why`, `timeline`, `db status`, `db verify`): a member of the reader
# role. Those commands fall back to DATABASE_URL_ENV, so a shell set up before it still reads.
READER_URL_ENV = "MINDS_DATABASE_READER_URL"

_PSYCOPG = "postgresql+psycopg"


def normalize_url(url: str | URL) -> URL:
    """The URL with the psycopg 3 driver, whatever Postgres spelling it came in."""
    parsed = make_url(url) if isinstance(url, str) else url
    backend = parsed.get_backend_name()
    if backend not in ("postgresql", "postgres"):
        raise ValueError(f"the ledger needs a PostgreSQL URL, got {redact_url(parsed)!r}")
    if parsed.drivername != _PSYCOPG:
        parsed = parsed.set(drivername=_PSYCOPG)
    return parsed


def redact_url(url: str | URL) -> str:
    """The URL as text that is safe to log: the password is hidden."""
    parsed = make_url(url) if isinstance(url, str) else url
    return parsed.render_as_string(hide_password=True)


def make_engine(url: str | URL, *, read_only: bool = False, **kwargs: Any) -> Engine:
    """An engine on psycopg 3 whose sessions use UTC, so timestamps read back tz-aware in UTC.

    `read_only` opens every transaction READ ONLY, for what only reads: should its URL be a
    role that may write after all, a slip in the code still writes nothing. The role is the
    boundary (a session may turn this off); this is the second line."""
    options = "-c timezone=UTC" + (" -c default_transaction_read_only=on" if read_only else "")
    connect_args: dict[str, Any] = {"options": options}
    connect_args.update(kwargs.pop("connect_args", {}))
    kwargs.setdefault("pool_pre_ping", True)
    return create_engine(normalize_url(url), connect_args=connect_args, **kwargs)

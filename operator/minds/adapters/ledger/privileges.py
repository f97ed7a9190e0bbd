"""Who may do what to the ledger: the owner migrates, the application role only appends, the
reader role only reads.

Three roles. The **owner** (whoever runs `minds db upgrade`) owns every table, trigger and
function. The **application role** (default `minds_app`, a NOLOGIN group role; the controller's
login user is a member) may SELECT and INSERT on the append-only tables, also UPDATE the tables
that hold current state, USAGE the sequences the append-only triggers draw ids from, and nothing
else: it owns nothing, so it cannot alter, disable or drop a trigger, replace a function, drop
or rename a table, nor (as it is no superuser) set `session_replication_role`. The **reader
role** (default `minds_reader`, NOLOGIN; people and dashboards log in as members) may SELECT
the tables the code classifies and nothing else, so reading the ledger never needs the right
to write it.

The grants are re-applied after every migration run, from the table lists in `schema`:
REVOKE ALL, then GRANT exactly what each table's kind allows. Not ALTER DEFAULT PRIVILEGES:
those cannot tell an append-only table from a mutable one, and would hand UPDATE on a future
append-only table to the application. A table the code does not classify gets nothing.

`check_app_role` is the controller's start-up guard: it refuses a role that could get past the
append-only rule (a superuser, an owner of a ledger table or a member of one, a role that can
create roles or objects, or one holding a privilege beyond the above).
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass

from sqlalchemy import URL, Connection, text
from sqlalchemy.exc import ProgrammingError
from sqlalchemy.pool import NullPool

from minds.adapters.ledger.chain import CHAINED_TABLES
from minds.adapters.ledger.db import make_engine
from minds.adapters.ledger.schema import APPEND_ONLY_TABLES, MUTABLE_TABLES

__all__ = [
    "APP_ROLE_ENV",
    "DEFAULT_APP_ROLE",
    "DEFAULT_READER_ROLE",
    "READER_ROLE_ENV",
    "LedgerRoleError",
    "app_role",
    "apply_privileges",
    "apply_reader_privileges",
    "check_app_role",
    "check_app_role_on",
    "reader_role",
    "role_problems",
]

APP_ROLE_ENV = "MINDS_DATABASE_APP_ROLE"
DEFAULT_APP_ROLE = "minds_app"
READER_ROLE_ENV = "MINDS_DATABASE_READER_ROLE"
DEFAULT_READER_ROLE = "minds_reader"
DOCS = "docs/ledger.md"

_ROLE_NAME = re.compile(r"^[a-z_][a-z0-9_]{0,62}$")
_VERSION_TABLE = "alembic_version"
_TABLE_PRIVILEGES = ("SELECT", "INSERT", "UPDATE", "DELETE", "TRUNCATE", "REFERENCES", "TRIGGER")

# What each kind of table grants the application; every other privilege is revoked.
TABLE_GRANTS: dict[str, tuple[str, ...]] = {
    **{table: ("SELECT", "INSERT") for table in APPEND_ONLY_TABLES},
    **{table: ("SELECT", "INSERT", "UPDATE") for table in MUTABLE_TABLES},
    _VERSION_TABLE: ("SELECT",),
    # A cut says rows left the database on purpose: only the owner, who archives, writes one.
    "ledger_cuts": ("SELECT",),
}

# The reader may read every table the code classifies (what `why`, `timeline`, `db status` and
# `db verify` need) and write none; no sequence either, as it draws no ids.
READER_GRANTS: dict[str, tuple[str, ...]] = {table: ("SELECT",) for table in TABLE_GRANTS}


class LedgerRoleError(RuntimeError):
    """The database role cannot be used as asked; the message says why and what to do."""


def app_role(configured: str | None = None) -> str:
    """The application role's name: `configured`, else MINDS_DATABASE_APP_ROLE, else minds_app."""
    return _role_name(configured, APP_ROLE_ENV, DEFAULT_APP_ROLE)


def reader_role(configured: str | None = None) -> str:
    """The reader role's name: `configured`, else MINDS_DATABASE_READER_ROLE, else
    minds_reader."""
    return _role_name(configured, READER_ROLE_ENV, DEFAULT_READER_ROLE)


def _role_name(configured: str | None, env: str, default: str) -> str:
    name = configured or os.environ.get(env) or default
    if not _ROLE_NAME.match(name):
        raise LedgerRoleError(
            f"{env}={name!r} is not a plain role name "
            "(lower-case letters, digits and _, at most 63, not starting with a digit)"
        )
    return name


def _quote(connection: Connection, name: str) -> str:
    return connection.dialect.identifier_preparer.quote_identifier(name)


def _try_create_role(connection: Connection, role: str) -> ProgrammingError | None:
    """Create `role` (NOLOGIN) unless it exists; the refusal if the migrating role may not."""
    exists = connection.execute(text("SELECT 1 FROM pg_roles WHERE rolname = :r"), {"r": role})
    if exists.first() is not None:
        return None
    try:
        with connection.begin_nested():
            connection.execute(text(f"CREATE ROLE {_quote(connection, role)} NOLOGIN"))
    except ProgrammingError as exc:
        return exc
    return None


def _ensure_role(connection: Connection, role: str) -> None:
    refused = _try_create_role(connection, role)
    if refused is not None:
        raise LedgerRoleError(
            f"the application role {role!r} does not exist and the migrating role may not "
            f"create it; have an administrator run `CREATE ROLE {role} NOLOGIN;` (see {DOCS}), "
            f"then run `minds db upgrade` again ({refused.orig})"
        ) from None


def _grant_exactly(connection: Connection, role: str, grants: dict[str, tuple[str, ...]]) -> None:
    """Revoke everything `role` holds in the schema, then grant `grants` on the tables present."""
    quoted = _quote(connection, role)
    schema = _quote(connection, str(connection.execute(text("SELECT current_schema()")).scalar()))
    connection.execute(text(f"REVOKE ALL ON ALL TABLES IN SCHEMA {schema} FROM {quoted}"))
    connection.execute(text(f"REVOKE ALL ON ALL SEQUENCES IN SCHEMA {schema} FROM {quoted}"))
    connection.execute(text(f"REVOKE CREATE ON SCHEMA {schema} FROM {quoted}"))
    connection.execute(text(f"GRANT USAGE ON SCHEMA {schema} TO {quoted}"))
    present = set(
        connection.execute(
            text("SELECT tablename FROM pg_tables WHERE schemaname = current_schema()")
        ).scalars()
    )
    for table, privileges in grants.items():
        if table in present:
            connection.execute(
                text(f"GRANT {', '.join(privileges)} ON {schema}.{table} TO {quoted}")
            )


def apply_reader_privileges(connection: Connection, role: str) -> str | None:
    """Create the reader role if absent (NOLOGIN) and let it SELECT the ledger's tables, and
    nothing else. When it is absent and the migrating role may not create it, grant nothing
    and return what to tell the person upgrading: an install from before the reader role keeps
    upgrading, and its people keep reading as before until an administrator creates it."""
    if _try_create_role(connection, role) is not None:
        return (
            f"the reader role {role!r} does not exist and the migrating role may not create "
            f"it, so nobody may read the ledger without write rights yet; have an "
            f"administrator run `CREATE ROLE {role} NOLOGIN;` (see {DOCS}), then run "
            "`minds db upgrade` again"
        )
    _grant_exactly(connection, role, READER_GRANTS)
    return None


def apply_privileges(connection: Connection, role: str) -> None:
    """Create the application role if absent (NOLOGIN) and give it exactly its privileges."""
    _ensure_role(connection, role)
    quoted = _quote(connection, role)
    _grant_exactly(connection, role, TABLE_GRANTS)
    for chained in CHAINED_TABLES:
        # At an older revision the column may not exist yet: then there is nothing to grant.
        sequence = connection.execute(
            text(
                "SELECT pg_get_serial_sequence(format('%I', c.table_name), c.column_name) "
                "FROM information_schema.columns AS c WHERE c.table_schema = current_schema() "
                "AND c.table_name = :t AND c.column_name = :c"
            ),
            {"t": chained.name, "c": chained.order},
        ).scalar()
        if sequence is not None:
            # nextval only (USAGE); setval would need UPDATE, which stays with the owner.
            connection.execute(text(f"GRANT USAGE ON SEQUENCE {sequence} TO {quoted}"))


@dataclass(frozen=True)
class _RoleFacts:
    name: str
    superuser: bool
    createrole: bool
    bypassrls: bool
    creates_in_schema: bool


def role_problems(connection: Connection) -> list[str]:
    """Why the connected role must not run the controller; empty when it may."""
    facts = _RoleFacts(
        *connection.execute(
            text(
                "SELECT current_user, rolsuper, rolcreaterole, rolbypassrls, "
                "has_schema_privilege(current_schema(), 'CREATE') "
                "FROM pg_roles WHERE rolname = current_user"
            )
        ).one()
    )
    problems = [
        reason
        for held, reason in (
            (facts.superuser, "is a superuser, which no trigger binds"),
            (facts.createrole, "may create roles (CREATEROLE), and so grant itself more"),
            (facts.bypassrls, "bypasses row-level security (BYPASSRLS)"),
            (facts.creates_in_schema, "may create objects in the ledger's schema (CREATE)"),
        )
        if held
    ]
    tables = [*TABLE_GRANTS]
    owned = connection.execute(
        text(
            "SELECT c.relname, pg_get_userbyid(c.relowner) FROM pg_class AS c "
            "WHERE c.relnamespace = current_schema()::regnamespace AND c.relname = ANY(:tables) "
            "AND pg_has_role(current_user, c.relowner, 'MEMBER') ORDER BY c.relname"
        ),
        {"tables": tables},
    ).all()
    problems += [
        f"owns table {table!r} (or is a member of its owner {owner!r}), so it could alter, "
        "disable or drop its triggers"
        for table, owner in owned
    ]
    forbidden = [
        (table, privilege)
        for table, granted in TABLE_GRANTS.items()
        for privilege in _TABLE_PRIVILEGES
        if privilege not in granted
    ]
    extra = connection.execute(
        text(
            "SELECT f.name, f.privilege FROM unnest(CAST(:tables AS text[]), "
            "CAST(:privileges AS text[])) AS f(name, privilege) "
            "JOIN pg_tables AS pt ON pt.tablename = f.name AND pt.schemaname = current_schema() "
            "WHERE has_table_privilege(format('%I.%I', pt.schemaname, f.name), f.privilege) "
            "ORDER BY f.name, f.privilege"
        ),
        {"tables": [t for t, _ in forbidden], "privileges": [p for _, p in forbidden]},
    ).all()
    problems += [f"holds {privilege} on table {table!r}" for table, privilege in extra]
    return [f"the database role {facts.name!r} {problem}" for problem in problems]


def check_app_role(url: str | URL) -> None:
    """Fail closed unless the role of `url` is bound by the ledger's rules."""
    engine = make_engine(url, poolclass=NullPool)
    try:
        with engine.connect() as connection:
            check_app_role_on(connection)
    finally:
        engine.dispose()


def check_app_role_on(connection: Connection) -> None:
    problems = role_problems(connection)
    if problems:
        raise LedgerRoleError(
            "the controller refuses to run as a role that could rewrite the ledger: "
            + "; ".join(problems)
            + f". Connect MINDS_DATABASE_URL as a member of the application role (see {DOCS})."
        )

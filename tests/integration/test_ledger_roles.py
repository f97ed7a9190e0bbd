"""The application role against a real Postgres: every way around the append-only rule that
an owner or superuser has is refused to it, and what it may not choose, the database chooses."""

from __future__ import annotations

import os
import subprocess
import sys
import uuid
from collections.abc import Iterator

import psycopg
import pytest
from psycopg import sql
from sqlalchemy import make_url

from minds.adapters.ledger import LedgerRoleError, check_app_role, upgrade, verify_chains
from minds.adapters.ledger.partitions import PARTITION_NAME
from minds.adapters.ledger.privileges import TABLE_GRANTS
from minds.adapters.ledger.schema import APPEND_ONLY_TABLES, KEY_TABLES, SEAL_TABLES, Base
from minds.devenv.postgres import prepare_ledger_database
from tests.fixtures.postgres import LedgerDatabase, connect

pytestmark = pytest.mark.integration

INSUFFICIENT_PRIVILEGE = "42501"


@pytest.fixture
def app(ledger_database: LedgerDatabase) -> Iterator[psycopg.Connection]:
    """The application role, each statement in a transaction rolled back afterwards."""
    with connect(ledger_database.app_url) as conn:
        yield conn
        conn.rollback()


def append_event(conn: psycopg.Connection, key: str, mind: str = "keeper") -> int:
    row = conn.execute(
        "INSERT INTO events (mind, namespace, type, subject_kind, subject_name, occurred_at, "
        "idempotency_key) VALUES (%s, 'ops', 'noted', 'Mind', %s, now(), %s) "
        "RETURNING id",
        (mind, mind, key),
    ).fetchone()
    return -1 if row is None else int(row[0])


def _column(table: str) -> str:
    """A column ``table`` has, to try to overwrite."""
    return "seal" if table in SEAL_TABLES else "recorded_at" if table in KEY_TABLES else "id"


BYPASSES = {
    "replication role": "SET session_replication_role = replica",
    "disable trigger": "ALTER TABLE events DISABLE TRIGGER events_append_only",
    "disable all triggers": "ALTER TABLE events DISABLE TRIGGER ALL",
    "drop trigger": "DROP TRIGGER events_append_only ON events",
    "drop chain trigger": "DROP TRIGGER events_chain ON events",
    "replace trigger function": (
        "CREATE OR REPLACE FUNCTION minds_refuse_mutation() RETURNS trigger "
        "LANGUAGE plpgsql AS $$ BEGIN RETURN NULL; END $$"
    ),
    "replace chain function": (
        "CREATE OR REPLACE FUNCTION minds_chain_events() RETURNS trigger "
        "LANGUAGE plpgsql AS $$ BEGIN RETURN NEW; END $$"
    ),
    "own trigger": (
        "CREATE TRIGGER zz AFTER INSERT ON events FOR EACH ROW "
        "EXECUTE FUNCTION minds_refuse_mutation()"
    ),
    "drop table": "DROP TABLE events",
    "rename table": "ALTER TABLE events RENAME TO events_old",
    "rename column": "ALTER TABLE events RENAME COLUMN payload TO p",
    "truncate": "TRUNCATE events",
    "create table": "CREATE TABLE shadow (id int)",
    "create temporary table": "CREATE TEMPORARY TABLE shadow (id int)",
    "fake the schema version": "UPDATE alembic_version SET version_num = '9999'",
    "rewind a sequence": "SELECT setval(pg_get_serial_sequence('events', 'id'), 1)",
    "become the owner": "SET ROLE minds_owner",
    **{
        f"update {t}": f"UPDATE {t} SET {_column(t)} = NULL"  # noqa: S608
        for t in APPEND_ONLY_TABLES
    },
    **{f"delete {t}": f"DELETE FROM {t}" for t in APPEND_ONLY_TABLES},  # noqa: S608
}


@pytest.mark.parametrize("statement", list(BYPASSES.values()), ids=list(BYPASSES))
def test_the_application_role_cannot_get_past_the_append_only_rule(
    app: psycopg.Connection, statement: str
) -> None:
    append_event(app, "k1")
    with pytest.raises(psycopg.Error) as refused:
        app.execute(statement)  # type: ignore[arg-type]
    assert refused.value.sqlstate == INSUFFICIENT_PRIVILEGE, refused.value


def test_id_recorded_at_and_hashes_sent_by_the_caller_are_overwritten(
    ledger_database: LedgerDatabase,
) -> None:
    insert = (
        "INSERT INTO events (id, mind, namespace, type, subject_kind, subject_name, "
        "occurred_at, recorded_at, idempotency_key, prev_hash, row_hash) VALUES "
        "(999999, 'keeper', 'ops', 'noted', 'Mind', 'keeper', now(), "
        "{recorded_at}, 'k1', '\\x00', '\\x00') "
        "RETURNING id, recorded_at = statement_timestamp(), prev_hash, row_hash"
    )
    with connect(ledger_database.app_url) as conn:
        # The table is partitioned by recorded_at: a time of another month is refused (the row
        # was routed by it before the trigger recorded the time), not silently rewritten.
        with pytest.raises(psycopg.errors.FeatureNotSupported):
            conn.execute(insert.format(recorded_at="'2001-01-01T00:00:00Z'"))  # type: ignore[arg-type]
        conn.rollback()
        row = conn.execute(
            insert.format(recorded_at="statement_timestamp() - interval '1 microsecond'")  # type: ignore[arg-type]
        ).fetchone()
        conn.commit()
    assert row is not None
    assert row[0] != 999999
    assert row[1] is True  # recorded when the statement ran, not when the caller said
    assert row[2] is None  # the mind's first row
    assert row[3] != b"\x00"
    assert verify_chains(ledger_database.app_url).intact


def test_the_application_role_holds_exactly_its_grants(ledger_database: LedgerDatabase) -> None:
    privileges = ("SELECT", "INSERT", "UPDATE", "DELETE", "TRUNCATE", "REFERENCES", "TRIGGER")
    with connect(ledger_database.app_url) as conn:
        held = {
            (table, privilege)
            for table, privilege in conn.execute(
                "SELECT t.tablename, p.privilege FROM pg_tables AS t "
                "CROSS JOIN unnest(%s::text[]) AS p(privilege) "
                "WHERE t.schemaname = 'public' "
                "AND has_table_privilege(format('public.%%I', t.tablename), p.privilege)",
                (list(privileges),),
            )
        }
        tables = {
            r[0]
            for r in conn.execute("SELECT tablename FROM pg_tables WHERE schemaname = 'public'")
        }
    # Every table is classified: one the code forgot would get nothing, and fail here. A
    # partition gets nothing (rows go in and out through its partitioned table): in `held`, a
    # privilege on one would fail the last assertion.
    tables = {t for t in tables if not PARTITION_NAME.match(t)}
    assert tables == {*Base.metadata.tables, "alembic_version"}
    assert set(TABLE_GRANTS) == tables
    assert held == {(t, p) for t, granted in TABLE_GRANTS.items() for p in granted}


def test_the_controller_accepts_the_application_role(ledger_database: LedgerDatabase) -> None:
    check_app_role(ledger_database.app_url)


@pytest.mark.parametrize(
    ("role", "problem"),
    [("owner_url", "owns table 'events'"), ("admin_url", "is a superuser")],
)
def test_the_controller_refuses_an_owner_or_a_superuser(
    ledger_database: LedgerDatabase, role: str, problem: str
) -> None:
    with pytest.raises(LedgerRoleError, match=problem):
        check_app_role(getattr(ledger_database, role))


def test_the_controller_refuses_a_member_of_the_owner(ledger_database: LedgerDatabase) -> None:
    with connect(ledger_database.admin_url) as admin:
        admin.execute("GRANT minds_owner TO minds_controller")
        admin.commit()
    try:
        with pytest.raises(LedgerRoleError, match="member of its owner 'minds_owner'"):
            check_app_role(ledger_database.app_url)
    finally:
        with connect(ledger_database.admin_url) as admin:
            admin.execute("REVOKE minds_owner FROM minds_controller")


def test_minds_controller_run_refuses_the_owner_role(ledger_database: LedgerDatabase) -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "minds.cli.main", "controller", "run"],
        env={**os.environ, "MINDS_DATABASE_URL": ledger_database.owner_url},
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert proc.returncode == 2, proc.stderr
    assert "refuses to run as a role that could rewrite the ledger" in proc.stderr
    assert "'minds_owner' owns table" in proc.stderr


def test_a_missing_application_role_is_created_nologin(ledger_database: LedgerDatabase) -> None:
    role = f"minds_app_{uuid.uuid4().hex[:8]}"
    with pytest.raises(LedgerRoleError, match=f"CREATE ROLE {role} NOLOGIN"):
        upgrade(ledger_database.owner_url, app_role=role)  # the owner may not create roles
    try:
        upgrade(ledger_database.admin_url, app_role=role)
        with connect(ledger_database.admin_url) as conn:
            login = conn.execute("SELECT rolcanlogin FROM pg_roles WHERE rolname = %s", (role,))
            assert login.fetchone() == (False,)
            grants = conn.execute(
                "SELECT has_table_privilege(%s, 'events', 'INSERT'), "
                "has_table_privilege(%s, 'events', 'UPDATE')",
                (role, role),
            )
            assert grants.fetchone() == (True, False)
    finally:
        with connect(ledger_database.admin_url) as conn:
            conn.execute(sql.SQL("DROP OWNED BY {}").format(sql.Identifier(role)))
            conn.execute(sql.SQL("DROP ROLE {}").format(sql.Identifier(role)))
            conn.commit()


def test_a_role_name_that_is_not_plain_is_refused(ledger_database: LedgerDatabase) -> None:
    with pytest.raises(LedgerRoleError, match="MINDS_DATABASE_APP_ROLE"):
        upgrade(ledger_database.owner_url, app_role='x"; DROP TABLE events; --')


def test_a_ledger_the_superuser_migrated_is_handed_to_the_owner(
    empty_database: LedgerDatabase,
) -> None:
    # How the demo's ledger was set up before the owner role: migrated as the superuser.
    upgrade(empty_database.admin_url, "0005")
    admin = make_url(empty_database.admin_url).set(drivername="postgresql")
    prepare_ledger_database(admin.set(database="postgres").render_as_string(False), admin.database)
    assert upgrade(empty_database.owner_url).at_head
    check_app_role(empty_database.app_url)

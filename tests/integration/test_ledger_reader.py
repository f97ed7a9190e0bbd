"""The reader role against a real Postgres: its members read all that `why`, `timeline` and
`db verify` need, and cannot change a row of the ledger; the reading commands prefer it."""

from __future__ import annotations

import os
import secrets
import subprocess
import sys
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import psycopg
import pytest
from psycopg import sql
from sqlalchemy import make_url
from sqlalchemy.exc import DBAPIError

from minds.adapters.ledger import DEFAULT_READER_ROLE, Ledger, LedgerRoleError, upgrade
from minds.adapters.ledger.privileges import READER_GRANTS, TABLE_GRANTS
from minds.domain.beliefs import PredictionRecord, PredictionStatus
from minds.domain.ledger import EventRecord, SubjectRef, idempotency_key
from minds.engine.why import Explainer
from tests.fakes.resources import FakeResources
from tests.fixtures.postgres import DatabaseFactory, LedgerDatabase, connect
from tests.unit.engine.test_why_revisions import MIND, NS, revision_two

pytestmark = pytest.mark.integration

INSUFFICIENT_PRIVILEGE = "42501"
READ_ONLY_TRANSACTION = "25006"
T0 = datetime(2026, 12, 4, 12, 0, tzinfo=UTC)


def _login_in(admin_url: str, database: str, group: str) -> Iterator[str]:
    """A fresh LOGIN role in `group`, as people and dashboards get one; dropped afterwards."""
    name, password = f"viewer_{uuid.uuid4().hex[:10]}", secrets.token_urlsafe(16)
    with connect(admin_url, autocommit=True) as conn:
        conn.execute(
            sql.SQL("CREATE ROLE {} LOGIN PASSWORD {} IN ROLE {}").format(
                sql.Identifier(name), sql.Literal(password), sql.Identifier(group)
            )
        )
    try:
        url = make_url(admin_url).set(username=name, password=password, database=database)
        yield url.render_as_string(hide_password=False)
    finally:
        with connect(admin_url, autocommit=True) as conn:
            conn.execute(sql.SQL("DROP OWNED BY {}").format(sql.Identifier(name)))
            conn.execute(sql.SQL("DROP ROLE {}").format(sql.Identifier(name)))


@pytest.fixture
def reader_url(ledger_database: LedgerDatabase) -> Iterator[str]:
    """The migrated ledger, as a member of the reader role `minds db upgrade` granted."""
    database = make_url(ledger_database.admin_url).database or ""
    yield from _login_in(ledger_database.admin_url, database, DEFAULT_READER_ROLE)


@pytest.fixture
def reader(reader_url: str) -> Iterator[psycopg.Connection]:
    """A plain session of the reader, each statement its own transaction: not opened
    read-only, so only the role refuses."""
    with connect(reader_url, autocommit=True) as conn:
        yield conn


def _first_column(conn: psycopg.Connection, table: str) -> str:
    row = conn.execute(
        "SELECT column_name FROM information_schema.columns WHERE table_schema = "
        "current_schema() AND table_name = %s ORDER BY ordinal_position LIMIT 1",
        (table,),
    ).fetchone()
    assert row is not None, table
    return str(row[0])


WRITES = {
    **{
        f"{kind} {table}": (table, statement.replace("{t}", table))
        for table in sorted(TABLE_GRANTS)
        for kind, statement in (
            ("insert", "INSERT INTO {t} DEFAULT VALUES"),
            ("update", "UPDATE {t} SET {c} = {c}"),
            ("delete", "DELETE FROM {t}"),
            ("truncate", "TRUNCATE {t}"),
        )
    },
    "draw an id": ("events", "SELECT nextval(pg_get_serial_sequence('events', 'id'))"),
    "create a table": ("events", "CREATE TABLE shadow (id int)"),
    "become the application": ("events", "SET ROLE minds_app"),
    "become the owner": ("events", "SET ROLE minds_owner"),
}


@pytest.mark.parametrize(("table", "write"), list(WRITES.values()), ids=list(WRITES))
def test_the_reader_cannot_write_the_ledger(
    reader: psycopg.Connection, table: str, write: str
) -> None:
    statement = sql.SQL(write).format(c=sql.Identifier(_first_column(reader, table)))
    with pytest.raises(psycopg.Error) as refused:
        reader.execute(statement)
    assert refused.value.sqlstate == INSUFFICIENT_PRIVILEGE, refused.value


def test_the_reader_holds_exactly_select_on_the_ledger(reader: psycopg.Connection) -> None:
    privileges = ("SELECT", "INSERT", "UPDATE", "DELETE", "TRUNCATE", "REFERENCES", "TRIGGER")
    held = {
        (table, privilege)
        for table, privilege in reader.execute(
            "SELECT t.tablename, p.privilege FROM pg_tables AS t "
            "CROSS JOIN unnest(%s::text[]) AS p(privilege) "
            "WHERE t.schemaname = 'public' "
            "AND has_table_privilege(format('public.%%I', t.tablename), p.privilege)",
            (list(privileges),),
        )
    }
    assert held == {(table, "SELECT") for table in READER_GRANTS}
    assert set(READER_GRANTS) == set(TABLE_GRANTS)  # every table the code classifies


def _story(ledger: Ledger) -> None:
    """What the controller writes when a restart did not heal: heal-r1 failed, and the
    prediction it rested on was refuted; a choice made on the way."""
    ledger.append_event(
        EventRecord(
            mind=MIND,
            namespace=NS,
            type="plan_failed",
            subject=SubjectRef(kind="Plan", name="heal-r1", uid="u1"),
            payload={"reason": "V1: expectation failed: atlas-worker is crash-looping"},
            occurred_at=T0,
            idempotency_key=idempotency_key("heal-r1", "failed"),
        )
    )
    belief = ledger.upsert_belief(NS, MIND, "atlas-worker runs normally after a restart", 0.6, T0)
    prediction, _ = ledger.open_prediction(
        PredictionRecord(
            id="pred-heal-r1-P1",
            namespace=NS,
            mind=MIND,
            plan="heal-r1",
            step="P1",
            belief_id=belief.id,
            criteria={"field": "state", "comparison": "equals", "value": "running"},
            confidence=0.8,
            window_start=T0 - timedelta(minutes=1),
            window_end=T0,
        )
    )
    ledger.resolve_prediction(
        prediction.id,
        PredictionStatus.REFUTED,
        T0,
        {"summary": "atlas-worker is crash-looping"},
    )
    ledger.record_decision(
        namespace=NS,
        mind=MIND,
        kind="replan",
        outcome="revised",
        subjects={"plan": "heal-r1"},
        data={"reason": "the restart did not heal"},
        at=T0 + timedelta(seconds=1),
        key=idempotency_key("replan", "heal-r1"),
    )


def _revision_two() -> FakeResources:
    resources = FakeResources()
    revision_two(resources)
    return resources


def test_why_and_timeline_read_all_they_need_as_the_reader(ledger: Ledger, reader_url: str) -> None:
    _story(ledger)
    with Ledger.from_url(reader_url, read_only=True) as read:
        explainer = Explainer(resources=_revision_two(), ledger=read)
        links = explainer.why(NS, "plan", "heal-r2")
        timeline = explainer.timeline(NS, MIND)
    assert [(link.kind, link.name) for link in links] == [
        ("Plan", "heal-r2"),
        ("Plan", "heal-r1"),
        ("Prediction", "pred-heal-r1-P1"),
    ]
    # The same story the controller's role reads, every event and decision of it.
    assert timeline == Explainer(resources=_revision_two(), ledger=ledger).timeline(NS, MIND)
    assert {"plan_failed", "decision:replan"} <= {item["what"] for item in timeline}


def test_a_read_only_ledger_writes_nothing_even_as_a_role_that_may(
    migrated_database_url: str,
) -> None:
    with Ledger.from_url(migrated_database_url, read_only=True) as read:
        with pytest.raises(DBAPIError) as refused:
            _story(read)
        assert read.events(namespace=NS, mind=MIND) == []
    assert getattr(refused.value.orig, "sqlstate", None) == READ_ONLY_TRANSACTION


def minds(*args: str, env: dict[str, str], cwd: Path) -> subprocess.CompletedProcess[str]:
    keep = {k: v for k, v in os.environ.items() if not k.startswith("MINDS_DATABASE")}
    return subprocess.run(
        [sys.executable, "-m", "minds.cli.main", *args],
        env={**keep, **env},
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def _unreachable_kubeconfig(tmp_path: Path) -> Path:
    """A mind with history is told from the ledger alone: no API server is asked, so none
    needs to answer."""
    path = tmp_path / "kubeconfig"
    path.write_text(
        "apiVersion: v1\nkind: Config\ncurrent-context: nowhere\n"
        "clusters: [{name: nowhere, cluster: {server: 'https://127.0.0.1:9'}}]\n"
        "users: [{name: nobody, user: {token: none}}]\n"
        "contexts: [{name: nowhere, context: {cluster: nowhere, user: nobody}}]\n"
    )
    return path


def test_the_reading_commands_prefer_the_reader_url(
    ledger: Ledger, ledger_database: LedgerDatabase, reader_url: str, tmp_path: Path
) -> None:
    _story(ledger)
    # Were the application's URL used, its wrong password would fail every command below.
    wrong = make_url(ledger_database.app_url).set(password="not-the-password")
    env = {
        "MINDS_DATABASE_READER_URL": reader_url,
        "MINDS_DATABASE_URL": wrong.render_as_string(hide_password=False),
        "KUBECONFIG": str(_unreachable_kubeconfig(tmp_path)),
    }
    told = minds("timeline", MIND, "-n", NS, env=env, cwd=tmp_path)
    assert told.returncode == 0, told.stderr
    assert "plan_failed" in told.stdout
    assert "decision:replan" in told.stdout
    verified = minds("db", "verify", env=env, cwd=tmp_path)
    assert verified.returncode == 0, verified.stdout + verified.stderr
    assert "ledger intact: " in verified.stdout
    status = minds("db", "status", env=env, cwd=tmp_path)
    assert status.returncode == 0, status.stdout + status.stderr


def test_without_a_reader_url_the_reading_commands_use_the_application_url(
    ledger: Ledger, migrated_database_url: str, tmp_path: Path
) -> None:
    _story(ledger)
    env = {
        "MINDS_DATABASE_URL": migrated_database_url,
        "KUBECONFIG": str(_unreachable_kubeconfig(tmp_path)),
    }
    told = minds("timeline", MIND, "-n", NS, env=env, cwd=tmp_path)
    assert told.returncode == 0, told.stderr
    assert "plan_failed" in told.stdout


def test_an_upgrade_that_may_not_create_the_reader_role_says_so_and_still_migrates(
    make_database: DatabaseFactory,
) -> None:
    database = make_database()
    missing = f"absent_reader_{uuid.uuid4().hex[:8]}"
    status = upgrade(database.owner_url, reader_role=missing)
    assert status.at_head
    assert len(status.notes) == 1
    assert f"`CREATE ROLE {missing} NOLOGIN;`" in status.notes[0]


def test_the_reader_role_may_not_be_the_application_role(make_database: DatabaseFactory) -> None:
    # Its grants (SELECT only) would take the application's INSERT and UPDATE away.
    database = make_database()
    with pytest.raises(LedgerRoleError, match="both 'minds_app'"):
        upgrade(database.owner_url, reader_role="minds_app")

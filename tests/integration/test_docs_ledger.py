"""docs/ledger.md, run as written: its SQL sets up the three roles on a real Postgres, then its
commands upgrade and verify the ledger (reading as the reader's login), the controller accepts
the role it describes, and the reader's login reads and cannot write."""

from __future__ import annotations

import re
import secrets
import uuid
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest
from psycopg import sql
from psycopg.conninfo import make_conninfo
from sqlalchemy import make_url

from minds.adapters.ledger import Ledger, LedgerRoleError, check_app_role
from minds.adapters.ledger.verify import (
    CHANGED,
    SEAL_MISMATCH,
    ChainBreak,
    ChainSummary,
    Unverified,
)
from minds.devenv.install import repo_root
from tests.fixtures.docs import run_documented, sh_commands

pytestmark = pytest.mark.integration

DOC = repo_root() / "docs" / "ledger.md"
KEYED_SECTIONS = ("The key", "Checkpoints", "Archiving a month")
_SQL = re.compile(r"^```sql\n(.*?)^```", re.MULTILINE | re.DOTALL)


def sql_blocks(doc: Path) -> list[list[str]]:
    return [
        [s.strip() for s in block.split(";\n") if s.strip()]
        for block in _SQL.findall(doc.read_text())
    ]


def _url(server: str, user: str, password: str, database: str) -> str:
    parsed = make_url(server).set(username=user, password=password, database=database)
    return parsed.render_as_string(hide_password=False)


@pytest.fixture
def documented_names(postgres_url: str) -> Iterator[dict[str, str]]:
    """Unique stand-ins for the doc's role and database names, removed afterwards."""
    suffix = uuid.uuid4().hex[:8]
    names = {
        "minds_owner": f"doc_owner_{suffix}",
        "minds_app": f"doc_app_{suffix}",
        "minds_controller": f"doc_controller_{suffix}",
        "minds_reader": f"doc_reader_{suffix}",
        "minds_viewer": f"doc_viewer_{suffix}",
        "minds": f"doc_minds_{suffix}",
    }
    yield names
    admin = make_url(postgres_url).set(drivername="postgresql")
    admin_url = admin.render_as_string(hide_password=False)
    with psycopg.connect(make_conninfo(admin_url, dbname="postgres"), autocommit=True) as conn:
        database = sql.Identifier(names["minds"])
        conn.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(database))
        logins = ("minds_viewer", "minds_reader", "minds_controller", "minds_app", "minds_owner")
        for role in (names[login] for login in logins):
            if conn.execute("SELECT 1 FROM pg_roles WHERE rolname = %s", (role,)).fetchone():
                conn.execute(sql.SQL("DROP OWNED BY {}").format(sql.Identifier(role)))
                conn.execute(sql.SQL("DROP ROLE {}").format(sql.Identifier(role)))


def test_the_documented_setup_upgrade_and_verify_work(
    postgres_url: str, documented_names: dict[str, str], tmp_path: Path
) -> None:
    passwords = {
        "<owner-password>": secrets.token_urlsafe(16),
        "<controller-password>": secrets.token_urlsafe(16),
        "<viewer-password>": secrets.token_urlsafe(16),
    }

    def substituted(statement: str) -> str:
        for name, unique in documented_names.items():
            statement = re.sub(rf"\b{name}\b", unique, statement)
        for placeholder, password in passwords.items():
            statement = statement.replace(placeholder, password)
        return statement

    on_server, in_database = sql_blocks(DOC)
    admin = make_url(postgres_url).set(drivername="postgresql").render_as_string(False)
    with psycopg.connect(make_conninfo(admin, dbname="postgres"), autocommit=True) as conn:
        for statement in on_server:
            conn.execute(substituted(statement))  # type: ignore[arg-type]
    database = documented_names["minds"]
    with psycopg.connect(make_conninfo(admin, dbname=database), autocommit=True) as conn:
        for statement in in_database:
            conn.execute(substituted(statement))  # type: ignore[arg-type]

    owner_url = _url(
        postgres_url, documented_names["minds_owner"], passwords["<owner-password>"], database
    )
    app_url = _url(
        postgres_url,
        documented_names["minds_controller"],
        passwords["<controller-password>"],
        database,
    )
    reader_url = _url(
        postgres_url, documented_names["minds_viewer"], passwords["<viewer-password>"], database
    )
    env = {
        "MINDS_DATABASE_OWNER_URL": owner_url,
        "MINDS_DATABASE_URL": app_url,
        "MINDS_DATABASE_READER_URL": reader_url,
        "MINDS_DATABASE_APP_ROLE": documented_names["minds_app"],
        "MINDS_DATABASE_READER_ROLE": documented_names["minds_reader"],
    }
    # The key's and the checkpoints' commands need a cluster: tests/e2e/test_ledger_checkpoint.
    commands = sh_commands(DOC, skip=KEYED_SECTIONS)
    outputs = run_documented(commands, {}, env, tmp_path)
    assert "ledger intact: 0 rows in 0 chains" in outputs["minds db verify"]
    assert "partitions created: none" in outputs["minds db maintain"]
    assert "rows in default partitions: 0" in outputs["minds db maintain"]

    with psycopg.connect(reader_url, autocommit=True) as conn:
        assert conn.execute("SELECT count(*) FROM events").fetchone() == (0,)
        with pytest.raises(psycopg.errors.InsufficientPrivilege):
            conn.execute("DELETE FROM events")

    check_app_role(app_url)  # the controller accepts the documented controller login
    with pytest.raises(LedgerRoleError, match="owns table"):
        check_app_role(owner_url)
    with Ledger.from_url(app_url) as ledger:
        assert ledger.check_schema().at_head


def test_the_documented_break_is_what_verify_prints() -> None:
    documented = ChainBreak(
        table="events",
        namespace="ops",
        mind="keeper",
        position=2,
        previous=1,
        reason=CHANGED,
    )
    assert f"BROKEN {documented.describe()}" in DOC.read_text()
    summary = ChainSummary("events", "ops", "keeper", rows=12, sealed=9, switch=4)
    assert f"`chain {summary.describe()}`" in DOC.read_text()
    unverified = Unverified("events", "ops", "keeper", "k1", 2).describe()
    assert "sealed under key 'k1', which the keys given do not hold" in unverified
    assert SEAL_MISMATCH.startswith("its seal does not match")

"""The embedded Postgres gives every data directory the ledger's roles, also one made before
they existed."""

from __future__ import annotations

import json
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest

from minds.devenv.postgres import start_postgres, stop_postgres

pytestmark = pytest.mark.integration


@pytest.fixture
def data_dir() -> Iterator[Path]:
    # Under the temp root: as root the server runs as a user who cannot enter pytest's folders.
    path = Path(tempfile.mkdtemp(prefix="minds-test-pg-"))
    yield path
    stop_postgres(path)
    shutil.rmtree(path, ignore_errors=True)


def role(url: str) -> tuple[str, bool]:
    with psycopg.connect(url) as conn:
        row = conn.execute(
            "SELECT current_user, rolsuper FROM pg_roles WHERE rolname = current_user"
        ).fetchone()
    assert row is not None
    return row[0], row[1]


def test_a_running_server_from_before_the_roles_gets_them(data_dir: Path) -> None:
    first = start_postgres(data_dir)
    state_file = data_dir / "minds-devenv.json"
    state = json.loads(state_file.read_text())
    with psycopg.connect(first.url, autocommit=True) as conn:
        conn.execute("DROP ROLE minds_controller")
        conn.execute("DROP ROLE minds_viewer")
    state_file.write_text(json.dumps({k: state[k] for k in ("password", "port", "binDir")}))
    assert "readerPassword" in state

    again = start_postgres(data_dir)

    assert again.pid == first.pid  # the same server, not a restart
    assert role(again.owner_url) == ("minds_owner", False)
    assert role(again.app_url) == ("minds_controller", False)
    assert role(again.reader_url) == ("minds_viewer", False)
    assert role(again.url) == ("minds", True)


def test_the_reader_login_reads_as_the_reader_role_only(data_dir: Path) -> None:
    handle = start_postgres(data_dir)
    with psycopg.connect(handle.reader_url) as conn:
        groups = conn.execute(
            "SELECT array_agg(g.rolname ORDER BY g.rolname) FROM pg_auth_members AS m "
            "JOIN pg_roles AS g ON g.oid = m.roleid WHERE m.member = current_user::regrole"
        ).fetchone()
    assert groups == (["minds_reader"],)

"""`minds db` against a real Postgres, run as a user would run it."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

pytestmark = pytest.mark.integration


def minds(*args: str, url: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "MINDS_DATABASE_OWNER_URL"}
    return subprocess.run(
        [sys.executable, "-m", "minds.cli.main", *args],
        env={**env, "MINDS_DATABASE_URL": url},
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def test_status_upgrade_status(database_url: str) -> None:
    before = minds("db", "status", url=database_url)
    assert before.returncode == 1
    assert "minds db upgrade" in before.stdout
    up = minds("db", "upgrade", url=database_url)
    assert up.returncode == 0, up.stderr
    # No owner URL: it migrates as MINDS_DATABASE_URL, and says what that means.
    assert "MINDS_DATABASE_OWNER_URL is not set" in up.stderr
    assert "the controller refuses to run as that role" in up.stderr
    after = minds("db", "status", url=database_url)
    assert after.returncode == 0, after.stdout
    # The password never reaches the terminal.
    assert "***" in after.stdout or "@" not in after.stdout


def test_no_database_is_a_clear_error() -> None:
    env = {k: v for k, v in os.environ.items() if k != "MINDS_DATABASE_URL"}
    proc = subprocess.run(
        [sys.executable, "-m", "minds.cli.main", "db", "upgrade"],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert proc.returncode == 2
    assert "MINDS_DATABASE_URL" in proc.stderr

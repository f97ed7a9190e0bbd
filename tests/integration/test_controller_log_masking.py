"""`minds controller run` masks every log record from the moment kopf runs.

The command runs for real against a migrated ledger (its schema check passes); only
`kopf.run`, the event loop that would watch the cluster, is replaced by a function that logs
the way kopf and our handlers do. What reaches the command's stderr must be masked.
"""

from __future__ import annotations

import logging

import kopf
import pytest
from typer.testing import CliRunner

from minds.cli.main import app
from tests.fixtures.logs import keep_logging_as_it_is

pytestmark = pytest.mark.integration


def test_the_controller_masks_its_log_records(
    migrated_database_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    keep_logging_as_it_is(monkeypatch)

    def run_logging_secrets(**_: object) -> None:
        logging.getLogger("kopf.objects").warning(
            "Handler 'plan_admit' failed: connect postgres://app:hunter2@db:5432/app refused"
        )
        logging.getLogger("minds.controller").info("asked %s", "alice@example.com")

    monkeypatch.setattr(kopf, "run", run_logging_secrets)
    result = CliRunner().invoke(
        app, ["controller", "run"], env={"MINDS_DATABASE_URL": migrated_database_url}
    )

    assert result.exit_code == 0, result.output
    assert "hunter2" not in result.output
    assert "alice@example.com" not in result.output
    assert "postgres://app:[secret]@db:5432/app refused" in result.output
    assert "asked [email]" in result.output

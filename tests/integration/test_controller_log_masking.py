"""`minds controller run` masks every log record from the moment kopf runs.

The command runs for real against a migrated ledger (its schema check passes); only
`kopf.run`, the event loop that would watch the cluster, is replaced by a function that logs
the way kopf and our handlers do. What reaches the command's stderr must be masked.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator

import kopf
import pytest
from typer.testing import CliRunner

from minds.cli.main import app

pytestmark = pytest.mark.integration


@pytest.fixture
def restored_logging() -> Iterator[None]:
    """The command configures the process's logging; later tests get it back as it was."""
    root = logging.getLogger()
    handlers, level = list(root.handlers), root.level
    yield
    root.handlers[:] = handlers
    root.setLevel(level)


def test_the_controller_masks_its_log_records(
    migrated_database_url: str, monkeypatch: pytest.MonkeyPatch, restored_logging: None
) -> None:
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

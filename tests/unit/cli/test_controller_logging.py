"""The controller's log says what matters (kopf's per-object successes only when asked), as
text for people or as one JSON object a line, masked either way."""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import kopf
import pytest
import typer
from typer.testing import CliRunner

from minds.adapters.log_format import (
    LOG_FORMAT_ENV,
    JsonFormatter,
    LogFormat,
    LogFormatError,
    configure_logging,
    parse_log_format,
)
from minds.adapters.log_masking import install_log_masking
from minds.cli import controller_cmd
from minds.cli.controller_cmd import CHATTY, set_log_levels
from minds.cli.main import app
from tests.fixtures.logs import keep_logging_as_it_is


@pytest.fixture(autouse=True)
def _restore_levels() -> Iterator[None]:
    before = {name: logging.getLogger(name).level for name in [*CHATTY, "kopf"]}
    yield
    for name, level in before.items():
        logging.getLogger(name).setLevel(level)


def test_a_handled_event_is_no_line_but_a_failure_is() -> None:
    set_log_levels(verbose=False)
    objects = logging.getLogger("kopf.objects")
    assert not objects.isEnabledFor(logging.INFO)  # "Handler 'plan_admit' succeeded."
    assert objects.isEnabledFor(logging.WARNING)
    assert objects.isEnabledFor(logging.ERROR)  # what the reconcile-error counter counts


def test_verbose_lets_every_line_through() -> None:
    set_log_levels(verbose=True)
    logging.getLogger("kopf").setLevel(logging.DEBUG)
    assert logging.getLogger("kopf.objects").isEnabledFor(logging.DEBUG)
    assert not logging.getLogger("kubernetes").isEnabledFor(logging.INFO)


# -- the format ---------------------------------------------------------------------------------


@pytest.fixture
def configured(monkeypatch: pytest.MonkeyPatch) -> Callable[[LogFormat], None]:
    """Configure logging as ``minds controller run`` does, and put it back afterwards."""
    keep_logging_as_it_is(monkeypatch)
    monkeypatch.setattr(logging.getLogger("tests.logs"), "level", logging.NOTSET)

    def configure(log_format: LogFormat) -> None:
        configure_logging(log_format, verbose=False)
        install_log_masking()

    return configure


def _lines(err: str) -> list[dict[str, Any]]:
    """Each line of the log as the JSON object it must be."""
    return [json.loads(line) for line in err.splitlines()]


def test_a_json_line_is_one_object_with_time_level_logger_and_message(
    configured: Callable[[LogFormat], None], capsys: pytest.CaptureFixture[str]
) -> None:
    configured(LogFormat.JSON)
    logging.getLogger("tests.logs").warning("plan %s waits\non a person", "restart-atlas")
    [line] = _lines(capsys.readouterr().err)
    assert set(line) == {"timestamp", "level", "logger", "message"}
    assert line["level"] == "warning"
    assert line["logger"] == "tests.logs"
    assert line["message"] == "plan restart-atlas waits\non a person"
    when = datetime.fromisoformat(line["timestamp"].replace("Z", "+00:00"))
    assert when.utcoffset() == timedelta(0)
    assert abs(datetime.now(UTC) - when) < timedelta(minutes=1)


def test_a_secret_in_a_json_line_is_masked_in_the_message_and_the_traceback(
    configured: Callable[[LogFormat], None], capsys: pytest.CaptureFixture[str]
) -> None:
    configured(LogFormat.JSON)
    logger = logging.getLogger("tests.logs")
    logger.error("login %s with password=%s", "alice@example.com", "hunter2")
    try:
        raise ConnectionError("could not reach postgres://app:pa55word@db:5432/app")
    except ConnectionError:
        logger.exception("ledger down")
    err = capsys.readouterr().err
    assert "hunter2" not in err
    assert "alice@example.com" not in err
    assert "pa55word" not in err
    first, second = _lines(err)
    assert first["message"] == "login [email] with password=[secret]"
    assert second["message"] == "ledger down"
    assert "postgres://app:[secret]@db:5432/app" in second["exception"]
    assert second["exception"].startswith("Traceback")


def test_without_the_masking_the_json_line_would_show_the_secret() -> None:
    """The test above sees the masking's work: the formatter alone masks nothing."""
    record = logging.LogRecord(
        "tests.logs", logging.ERROR, __file__, 1, "password=%s", ("hunter2",), None
    )
    assert json.loads(JsonFormatter().format(record))["message"] == "password=hunter2"


def test_a_line_kopf_logs_about_an_object_names_it(
    configured: Callable[[LogFormat], None], capsys: pytest.CaptureFixture[str]
) -> None:
    configured(LogFormat.JSON)
    body = kopf.Body(
        {
            "apiVersion": "minds.dev/v1alpha1",
            "kind": "Mind",
            "metadata": {"namespace": "shop", "name": "keeper", "uid": "u-1"},
        }
    )
    logger = kopf.LocalObjectLogger(body=body, settings=kopf.OperatorSettings())
    logger.error("Handler 'mind_delete' failed with an exception. Will retry.")
    [line] = _lines(capsys.readouterr().err)
    assert line["object"] == {"kind": "Mind", "namespace": "shop", "name": "keeper"}
    assert line["logger"] == "kopf.objects"


def test_fields_a_record_carries_besides_are_not_written(
    configured: Callable[[LogFormat], None], capsys: pytest.CaptureFixture[str]
) -> None:
    """Only the message and the traceback pass through the masking: anything else a record
    carries could reach the log unmasked, so nothing else is written."""
    configured(LogFormat.JSON)
    logging.getLogger("tests.logs").warning("hello", extra={"token": "hunter2"})
    err = capsys.readouterr().err
    assert "hunter2" not in err
    assert set(_lines(err)[0]) == {"timestamp", "level", "logger", "message"}


def test_text_stays_the_default_and_writes_lines_for_people(
    configured: Callable[[LogFormat], None], capsys: pytest.CaptureFixture[str]
) -> None:
    command = typer.main.get_command(controller_cmd.app)
    [option] = [param for param in command.params if param.name == "log_format"]
    assert isinstance(option.default, str)
    configured(parse_log_format(option.default))
    logging.getLogger("tests.logs").warning("password=%s", "hunter2")
    assert capsys.readouterr().err == "password=[secret]\n"


@pytest.mark.parametrize(
    ("args", "env", "named"),
    [
        (["--log-format", "xml"], {}, "'xml'"),
        ([], {LOG_FORMAT_ENV: "yaml"}, "'yaml'"),
    ],
)
def test_an_unknown_log_format_is_refused_naming_the_option(
    args: list[str], env: dict[str, str], named: str
) -> None:
    result = CliRunner().invoke(app, ["controller", "run", *args], env=env)
    assert result.exit_code == 2
    assert "--log-format" in result.output
    assert LOG_FORMAT_ENV in result.output
    assert named in result.output
    assert "text or json" in result.output


def test_the_format_is_read_case_blind_and_trimmed() -> None:
    assert parse_log_format(" JSON ") is LogFormat.JSON
    with pytest.raises(LogFormatError):
        parse_log_format("")

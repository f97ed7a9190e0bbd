"""The log filter: what the controller (and kopf) log is masked before any handler writes it."""

from __future__ import annotations

import io
import logging
from collections.abc import Iterator

import kopf
import pytest

from minds.adapters.log_masking import MaskingFilter, install_log_masking
from tests.fixtures.logs import keep_logging_as_it_is

SECRET_LINE = "login alice@example.com with password=%s from %s"


@pytest.fixture
def captured() -> Iterator[tuple[logging.Logger, io.StringIO]]:
    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    handler.setFormatter(logging.Formatter("%(levelname)s %(message)s"))
    logger = logging.getLogger("tests.masking.captured")
    logger.addHandler(handler)
    logger.propagate = False
    logger.setLevel(logging.DEBUG)
    yield logger, stream
    logger.removeHandler(handler)


def test_a_record_is_masked_with_its_arguments(
    captured: tuple[logging.Logger, io.StringIO],
) -> None:
    logger, stream = captured
    install_log_masking()
    logger.info(SECRET_LINE, "hunter2", "81.2.69.160")
    assert stream.getvalue() == "INFO login [email] with password=[secret] from [ip]\n"


def test_a_traceback_is_masked(captured: tuple[logging.Logger, io.StringIO]) -> None:
    logger, stream = captured
    install_log_masking()
    try:
        raise ConnectionError("could not reach postgres://app:pa55word@db:5432/app")
    except ConnectionError:
        logger.exception("ledger down")
    output = stream.getvalue()
    assert "pa55word" not in output
    assert "postgres://app:[secret]@db:5432/app" in output
    assert "Traceback" in output


def test_without_the_filter_the_secret_would_show(
    captured: tuple[logging.Logger, io.StringIO],
) -> None:
    # The fixture's handler gets the filter only from `install_log_masking`: proof that the
    # tests above see the filter's work, not some other masking.
    logger, stream = captured
    logger.info(SECRET_LINE, "hunter2", "81.2.69.160")
    assert "hunter2" in stream.getvalue()


def test_a_record_whose_arguments_do_not_fit_is_kept_and_masked() -> None:
    record = logging.LogRecord(
        "x", logging.INFO, __file__, 1, "token %d", ("abc@example.com",), None
    )
    assert MaskingFilter().filter(record) is True
    assert record.getMessage() == "token %d ('[email]',)"


def test_installed_after_kopf_configures_logging_it_covers_kopfs_handlers(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    keep_logging_as_it_is(monkeypatch)
    kopf.configure(verbose=True, log_format=kopf.LogFormat.PLAIN)
    install_log_masking()
    install_log_masking()  # twice adds nothing
    root_handlers = logging.getLogger().handlers
    poster = [
        h for h in logging.getLogger("kopf.objects").handlers if type(h).__name__ == "K8sPoster"
    ]
    assert poster, "kopf posts Events through a handler on kopf.objects"
    for handler in [*root_handlers, *poster]:
        assert sum(isinstance(f, MaskingFilter) for f in handler.filters) == 1
    logging.getLogger("kopf.activities").warning("token=%s for %s", "abc123", "bob@example.org")
    assert "token=[secret] for [email]" in capsys.readouterr().err

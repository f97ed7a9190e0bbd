"""How the controller writes its log: text lines for a person, or one JSON object per line for
a log pipeline to index without parsing.

kopf configures the process's logging; a JSON log is kopf's handler with our formatter, so
everything kopf does with that handler (levels, the filters the masking puts on it) stays.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping
from datetime import UTC, datetime
from enum import StrEnum
from typing import Any, Final

#: The variable the controller reads its log format from; ``--log-format`` sets it too.
LOG_FORMAT_ENV: Final = "MINDS_LOG_FORMAT"


class LogFormat(StrEnum):
    TEXT = "text"
    JSON = "json"


class LogFormatError(ValueError):
    """Not a log format the controller writes."""


def parse_log_format(value: str) -> LogFormat:
    try:
        return LogFormat(value.strip().lower())
    except ValueError:
        known = " or ".join(f.value for f in LogFormat)
        raise LogFormatError(f"{value!r} is not a log format: expected {known}") from None


#: What kopf's object logger says of the object a line is about.
_OBJECT_FIELDS: Final = ("kind", "namespace", "name")


class JsonFormatter(logging.Formatter):
    """One JSON object a line: ``timestamp`` (RFC 3339, UTC), ``level``, ``logger``,
    ``message``, and ``object`` (its kind, namespace and name) when kopf logged it about one;
    ``exception`` when the record carries a traceback.

    Nothing else of a record is written, on purpose: the masking filter masks the message and
    the traceback, and an ``extra`` field written as it came would reach the log unmasked."""

    def format(self, record: logging.LogRecord) -> str:
        line: dict[str, Any] = {
            "timestamp": _rfc3339(record.created),
            "level": record.levelname.lower(),
            "logger": record.name,
            "message": record.getMessage(),
        }
        ref = getattr(record, "k8s_ref", None)
        if isinstance(ref, Mapping):
            found = {key: ref[key] for key in _OBJECT_FIELDS if ref.get(key)}
            if found:
                line["object"] = found
        # The masking filter leaves a masked ``exc_text`` and no ``exc_info``; a handler
        # without it still gets its traceback.
        if record.exc_info and not record.exc_text:
            record.exc_text = self.formatException(record.exc_info)
        if record.exc_text:
            line["exception"] = record.exc_text
        if record.stack_info:
            line["stack"] = record.stack_info
        return json.dumps(line, ensure_ascii=False, default=str)


def _rfc3339(created: float) -> str:
    moment = datetime.fromtimestamp(created, UTC).isoformat(timespec="milliseconds")
    return moment.replace("+00:00", "Z")


def configure_logging(log_format: LogFormat, *, verbose: bool) -> None:
    """kopf's logging configuration, with its handler writing ``log_format``."""
    # Here, not at the top: the command line parses --log-format without loading kopf.
    import kopf

    root = logging.getLogger()
    before = set(root.handlers)
    kopf.configure(verbose=verbose, log_format=kopf.LogFormat.PLAIN)
    if log_format is LogFormat.JSON:
        # Only the handler kopf just added: others (a test's capture) keep their own format.
        for handler in root.handlers:
            if handler not in before:
                handler.setFormatter(JsonFormatter())

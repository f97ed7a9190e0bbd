"""Masking of the controller's own log records, kopf's included, before any handler writes them.

The filter sits on handlers, not loggers: a logger's filter sees only records logged to that
very logger, a handler's sees every record that reaches it, from any logger below. kopf's
`K8sPoster` is such a handler too, so what kopf turns into a Kubernetes Event is masked as well.

A record's message is rendered (`msg % args`), masked, and stored back with no args left; an
exception's traceback is rendered and masked the same way, since exception messages carry
URLs, connection strings and values as often as log messages do.
"""

from __future__ import annotations

import logging
from typing import Final

from minds.domain.masking import mask_text

_TRACEBACKS: Final = logging.Formatter()


class MaskingFilter(logging.Filter):
    """Masks a record's message, traceback and stack in place; never drops a record."""

    def filter(self, record: logging.LogRecord) -> bool:
        try:
            message = record.getMessage()
        except (TypeError, ValueError):
            # Arguments that do not fit the format: show both, masked, rather than fail.
            message = f"{record.msg} {record.args}"
        record.msg, record.args = mask_text(message)[0], None
        if record.exc_info and not record.exc_text:
            record.exc_text = _TRACEBACKS.formatException(record.exc_info)
        if record.exc_text:
            record.exc_text = mask_text(record.exc_text)[0]
            # Formatters render exc_info afresh when it is set; the masked text is all there is.
            record.exc_info = None
        if record.stack_info:
            record.stack_info = mask_text(record.stack_info)[0]
        return True


def install_log_masking() -> MaskingFilter:
    """Put one `MaskingFilter` on every handler configured so far (the root's and every
    logger's); call it once logging is configured. Installing twice adds nothing."""
    masking = MaskingFilter()
    loggers = [logging.getLogger(), *logging.Logger.manager.loggerDict.values()]
    for logger in loggers:
        for handler in getattr(logger, "handlers", ()):
            if not any(isinstance(existing, MaskingFilter) for existing in handler.filters):
                handler.addFilter(masking)
    return masking

"""The controller's log says what matters: kopf's per-object successes only when asked."""

from __future__ import annotations

import logging
from collections.abc import Iterator

import pytest

from minds.cli.controller_cmd import CHATTY, set_log_levels


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

"""Prints what the masking corpus measured at the end of the run, where a reviewer sees it."""

from __future__ import annotations

import pytest

CORPUS_RESULTS = pytest.StashKey[list[str]]()


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    lines = terminalreporter.config.stash.get(CORPUS_RESULTS, [])
    if lines:
        terminalreporter.section("masking corpus")
        for line in lines:
            terminalreporter.write_line(line)

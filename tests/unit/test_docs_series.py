"""What docs/ledger.md and docs/volition.md say of routine as series is what the code does: the
cut's period, the tables, and the lines `timeline` and `why` print, from the real engine over
the fakes (a day of atlas-worker running; an hour and a half, then degraded). The day's row
counts are measured on the real ledger by tests/integration/test_series.py."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta

from minds.adapters.ledger.schema import APPEND_ONLY_TABLES, MUTABLE_TABLES
from minds.cli.why_cmd import timeline_line, why_line
from minds.devenv.install import repo_root
from minds.domain.series import CUT_EVERY
from tests.fixtures.docs import sections
from tests.unit.engine.routine import broken_once, keeper, run, timeline, why_the_restart

LEDGER = repo_root() / "docs" / "ledger.md"
VOLITION = repo_root() / "docs" / "volition.md"
START = datetime(2026, 12, 8, 9, 0, tzinfo=UTC)
_TEXT = re.compile(r"^```text\n(.*?)^```", re.MULTILINE | re.DOTALL)


def text_blocks(text: str) -> list[str]:
    return _TEXT.findall(text)


def test_the_cut_and_the_days_arithmetic_are_the_codes() -> None:
    section = " ".join(sections(LEDGER)["Routine is a series"].split())
    assert timedelta(hours=4) == CUT_EVERY
    assert "one `series_cut` row every four hours" in section
    assert "so 12 cut rows a day" in section  # two series, a cut every four hours
    assert "| before series, eight rows a cycle | 11,520 |" in section
    assert 8 * 24 * 60 == 11_520


def test_the_tables_each_role_gets_are_the_codes() -> None:
    roles = sections(LEDGER)["The three roles"]
    current = re.search(r"current-state tables \(([^)]*)\)", roles)
    assert current is not None
    assert re.findall(r"`(\w+)`", current.group(1)) == list(MUTABLE_TABLES)
    intro = LEDGER.read_text().split("## The three roles")[0]
    listed = re.search(r"The append-only\ntables \(([^)]*)\)", intro)
    assert listed is not None
    assert sorted(re.findall(r"`(\w+)`", listed.group(1))) == sorted(APPEND_ONLY_TABLES)


def test_the_timeline_line_of_a_day_is_what_the_cli_prints() -> None:
    world = keeper(start=START)
    run(world, 24 * 60)
    [looks] = [i for i in timeline(world) if i["what"] == "observation_series"]
    [documented] = text_blocks(sections(LEDGER)["Routine is a series"])
    assert documented.strip() == timeline_line(looks)


def test_the_why_lines_of_a_changed_look_are_what_the_cli_prints() -> None:
    world = keeper(start=START)
    broken_once(world, 90, 10)
    links = why_the_restart(world)
    printed = [why_line(depth, link) for depth, link in enumerate(links)]
    documented = [b for b in text_blocks(VOLITION.read_text()) if "Observation" in b]
    [block] = documented
    lines = block.strip("\n").splitlines()
    start = printed.index(lines[0])
    assert printed[start : start + len(lines)] == lines

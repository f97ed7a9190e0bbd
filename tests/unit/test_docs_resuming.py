"""docs/volition.md's "Waiting and resuming" is the code's: its table is the domain's table of
what resumes each waiting reason, and its names and numbers are the code's."""

from __future__ import annotations

import re
from datetime import timedelta

from minds.devenv.install import repo_root
from minds.domain.story import Reason
from minds.domain.volition.lapse import LAPSE_AFTER
from minds.domain.volition.reconsideration import MAX_REPLANS
from minds.domain.volition.resumption import BY_RULE, RESUMED_BY
from minds.engine.executing.reconsidering import RESUMED

VOLITION = (repo_root() / "docs" / "volition.md").read_text()
EXECUTION = (repo_root() / "docs" / "execution.md").read_text()
SECTION = VOLITION.split("## Waiting and resuming", 1)[1].split("\n## ", 1)[0]
ROWS = dict(re.findall(r"^\| `(\w+)` \([^|]*\) \| ([^|]+) \|$", SECTION, re.MULTILINE))


def flat(text: str) -> str:
    return " ".join(text.split())


def test_the_table_is_the_domains_table() -> None:
    assert {waiting.value: resumer.value for waiting, resumer in RESUMED_BY.items()} == ROWS


def test_the_rules_that_resume_by_themselves_are_named_with_their_triggers() -> None:
    said = flat(SECTION)
    assert "trigger `budget` or `capability_change`" in said
    assert {t.value for t in BY_RULE.values()} == {"budget", "capability_change"}
    assert f"`{RESUMED}`" in SECTION
    assert f"`{Reason.RESUMED.value}`" in SECTION
    assert f"`{Reason.RESUMED.value}` Event" in flat(EXECUTION)


def test_the_numbers_are_the_codes() -> None:
    text = flat(SECTION)
    assert f"the limit of {MAX_REPLANS} replans" in text
    assert f"an intention resumes {MAX_REPLANS} times" in text
    assert "lapse after a day" in text
    assert timedelta(days=1) == LAPSE_AFTER


def test_the_docs_raise_the_budget_with_the_same_command() -> None:
    command = 'kubectl patch mind <mind> --type=merge -p \'{"spec":{"budget":{"checks":50}}}\''
    assert command in SECTION
    assert command in EXECUTION

"""docs/reading.md says what the code does: its tables are the code's tables, and its commands
are the ones tests/e2e/test_reading_a_mind.py runs as written."""

from __future__ import annotations

import re

from minds.devenv.install import repo_root
from minds.domain.attention import AttentionReason
from minds.domain.mind_rules import ReadyReason
from minds.domain.story import STORY, Teller, told
from tests.fixtures.docs import sections, sh_commands
from tests.unit.test_story import row

DOC = repo_root() / "docs" / "reading.md"
_ROW = re.compile(r"^\| `(\w+)` \| `(\w+)` \| (\w+) \| (\w+) \|$", re.MULTILINE)
_REASON = re.compile(r"^\| `(\w+)` \| ", re.MULTILINE)


def test_the_mind_story_table_is_the_codes() -> None:
    documented = _ROW.findall(sections(DOC)["What happened: the Events of a Mind and of its Plans"])
    assert [kind for kind, _, _, _ in documented] == list(STORY)
    for kind, reason, type_, on in documented:
        story = told(row(kind))
        assert story is not None
        teller = "Mind" if story.on is Teller.MIND else "Plan"
        assert (story.reason.value, story.type_, teller) == (reason, type_, on)


def test_the_ready_reasons_are_the_codes() -> None:
    text = sections(DOC)["Is it working: `Ready` and `Degraded`"]
    documented = set(_REASON.findall(text))
    assert documented == {"InvalidSpec", "LedgerUnavailable", "CycleStalled"}
    assert documented < {r.value for r in ReadyReason}


def test_the_attention_table_is_the_codes() -> None:
    text = sections(DOC)["What needs a person: `NeedsAttention`"]
    assert _REASON.findall(text) == [r.value for r in AttentionReason]


def test_the_docs_commands_are_the_ones_the_story_runs() -> None:
    from tests.e2e.test_reading_a_mind import DOC_COMMANDS

    assert tuple(sh_commands(DOC)) == DOC_COMMANDS

"""docs/reading.md says what the code does: its tables are the code's tables, and its commands
are the ones tests/e2e/test_reading_a_mind.py runs as written."""

from __future__ import annotations

import re

from minds.devenv.install import repo_root
from minds.domain.attention import AttentionReason
from minds.domain.story import MIND_STORY, told
from tests.fixtures.docs import sections, sh_commands
from tests.unit.test_story import row

DOC = repo_root() / "docs" / "reading.md"
_ROW = re.compile(r"^\| `(\w+)` \| `(\w+)` \| (\w+) \|$", re.MULTILINE)
_REASON = re.compile(r"^\| `(\w+)` \| ", re.MULTILINE)


def test_the_mind_story_table_is_the_codes() -> None:
    documented = _ROW.findall(sections(DOC)["What the mind did: the Mind's Events"])
    assert [kind for kind, _, _ in documented] == list(MIND_STORY)
    for kind, reason, type_ in documented:
        story = told(row(kind))
        assert story is not None
        assert (story.reason.value, story.type_) == (reason, type_)


def test_the_attention_table_is_the_codes() -> None:
    text = sections(DOC)["What needs a person: `NeedsAttention`"]
    assert _REASON.findall(text) == [r.value for r in AttentionReason]


def test_the_docs_commands_are_the_ones_the_story_runs() -> None:
    from tests.e2e.test_reading_a_mind import DOC_COMMANDS

    assert tuple(sh_commands(DOC)) == DOC_COMMANDS

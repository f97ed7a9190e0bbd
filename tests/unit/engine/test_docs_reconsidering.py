"""docs/execution.md's table of triggers is the executor's: every trigger it raises, and the
verdict the domain gives each."""

from __future__ import annotations

import re

import pytest

from minds.devenv.install import repo_root
from minds.domain.execution.covering import COVERED_FOR, HELD_OFF_FOR
from minds.domain.intentions import IntentionStatus
from minds.domain.volition.reconsideration import ReconsiderationContext, Trigger, reconsider
from minds.engine.executing.reconsidering import RAISED as BY_PLANS
from minds.engine.executing.reviewing import REVIEWED_ON_BELIEFS
from tests.unit.volition.builders import T0, an_intention

DOC = (repo_root() / "docs" / "execution.md").read_text()
ROWS = dict(re.findall(r"^\| [^|]+ \| `(\w+)` \| ([^|]+) \|$", DOC, re.MULTILINE))

#: How the doc says each verdict, first words of its last column.
SAID = {
    "replan": "a new revision",
    "block": "the intention is `blocked`",
    "suspend": "the intention is `suspended`",
    "fulfil": "the intention is fulfilled",
}

RAISED = BY_PLANS | REVIEWED_ON_BELIEFS

#: What a trigger's row assumes, where the default context would judge nothing.
CONTEXTS = {Trigger.WEAKENED_BELIEF: {"belief_confidence": 0.1}}


def test_the_table_names_every_trigger_the_executor_raises_and_no_other() -> None:
    assert {Trigger(t) for t in ROWS} == RAISED


@pytest.mark.parametrize("trigger", sorted(RAISED))
def test_the_doc_says_the_domains_verdict(trigger: Trigger) -> None:
    verdict = reconsider(
        an_intention(status=IntentionStatus.ACTIVE),
        trigger,
        ReconsiderationContext.model_validate({"now": T0, **CONTEXTS.get(trigger, {})}),
    ).verdict
    assert ROWS[trigger.value].startswith(SAID[verdict.value])


def test_the_docs_numbers_for_one_writer_per_target_are_the_codes() -> None:
    text = " ".join(DOC.split())
    assert COVERED_FOR.total_seconds() == 600
    assert "less than 10 minutes ago" in text
    assert HELD_OFF_FOR.total_seconds() == 5
    assert "waits 5 seconds and tries again" in text

"""docs/volition.md states the rules' numbers; hold them to the code."""

from __future__ import annotations

from datetime import timedelta

import pytest
import yaml

from minds.devenv.install import repo_root
from minds.domain.resources.mind import Commitment
from minds.domain.volition import commitments as commitment_rules
from minds.domain.volition import (
    conflicts,
    findings,
    formation,
    lapse,
    reconsideration,
    settlement,
    wants,
)

DOC = (repo_root() / "docs" / "volition.md").read_text()


@pytest.mark.parametrize(
    ("text", "value", "expected"),
    [
        (
            "| a candidate weaker than this is not stored (the rejection is recorded) | 0.35 |",
            wants.STORE_THRESHOLD,
            0.35,
        ),
        ("| strength halves every | 6 hours |", wants.HALF_LIFE, timedelta(hours=6)),
        ("| a want weaker than this has faded and expires | 0.1 |", wants.FADED_BELOW, 0.1),
        (
            "| at most this many active wants per mind; the weakest beyond expire | 32 |",
            wants.MAX_ACTIVE_WANTS,
            32,
        ),
        ("reinforces by (up to a ceiling of +0.2) | 0.1 |", wants.REINFORCEMENT_STEP, 0.1),
        ("(up to a ceiling of +0.2)", wants.REINFORCEMENT_CEILING, 0.2),
        ("stays suppressed for | 1 hour |", wants.SUPPRESSION_PERIOD, timedelta(hours=1)),
        ("has been so for 30 minutes", wants.GOAL_STALLED_AFTER, timedelta(minutes=30)),
        ("urgency scales\nstrength (weight 0.5)", conflicts.URGENCY_WEIGHT, 0.5),
        ("a goal adds priority (0.3)", conflicts.GOAL_WEIGHT, 0.3),
        ("a commitment adds normative weight (0.3)", conflicts.NORMATIVE_WEIGHT, 0.3),
        ("clearly stronger (by 0.25 or more)", conflicts.CLEAR_MARGIN, 0.25),
        ("score at least 0.5", formation.FORMATION_THRESHOLD, 0.5),
        ("fewer than 3 open intentions", formation.DEFAULT_CAPACITY, 3),
        ("after 3 replans an intention is abandoned", reconsideration.MAX_REPLANS, 3),
        (
            "| a failed strategy is not tried again on the same subject for | 24 hours |",
            settlement.FAILURE_MEMORY,
            timedelta(hours=24),
        ),
        (
            "| a blocked or suspended intention lapses after | 24 hours |",
            lapse.LAPSE_AFTER,
            timedelta(hours=24),
        ),
        (
            "the strategies that failed are remembered\n  for the subject for 24 hours",
            settlement.FAILURE_MEMORY,
            timedelta(hours=24),
        ),
        ("One that has waited 24 hours", lapse.LAPSE_AFTER, timedelta(hours=24)),
        ("suppressed for an hour", wants.SUPPRESSION_PERIOD, timedelta(hours=1)),
        ("multiplied by\n1 - 0.25 x the value's weight", wants.VALUE_GAIN, 0.25),
        (
            "overdue 15 minutes after its due time",
            commitment_rules.OVERDUE_GRACE,
            timedelta(minutes=15),
        ),
    ],
)
def test_the_numbers_in_the_doc_are_the_codes(text: str, value: object, expected: object) -> None:
    assert " ".join(text.split()) in " ".join(DOC.split())
    assert value == expected


def test_the_doc_disclaims_any_claim_of_consciousness() -> None:
    assert "No\nmeasure here establishes" in DOC or "No measure here establishes" in DOC
    assert "consciousness, sentience" in " ".join(DOC.split())


@pytest.mark.parametrize("reason", [r.value for r in formation.NotFormed])
def test_every_formation_reason_is_documented(reason: str) -> None:
    assert f"`{reason}`" in DOC


def test_the_doc_names_what_findings_leave_behind() -> None:
    for name in (findings.FINDINGS, findings.RECORDED, findings.TAKEN_IN, "findingsTakenIn"):
        assert f"`{name}`" in DOC


def test_the_recurring_commitment_in_the_doc_is_valid_and_keeps_its_schedule() -> None:
    block = "commitments:\n" + DOC.split("```yaml\ncommitments:\n", 1)[1].split("```", 1)[0]
    commitment = Commitment.model_validate(yaml.safe_load(block)["commitments"][0])
    assert commitment.due is not None
    assert commitment.every_seconds == 86400
    # "every night at 02:00 UTC": three nights and five hours on, it is due since 02:00.
    night = commitment.due + timedelta(days=3, hours=5)
    assert commitment.due.hour == 2
    assert commitment_rules.due_at(commitment, night) == commitment.due + timedelta(days=3)
    every = Commitment.model_json_schema(by_alias=True)["properties"]["everySeconds"]["anyOf"][0]
    assert f"`everySeconds` ({every['minimum']} to {every['maximum']} seconds" in DOC

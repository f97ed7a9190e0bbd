"""Event reasons in one CamelCase style, and which ledger rows the Mind's Events tell."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from minds.domain.ledger import EventRecord, SubjectRef
from minds.domain.story import CAMEL_CASE, STORY, Reason, Teller, is_reason, told
from tests.fakes.resources import FakeEvents

NOW = datetime(2026, 12, 4, 12, 0, tzinfo=UTC)


def row(type_: str, **payload: object) -> EventRecord:
    return EventRecord(
        mind="keeper",
        namespace="shop",
        type=type_,
        subject=SubjectRef(kind="Plan", name="heal-r1", uid="u1"),
        payload=payload,  # type: ignore[arg-type]
        occurred_at=NOW,
        idempotency_key=f"k-{type_}",
    )


@pytest.mark.parametrize("reason", list(Reason))
def test_every_reason_is_camel_case(reason: Reason) -> None:
    assert CAMEL_CASE.fullmatch(reason.value), reason


@pytest.mark.parametrize("text", ["step_failed", "stepFailed", "Step Failed", "NoSuchReason", ""])
def test_what_is_not_a_camel_case_member_of_the_table_is_no_reason(text: str) -> None:
    assert not is_reason(text)


def test_the_fake_event_port_refuses_a_reason_outside_the_table() -> None:
    """Every engine test over the fakes posts through it: a snake_case reason fails them."""
    events = FakeEvents()
    with pytest.raises(AssertionError, match="step_failed"):
        events.post({"metadata": {"name": "p"}}, type_="Warning", reason="step_failed", message="")
    events.post({"metadata": {"name": "p"}}, type_="Warning", reason="StepFailed", message="")
    assert events.reasons() == ["StepFailed"]


def test_every_row_the_mind_tells_has_a_reason_and_a_short_message() -> None:
    for type_ in STORY:
        story = told(row(type_, step="P1", reason="why", note="look", to="heal-r2"))
        assert story is not None
        assert is_reason(story.reason)
        assert story.type_ in ("Normal", "Warning")
        assert 0 < len(story.message) <= 400


@pytest.mark.parametrize(
    "type_",
    [
        "cycle_completed",
        "plan_step_started",
        "plan_step_completed",
        "tool_executed",
        "want_derived",
    ],
)
def test_checks_steps_and_cycles_stay_in_the_ledger(type_: str) -> None:
    assert told(row(type_)) is None


def test_the_story_names_what_happened() -> None:
    failed = told(row("plan_failed", reason="V1: expectation failed"))
    assert failed is not None
    assert (failed.type_, failed.reason) == ("Warning", Reason.PLAN_FAILED)
    assert failed.message == "plan heal-r1 failed: V1: expectation failed"
    escalated = told(row("operator_notified", step="N1", note="restart did not heal"))
    assert escalated is not None
    assert escalated.message == "plan heal-r1 step N1 needs a person: restart did not heal"
    replanned = told(row("plan_replanned", to="heal-r2"))
    assert replanned is not None
    assert replanned.message == "plan heal-r1 replanned as heal-r2"
    planned = told(row("plan_validated", origin="mind", strategy="direct"))
    assert planned is not None
    assert planned.message == "the mind's plan (direct) is valid and will run"
    assert planned.on is Teller.SUBJECT  # told on the Plan: kubectl describe plan
    completed = told(row("plan_completed", progress="2/2"))
    assert completed is not None
    assert (completed.reason, completed.message) == (Reason.COMPLETED, "completed (2/2 steps)")
    assert completed.on is Teller.SUBJECT

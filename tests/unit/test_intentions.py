"""Intention rules: the transition table, replays, field updates, deterministic ids."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import given
from hypothesis import strategies as st
from pydantic import ValidationError

from minds.domain.intentions import (
    ALLOWED_TRANSITIONS,
    FINAL_STATUSES,
    LIVE_STATUSES,
    IntentionKind,
    IntentionRecord,
    IntentionStatus,
    can_transition,
    intention_event_key,
    intention_event_type,
    intention_id,
    transitioned,
    updated,
)

T0 = datetime(2026, 12, 3, 9, 0, tzinfo=UTC)
LATER = T0 + timedelta(minutes=1)
S = IntentionStatus


def an_intention(**overrides: object) -> IntentionRecord:
    fields: dict[str, object] = {
        "id": "int-1",
        "namespace": "ops",
        "mind": "keeper",
        "objective": "restart atlas-worker",
        "kind": IntentionKind.ACTION,
        "created_at": T0,
        "updated_at": T0,
    }
    fields.update(overrides)
    return IntentionRecord.model_validate(fields)


# -- the transition table ------------------------------------------------------------------


def test_every_status_has_a_row() -> None:
    assert set(ALLOWED_TRANSITIONS) == set(IntentionStatus)


@pytest.mark.parametrize("final", sorted(FINAL_STATUSES))
@pytest.mark.parametrize("to", list(IntentionStatus))
def test_fulfilled_and_abandoned_are_final(final: IntentionStatus, to: IntentionStatus) -> None:
    assert not can_transition(final, to)
    assert final.final


@pytest.mark.parametrize(
    ("current", "to"),
    [
        (S.ACTIVE, S.BLOCKED),  # awaiting approval
        (S.BLOCKED, S.ACTIVE),  # approved and executed: the parent resumes
        (S.ACTIVE, S.SUSPENDED),  # budget exhausted
        (S.SUSPENDED, S.ACTIVE),  # released
        (S.ACTIVE, S.OUTCOME_UNVERIFIED),  # interrupted non-idempotent action
        (S.OUTCOME_UNVERIFIED, S.ACTIVE),  # a person verified and released it
        (S.OUTCOME_UNVERIFIED, S.FULFILLED),
        (S.BLOCKED, S.ABANDONED),  # denied, nothing else to try
        (S.ACTIVE, S.FULFILLED),
        (S.SUSPENDED, S.FULFILLED),  # the world changed while it was set aside
        (S.BLOCKED, S.BLOCKED),  # blocked on a different approval: a new reason
    ],
)
def test_live_transitions_the_executor_needs(current: IntentionStatus, to: IntentionStatus) -> None:
    assert can_transition(current, to)


@given(st.sampled_from(sorted(LIVE_STATUSES)), st.sampled_from(list(IntentionStatus)))
def test_a_live_intention_can_reach_any_status(
    current: IntentionStatus, to: IntentionStatus
) -> None:
    assert can_transition(current, to)


def test_live_and_final_partition_the_statuses() -> None:
    assert set(IntentionStatus) == LIVE_STATUSES | FINAL_STATUSES
    assert not LIVE_STATUSES & FINAL_STATUSES
    assert {S.FULFILLED, S.ABANDONED} == FINAL_STATUSES


def test_the_table_cannot_be_changed() -> None:
    with pytest.raises(TypeError):
        ALLOWED_TRANSITIONS[S.FULFILLED] = frozenset({S.ACTIVE})  # type: ignore[index]


# -- applying a transition -----------------------------------------------------------------


def test_a_transition_bumps_the_version_and_records_the_reason() -> None:
    before = an_intention()
    after = transitioned(before, S.BLOCKED, "awaiting approval restart-1", LATER)
    assert after is not None
    assert (after.status, after.reason, after.version, after.updated_at) == (
        S.BLOCKED,
        "awaiting approval restart-1",
        2,
        LATER,
    )
    assert after.created_at == T0


def test_the_same_status_and_reason_is_a_replay() -> None:
    blocked = an_intention(status=S.BLOCKED, reason="r", version=4)
    assert transitioned(blocked, S.BLOCKED, "r", LATER) is blocked


def test_the_same_status_with_a_new_reason_is_a_change() -> None:
    blocked = an_intention(status=S.BLOCKED, reason="approval a", version=4)
    after = transitioned(blocked, S.BLOCKED, "approval b", LATER)
    assert after is not None
    assert after.version == 5


def test_a_refused_transition_gives_none() -> None:
    assert transitioned(an_intention(status=S.FULFILLED), S.ACTIVE, None, LATER) is None


def test_a_final_intention_replayed_into_its_own_status_is_a_replay() -> None:
    done = an_intention(status=S.FULFILLED, reason="verified", version=3)
    assert transitioned(done, S.FULFILLED, "verified", LATER) is done
    assert transitioned(done, S.FULFILLED, "something else", LATER) is None


# -- updating fields -----------------------------------------------------------------------


def test_update_changes_only_given_fields() -> None:
    before = an_intention(plan="p-1", replans=0)
    after = updated(before, replans=1, failed_strategies=["direct"], at=LATER)
    assert after.plan == "p-1"
    assert after.replans == 1
    assert after.failed_strategies == ["direct"]
    assert after.version == 2
    assert after.updated_at == LATER


def test_plan_can_be_cleared_with_none() -> None:
    after = updated(an_intention(plan="p-1"), plan=None, at=LATER)
    assert after.plan is None
    assert after.version == 2


def test_update_to_the_current_values_is_a_replay() -> None:
    before = an_intention(plan="p-2", replans=1, failed_strategies=["direct"], version=3)
    assert updated(before, plan="p-2", replans=1, failed_strategies=("direct",), at=LATER) is before
    assert updated(before, at=LATER) is before


def test_replans_cannot_be_negative() -> None:
    with pytest.raises(ValueError, match="negative"):
        updated(an_intention(), replans=-1, at=LATER)


# -- records, ids, event keys --------------------------------------------------------------


def test_record_defaults_and_validation() -> None:
    record = an_intention()
    assert record.status is S.ACTIVE
    assert record.version == 1
    assert record.replans == 0
    assert record.failed_strategies == []
    assert not record.requires_approval
    with pytest.raises(ValidationError):
        an_intention(version=0)
    with pytest.raises(ValidationError):
        an_intention(created_at=datetime(2026, 1, 1))  # naive: no clock is trusted without a zone
    with pytest.raises(ValidationError):
        an_intention(kind="wish")


def test_ids_and_event_keys_are_deterministic() -> None:
    assert intention_id("plan-uid-1") == intention_id("plan-uid-1")
    assert intention_id("plan-uid-1") != intention_id("plan-uid-2")
    assert intention_id("a", "b") != intention_id("ab")
    assert len(intention_id("x")) <= 128
    assert intention_event_key("int-1", 2) == intention_event_key("int-1", 2)
    assert intention_event_key("int-1", 2) != intention_event_key("int-1", 3)


def test_event_types_follow_the_status() -> None:
    assert intention_event_type(S.OUTCOME_UNVERIFIED) == "intention_outcome_unverified"
    assert intention_event_type(S.FULFILLED) == "intention_fulfilled"

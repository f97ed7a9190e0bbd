"""The key of an execution's write-ahead row: derived from where the invocation came from,
never from the clock, so a retried invocation finds the row it already wrote."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from pydantic import ValidationError

from minds.domain.executions import ExecutionOrigin
from minds.domain.ledger import IDEMPOTENCY_KEY_LENGTH, idempotency_key

STEP: dict[str, Any] = {
    "plan": "atlas-restart-1",
    "plan_uid": "6f1c-uid",
    "step": "P1",
    "attempt": 1,
}


def key(**fields: Any) -> str:
    return ExecutionOrigin(**fields).key()


def test_a_plan_step_is_keyed_by_plan_uid_step_and_attempt() -> None:
    assert key(**STEP) == idempotency_key("execution", "step", "6f1c-uid", "P1", "1")
    assert len(key(**STEP)) == IDEMPOTENCY_KEY_LENGTH


def test_the_key_is_deterministic() -> None:
    assert key(**STEP) == key(**STEP)
    assert key(cycle="c-1") == key(cycle="c-1")
    assert key(approval_uid="a-uid") == key(approval_uid="a-uid")


@pytest.mark.parametrize(
    "over",
    [
        pytest.param({"attempt": 2}, id="attempt"),
        pytest.param({"step": "P2"}, id="step"),
        pytest.param({"plan_uid": "7a2d-uid"}, id="plan-uid"),
    ],
)
def test_a_different_step_origin_gives_a_different_key(over: dict[str, Any]) -> None:
    assert key(**(STEP | over)) != key(**STEP)


def test_the_plan_name_does_not_count_only_its_uid() -> None:
    # A plan deleted and re-created under the same name is another plan: its uid differs.
    assert key(**(STEP | {"plan": "renamed"})) == key(**STEP)


@given(st.integers(1, 1000), st.integers(1, 1000))
def test_attempts_differ_keys_differ(a: int, b: int) -> None:
    assert (key(**(STEP | {"attempt": a})) == key(**(STEP | {"attempt": b}))) is (a == b)


def test_an_approved_step_is_keyed_by_the_step_not_by_the_approval_object() -> None:
    # An Approval deleted and re-created gets another uid: its decision must find the row the
    # first one's execution wrote, so the step's origin decides the key.
    approved = key(**STEP, approval="caretaker-p1-0123456789", approval_uid="a-uid", cycle="c-1")
    assert approved == key(**STEP)
    assert key(**STEP, approval="caretaker-p1-0123456789", approval_uid="b-uid") == approved
    assert approved != key(approval_uid="a-uid")


def test_an_approval_without_a_step_is_keyed_by_its_uid() -> None:
    assert key(approval_uid="a-uid") == idempotency_key("execution", "approval", "a-uid")
    assert key(approval_uid="b-uid") != key(approval_uid="a-uid")


def test_a_plan_step_comes_before_a_cycle() -> None:
    assert key(**STEP, cycle="c-1") == key(**STEP)
    assert key(**STEP, cycle="c-1") != key(cycle="c-1")


def test_a_cycle_is_keyed_by_the_cycle() -> None:
    assert key(cycle="c-1") == idempotency_key("execution", "cycle", "c-1")
    assert key(cycle="c-1") != key(cycle="c-2")


def test_the_three_kinds_of_origin_never_share_a_key() -> None:
    # Even when their identifying text is the same.
    same = "x"
    keys = {
        key(approval_uid=same),
        key(plan_uid=same, step=same, attempt=1),
        key(cycle=same),
    }
    assert len(keys) == 3


@pytest.mark.parametrize(
    "fields",
    [
        pytest.param({}, id="nothing"),
        pytest.param({"plan": "atlas-restart-1", "step": "P1", "attempt": 1}, id="no-plan-uid"),
        pytest.param({"plan_uid": "6f1c-uid", "attempt": 1}, id="no-step"),
        pytest.param({"plan_uid": "6f1c-uid", "step": "P1"}, id="no-attempt"),
        pytest.param({"approval": "caretaker-p1-0123456789"}, id="approval-name-only"),
        pytest.param({"approval_uid": "", "cycle": ""}, id="empty"),
    ],
)
def test_an_origin_that_identifies_nothing_has_no_key(fields: dict[str, Any]) -> None:
    with pytest.raises(ValueError, match="names a plan step, an approval or a cycle"):
        key(**fields)


def test_attempts_start_at_one() -> None:
    with pytest.raises(ValidationError):
        ExecutionOrigin(**(STEP | {"attempt": 0}))

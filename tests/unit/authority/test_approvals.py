"""The Approval lifecycle: deterministic names, label values, and the transitions that follow
from what a person wrote and the clock."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from minds.domain.approvals import (
    DEFAULT_TTL,
    FINAL,
    abandoned,
    approval_name,
    executed,
    ignored_decision,
    label_value,
    next_transition,
    orphaned,
    recorded_as,
    withdrawn,
)
from minds.domain.resources.approval import (
    ApprovalKind,
    ApprovalOrigin,
    ApprovalPhase,
    ApprovalSpec,
    ApprovalStatus,
    Decision,
)
from minds.domain.resources.common import DNS_SUBDOMAIN

NOW = datetime(2025, 3, 1, 12, 0, tzinfo=UTC)
EXPIRES = NOW + DEFAULT_TTL
ACTION, GRANT = ApprovalKind.ACTION, ApprovalKind.GRANT

SUBDOMAIN = re.compile(DNS_SUBDOMAIN)
LABEL_VALUE = re.compile(r"^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$")


def origin(**over: Any) -> ApprovalOrigin:
    fields: dict[str, Any] = {
        "mind": "caretaker",
        "intention": "int-1",
        "plan": "atlas-restart-1",
        "step": "P1",
        "attempt": 1,
    }
    return ApprovalOrigin.model_validate(fields | over)


def spec(**over: Any) -> ApprovalSpec:
    fields: dict[str, Any] = {
        "kind": "action",
        "mind": "caretaker",
        "capability": "service.restart",
        "target": "prod/atlas",
        "parameters": {"namespace": "prod", "name": "atlas"},
        "explanation": {"what": "restart prod/atlas", "why": "it is degraded"},
        "origin": origin().model_dump(by_alias=True),
        "expiresAt": EXPIRES,
    }
    return ApprovalSpec.model_validate(fields | over)


def decided(decision: str, **over: Any) -> ApprovalSpec:
    return spec(decision=decision, decidedBy="alice", **over)


PENDING = ApprovalStatus()


# -- names -----------------------------------------------------------------------------------


def test_the_name_is_deterministic_for_the_same_origin() -> None:
    assert approval_name(origin(), ACTION) == approval_name(origin(), ACTION)


def test_the_name_is_readable() -> None:
    name = approval_name(origin(), ACTION)
    assert name.startswith("caretaker-p1-")
    assert approval_name(origin(step=None), GRANT).startswith("caretaker-grant-")


@pytest.mark.parametrize(
    "over",
    [
        pytest.param({"attempt": 2}, id="attempt"),
        pytest.param({"step": "P2"}, id="step"),
        pytest.param({"plan": "atlas-restart-2"}, id="plan"),
        pytest.param({"intention": "int-2"}, id="intention"),
        pytest.param({"mind": "keeper"}, id="mind"),
        pytest.param({"step": None}, id="no-step"),
        pytest.param({"plan": None}, id="no-plan"),
    ],
)
def test_a_different_origin_gives_a_different_name(over: dict[str, Any]) -> None:
    assert approval_name(origin(**over), ACTION) != approval_name(origin(), ACTION)


def test_a_different_kind_gives_a_different_name() -> None:
    assert approval_name(origin(), GRANT) != approval_name(origin(), ACTION)


def test_steps_that_read_alike_still_get_different_names() -> None:
    # "P1" and "p1" render the same readable part; the hash keeps them apart.
    assert approval_name(origin(step="p1"), ACTION) != approval_name(origin(step="P1"), ACTION)


def valid_name(name: str) -> bool:
    return len(name) <= 253 and SUBDOMAIN.fullmatch(name) is not None


# Any text but the ledger's unit separator, which no Kubernetes name, uid or step key can hold.
weird_text = st.text(
    alphabet=st.characters(blacklist_characters="\x1f", blacklist_categories=("Cs",)),
    max_size=300,
)


@settings(max_examples=400)
@given(
    mind=st.from_regex(DNS_SUBDOMAIN, fullmatch=True).filter(lambda m: len(m) <= 253),
    step=st.none() | weird_text.map(lambda s: s[:16]),
    attempt=st.integers(1, 100),
    kind=st.sampled_from(list(ApprovalKind)),
)
def test_names_of_valid_origins_are_dns_subdomains(
    mind: str, step: str | None, attempt: int, kind: ApprovalKind
) -> None:
    name = approval_name(origin(mind=mind, step=step, attempt=attempt), kind)
    assert valid_name(name), name


@settings(max_examples=400)
@given(mind=weird_text, step=st.none() | weird_text, kind=st.sampled_from(list(ApprovalKind)))
def test_names_are_dns_subdomains_whatever_the_text(
    mind: str, step: str | None, kind: ApprovalKind
) -> None:
    # model_construct skips validation: the name must be safe even for text no model accepts.
    unchecked = ApprovalOrigin.model_construct(mind=mind, step=step, attempt=1)
    assert valid_name(approval_name(unchecked, kind))


@given(st.integers(1, 99))
def test_attempts_give_distinct_names(attempt: int) -> None:
    assert approval_name(origin(attempt=attempt), ACTION) != approval_name(
        origin(attempt=attempt + 1), ACTION
    )


# -- label values ----------------------------------------------------------------------------


def valid_label(value: str) -> bool:
    return len(value) <= 63 and LABEL_VALUE.fullmatch(value) is not None


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("caretaker", "caretaker"),
        ("int-1", "int-1"),
        ("a.b_c-D", "a.b_c-D"),
        ("hello world", "hello-world"),
        ("-._x._-", "x"),
        ("", "none"),
        ("///", "none"),
    ],
)
def test_label_values(text: str, expected: str) -> None:
    assert label_value(text) == expected


def test_a_long_label_value_is_shortened_with_a_hash() -> None:
    long = "a" * 100
    value = label_value(long)
    assert valid_label(value)
    assert value.startswith("a" * 52 + "-")
    assert value != label_value("a" * 101)
    assert label_value("a" * 63) == "a" * 63


@settings(max_examples=400)
@given(weird_text)
def test_label_values_are_always_valid(text: str) -> None:
    value = label_value(text)
    assert valid_label(value), value
    assert label_value(text) == value


# -- transitions -----------------------------------------------------------------------------


def test_an_approved_decision_moves_pending_to_approved() -> None:
    step = next_transition(decided("Approved"), PENDING, NOW)
    assert step is not None
    assert step.status.phase is ApprovalPhase.APPROVED
    assert step.status.decided_at == NOW
    assert step.event == "approval_approved"
    assert "alice" in step.message


def test_a_denied_decision_moves_pending_to_denied_with_the_note() -> None:
    step = next_transition(decided("Denied", note="not during peak"), PENDING, NOW)
    assert step is not None
    assert step.status.phase is ApprovalPhase.DENIED
    assert step.status.decided_at == NOW
    assert step.event == "approval_denied"
    assert "alice" in step.message
    assert "not during peak" in step.message


def test_without_a_decision_nothing_happens_before_the_deadline() -> None:
    assert next_transition(spec(), PENDING, EXPIRES - timedelta(microseconds=1)) is None


@pytest.mark.parametrize("late", [timedelta(0), timedelta(seconds=1), timedelta(days=3)])
def test_without_a_decision_the_request_expires_at_the_deadline(late: timedelta) -> None:
    step = next_transition(spec(), PENDING, EXPIRES + late)
    assert step is not None
    assert step.status.phase is ApprovalPhase.EXPIRED
    assert step.status.decided_at is None
    assert step.event == "approval_expired"


@pytest.mark.parametrize("late", [timedelta(0), timedelta(minutes=5)])
def test_an_approval_first_read_after_the_deadline_fails_closed(late: timedelta) -> None:
    # Nobody can prove the decision arrived in time (managed fields are client-writable).
    step = next_transition(decided("Approved"), PENDING, EXPIRES + late)
    assert step is not None
    assert step.status.phase is ApprovalPhase.EXPIRED
    assert step.event == "approval_expired"
    assert "alice" in step.message


def test_a_denial_read_after_the_deadline_still_counts() -> None:
    step = next_transition(decided("Denied"), PENDING, EXPIRES + timedelta(minutes=5))
    assert step is not None
    assert step.status.phase is ApprovalPhase.DENIED


@pytest.mark.parametrize("phase", [p for p in ApprovalPhase if p is not ApprovalPhase.PENDING])
@pytest.mark.parametrize("decision", [None, "Approved", "Denied"])
def test_a_request_no_longer_pending_has_no_transition(
    phase: ApprovalPhase, decision: str | None
) -> None:
    s = decided(decision) if decision else spec()
    status = ApprovalStatus(phase=phase)
    assert next_transition(s, status, EXPIRES + timedelta(days=1)) is None


def test_a_transition_keeps_the_rest_of_the_status() -> None:
    status = ApprovalStatus(observed_generation=3, message="waiting")
    step = next_transition(decided("Approved"), status, NOW)
    assert step is not None
    assert step.status.observed_generation == 3


def test_final_phases() -> None:
    assert ApprovalPhase.PENDING not in FINAL
    assert ApprovalPhase.APPROVED not in FINAL  # approved still has to be executed
    assert {ApprovalPhase.DENIED, ApprovalPhase.EXPIRED, ApprovalPhase.EXECUTED} <= FINAL


# -- withdrawal ------------------------------------------------------------------------------


def test_a_pending_undecided_request_can_be_withdrawn() -> None:
    after = withdrawn(PENDING, spec(), "the workload recovered")
    assert after is not None
    assert after.phase is ApprovalPhase.WITHDRAWN
    assert after.message == "the workload recovered"


@pytest.mark.parametrize("decision", list(Decision))
def test_a_decided_request_cannot_be_withdrawn(decision: Decision) -> None:
    # Even before the controller has moved the phase: the person's decision stands.
    assert withdrawn(PENDING, decided(decision.value), "no longer needed") is None


@pytest.mark.parametrize("phase", [p for p in ApprovalPhase if p is not ApprovalPhase.PENDING])
def test_a_request_that_is_not_pending_cannot_be_withdrawn(phase: ApprovalPhase) -> None:
    assert withdrawn(ApprovalStatus(phase=phase), spec(), "no longer needed") is None


# -- execution -------------------------------------------------------------------------------


def test_executed_records_when_and_which_execution() -> None:
    approved = ApprovalStatus(phase=ApprovalPhase.APPROVED, decided_at=NOW)
    later = NOW + timedelta(minutes=2)
    after = executed(approved, later, "execution-42", "restart requested")
    assert after.phase is ApprovalPhase.EXECUTED
    assert after.executed_at == later
    assert after.execution == "execution-42"
    assert after.message == "restart requested"
    assert after.decided_at == NOW
    assert approved.phase is ApprovalPhase.APPROVED  # the input is not changed


def test_an_execution_also_ends_a_withdrawal_that_lost_the_race() -> None:
    late = ApprovalStatus(phase=ApprovalPhase.WITHDRAWN, message="its plan failed")
    assert executed(late, NOW, "7", "restart requested").phase is ApprovalPhase.EXECUTED


# -- abandoning: the plan is gone or finished ------------------------------------------------


@pytest.mark.parametrize("phase", [ApprovalPhase.PENDING, ApprovalPhase.APPROVED])
def test_an_unspent_approval_is_abandoned_decided_or_not(phase: ApprovalPhase) -> None:
    after = abandoned(ApprovalStatus(phase=phase), "its plan heal was deleted")
    assert after is not None
    assert after.phase is ApprovalPhase.WITHDRAWN
    assert after.message == "its plan heal was deleted"


@pytest.mark.parametrize(
    "phase",
    [ApprovalPhase.DENIED, ApprovalPhase.EXPIRED, ApprovalPhase.WITHDRAWN, ApprovalPhase.EXECUTED],
)
def test_a_spent_approval_stays_as_it_is(phase: ApprovalPhase) -> None:
    assert abandoned(ApprovalStatus(phase=phase), "its plan was deleted") is None


@pytest.mark.parametrize("phase", [ApprovalPhase.WITHDRAWN, ApprovalPhase.EXPIRED])
def test_a_decision_on_a_withdrawn_or_expired_approval_is_ignored_and_named(
    phase: ApprovalPhase,
) -> None:
    said = ignored_decision(decided("Approved"), ApprovalStatus(phase=phase))
    assert said is not None
    assert "alice" in said
    assert "not acted on" in said


@pytest.mark.parametrize(
    ("s", "phase"),
    [
        pytest.param(spec(), ApprovalPhase.WITHDRAWN, id="undecided"),
        pytest.param(decided("Approved"), ApprovalPhase.PENDING, id="still-pending"),
        pytest.param(decided("Approved"), ApprovalPhase.EXECUTED, id="executed"),
    ],
)
def test_nothing_to_ignore_otherwise(s: ApprovalSpec, phase: ApprovalPhase) -> None:
    assert ignored_decision(s, ApprovalStatus(phase=phase)) is None


PLAN_UID = "plan-uid-1"


@pytest.mark.parametrize(
    ("uid", "phase", "expected"),
    [
        pytest.param(PLAN_UID, "awaiting_approval", None, id="alive"),
        pytest.param(None, None, "was deleted", id="deleted"),
        pytest.param("plan-uid-2", "validated", "a new plan has the same name", id="re-created"),
        pytest.param(PLAN_UID, "completed", "is completed", id="completed"),
        pytest.param(PLAN_UID, "failed", "is failed", id="failed"),
        pytest.param(PLAN_UID, "superseded", "is superseded", id="superseded"),
    ],
)
def test_an_approval_is_orphaned_when_its_plan_is_gone_or_finished(
    uid: str | None, phase: str | None, expected: str | None
) -> None:
    reason = orphaned(origin(planUid=PLAN_UID), uid, phase)
    if expected is None:
        assert reason is None
    else:
        assert reason is not None
        assert expected in reason


def test_an_approval_raised_outside_a_plan_is_never_orphaned() -> None:
    assert orphaned(origin(plan=None), None, None) is None


def test_the_plan_uid_is_part_of_the_name() -> None:
    # A Plan re-created under the same name asks under another name: it cannot adopt the old
    # plan's Approval, nor its decision.
    first = approval_name(origin(planUid="uid-1"), ACTION)
    assert first != approval_name(origin(planUid="uid-2"), ACTION)


@pytest.mark.parametrize(
    ("s", "phase", "event", "now"),
    [
        pytest.param(
            decided("Approved"), ApprovalPhase.APPROVED, "approval_approved", NOW, id="approved"
        ),
        pytest.param(decided("Denied"), ApprovalPhase.DENIED, "approval_denied", NOW, id="denied"),
        pytest.param(spec(), ApprovalPhase.EXPIRED, "approval_expired", EXPIRES, id="expired"),
    ],
)
def test_a_phase_already_written_is_recorded_under_the_transition_event(
    s: ApprovalSpec, phase: ApprovalPhase, event: str, now: datetime
) -> None:
    # The same event (and so the same idempotency key) next_transition would have recorded.
    record = recorded_as(s, ApprovalStatus(phase=phase), now)
    assert record is not None
    assert record.event == event
    assert record.status.phase is phase


@pytest.mark.parametrize(
    ("s", "phase", "now"),
    [
        pytest.param(spec(), ApprovalPhase.APPROVED, NOW, id="approved-in-status-only"),
        pytest.param(decided("Denied"), ApprovalPhase.APPROVED, NOW, id="denied-in-spec"),
        pytest.param(decided("Approved"), ApprovalPhase.DENIED, NOW, id="approved-in-spec"),
        pytest.param(spec(), ApprovalPhase.EXPIRED, NOW, id="expired-too-early"),
        pytest.param(decided("Approved"), ApprovalPhase.APPROVED, EXPIRES, id="approved-too-late"),
    ],
)
def test_a_phase_that_spec_and_the_clock_do_not_justify_is_never_recorded(
    s: ApprovalSpec, phase: ApprovalPhase, now: datetime
) -> None:
    # Anyone with the status subresource can write a phase; the ledger records only decisions.
    assert recorded_as(s, ApprovalStatus(phase=phase), now) is None


@pytest.mark.parametrize(
    "phase", [ApprovalPhase.PENDING, ApprovalPhase.WITHDRAWN, ApprovalPhase.EXECUTED]
)
def test_phases_not_reached_by_a_decision_or_the_clock_are_not_recorded_again(
    phase: ApprovalPhase,
) -> None:
    assert recorded_as(decided("Approved"), ApprovalStatus(phase=phase), NOW) is None

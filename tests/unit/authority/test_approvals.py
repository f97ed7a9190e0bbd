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
    APPROVED,
    DEFAULT_TTL,
    DENIED,
    EXECUTED,
    EXPIRED,
    FINAL,
    IGNORED,
    LATE,
    NOT_EXECUTED,
    REFUSED,
    REQUESTED,
    WITHDRAWN,
    Recorded,
    abandonable,
    approval_name,
    decider_refused,
    label_value,
    next_transition,
    orphaned,
    recorded,
    status_of,
    withdrawable,
)
from minds.domain.ledger import EventRecord, SubjectRef
from minds.domain.resources.approval import (
    ApprovalKind,
    ApprovalOrigin,
    ApprovalPhase,
    ApprovalSpec,
    ApprovalStatus,
    Approvers,
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


# -- transitions: what is recorded next ------------------------------------------------------


def event(type_: str, at: datetime = NOW, **payload: Any) -> EventRecord:
    return EventRecord(
        mind="caretaker",
        namespace="prod",
        type=type_,
        subject=SubjectRef(kind="Approval", name="a", uid="uid-1"),
        payload=payload,
        occurred_at=at,
        idempotency_key=f"{type_}-key",
    )


def history(*events: EventRecord) -> Recorded:
    return recorded(events)


NOTHING = history()


def test_an_approved_decision_is_recorded_as_approved() -> None:
    step = next_transition(decided("Approved"), NOTHING, NOW)
    assert step is not None
    assert step.event == APPROVED
    assert "alice" in step.message


def test_a_denied_decision_is_recorded_with_the_note() -> None:
    step = next_transition(decided("Denied", note="not during peak"), NOTHING, NOW)
    assert step is not None
    assert step.event == DENIED
    assert "alice" in step.message
    assert "not during peak" in step.message


def test_without_a_decision_nothing_happens_before_the_deadline() -> None:
    assert next_transition(spec(), NOTHING, EXPIRES - timedelta(microseconds=1)) is None


@pytest.mark.parametrize("late", [timedelta(0), timedelta(seconds=1), timedelta(days=3)])
def test_without_a_decision_the_request_expires_at_the_deadline(late: timedelta) -> None:
    step = next_transition(spec(), NOTHING, EXPIRES + late)
    assert step is not None
    assert step.event == EXPIRED


@pytest.mark.parametrize("late", [timedelta(0), timedelta(seconds=1), timedelta(minutes=5)])
def test_an_approval_first_seen_at_or_after_the_deadline_is_refused_as_late(
    late: timedelta,
) -> None:
    # Nobody can prove the decision arrived in time (managed fields are client-writable).
    step = next_transition(decided("Approved"), NOTHING, EXPIRES + late)
    assert step is not None
    assert step.event == LATE
    assert "alice" in step.message
    assert "approve a fresh request" in step.message
    after = history(event(LATE, EXPIRES + late, message=step.message))
    assert after.phase is ApprovalPhase.EXPIRED
    assert after.expired


def test_an_approval_seen_after_the_request_expired_is_late_too() -> None:
    # Expired first; a status write lagging behind let the decision through admission.
    expired = history(event(EXPIRED, EXPIRES))
    step = next_transition(decided("Approved"), expired, EXPIRES + timedelta(seconds=1))
    assert step is not None
    assert step.event == LATE


def test_a_denial_seen_after_the_deadline_still_counts() -> None:
    step = next_transition(decided("Denied"), NOTHING, EXPIRES + timedelta(minutes=5))
    assert step is not None
    assert step.event == DENIED


def test_an_approval_by_someone_the_mind_no_longer_names_is_refused() -> None:
    step = next_transition(decided("Approved"), NOTHING, NOW, "not an approver")
    assert step is not None
    assert step.event == REFUSED
    approved = history(event(APPROVED))
    again = next_transition(decided("Approved"), approved, NOW, "not an approver")
    assert again is not None
    assert again.event == REFUSED


@pytest.mark.parametrize("ended", [DENIED, EXPIRED, WITHDRAWN, EXECUTED, LATE, REFUSED])
def test_a_decision_is_recorded_once(ended: str) -> None:
    done = history(event(ended), event(LATE), event(IGNORED))
    for decision in (None, "Approved", "Denied"):
        s = decided(decision) if decision else spec()
        assert next_transition(s, done, EXPIRES + timedelta(days=1)) is None


def test_final_phases() -> None:
    assert ApprovalPhase.PENDING not in FINAL
    assert ApprovalPhase.APPROVED not in FINAL  # approved still has to be executed
    assert {ApprovalPhase.DENIED, ApprovalPhase.EXPIRED, ApprovalPhase.EXECUTED} <= FINAL


# -- status: a function of the ledger alone ---------------------------------------------------


@pytest.mark.parametrize(
    ("events", "phase"),
    [
        pytest.param((), ApprovalPhase.PENDING, id="nothing"),
        pytest.param((REQUESTED,), ApprovalPhase.PENDING, id="requested"),
        pytest.param((APPROVED,), ApprovalPhase.APPROVED, id="approved"),
        pytest.param((APPROVED, NOT_EXECUTED), ApprovalPhase.WITHDRAWN, id="not-executed"),
        pytest.param((DENIED,), ApprovalPhase.DENIED, id="denied"),
        pytest.param((EXPIRED,), ApprovalPhase.EXPIRED, id="expired"),
        pytest.param((LATE,), ApprovalPhase.EXPIRED, id="late"),
        pytest.param((EXPIRED, LATE), ApprovalPhase.EXPIRED, id="expired-then-late"),
        pytest.param((APPROVED, REFUSED), ApprovalPhase.WITHDRAWN, id="refused"),
        pytest.param((APPROVED, WITHDRAWN), ApprovalPhase.WITHDRAWN, id="abandoned"),
        pytest.param((APPROVED, EXECUTED), ApprovalPhase.EXECUTED, id="executed"),
        # The action ran while its plan was being closed: what happened, not what was meant.
        pytest.param((APPROVED, WITHDRAWN, EXECUTED), ApprovalPhase.EXECUTED, id="ran-anyway"),
    ],
)
def test_the_phase_follows_from_the_ledger(events: tuple[str, ...], phase: ApprovalPhase) -> None:
    minutes = [event(t, NOW + timedelta(minutes=i)) for i, t in enumerate(events)]
    assert status_of(recorded(minutes)).phase is phase
    assert status_of(recorded(reversed(minutes))).phase is phase  # order of reading aside


def test_the_status_carries_when_and_what_from_the_ledger() -> None:
    later = NOW + timedelta(minutes=2)
    done = history(
        event(APPROVED, NOW, message="approved by alice"),
        event(EXECUTED, later, execution="42", outcome="restart requested"),
    )
    shown = status_of(done, observed_generation=3)
    assert [(c.type, c.status.value) for c in shown.conditions] == [
        ("Decided", "True"),
        ("Executed", "True"),
    ]
    assert shown.model_copy(update={"conditions": []}) == ApprovalStatus(
        phase=ApprovalPhase.EXECUTED,
        decided_at=NOW,
        executed_at=later,
        execution="42",
        message="restart requested",
        observed_generation=3,
    )
    assert done.approved_at == NOW


def test_a_late_decision_after_the_expiry_tells_the_person_what_to_do() -> None:
    late = history(
        event(EXPIRED, EXPIRES, message="nobody decided in time"),
        event(LATE, EXPIRES + timedelta(seconds=1), message="approve a fresh request"),
    )
    assert status_of(late).message == "approve a fresh request"


def test_a_refusal_before_acting_ends_the_request_and_is_its_message() -> None:
    held = history(event(APPROVED), event(NOT_EXECUTED, reason="service.restart is locked"))
    assert status_of(held).message == "service.restart is locked"
    assert status_of(held).phase is ApprovalPhase.WITHDRAWN


# -- withdrawal ------------------------------------------------------------------------------


def test_a_pending_undecided_request_can_be_withdrawn() -> None:
    assert withdrawable(spec(), NOTHING)


@pytest.mark.parametrize("decision", list(Decision))
def test_a_decided_request_cannot_be_withdrawn(decision: Decision) -> None:
    # Even before the controller has recorded it: the person's decision stands.
    assert not withdrawable(decided(decision.value), NOTHING)


@pytest.mark.parametrize("ended", [APPROVED, DENIED, EXPIRED, WITHDRAWN, EXECUTED])
def test_a_request_that_is_not_pending_cannot_be_withdrawn(ended: str) -> None:
    assert not withdrawable(spec(), history(event(ended)))


# -- abandoning: the plan is gone or finished ------------------------------------------------


@pytest.mark.parametrize("events", [(), (APPROVED,)])
def test_an_unspent_approval_is_abandoned_decided_or_not(events: tuple[str, ...]) -> None:
    assert abandonable(history(*(event(t) for t in events)))


@pytest.mark.parametrize("ended", [DENIED, EXPIRED, LATE, WITHDRAWN, EXECUTED])
def test_a_spent_approval_stays_as_it_is(ended: str) -> None:
    assert not abandonable(history(event(ended)))


def test_a_decision_on_a_withdrawn_approval_is_ignored_and_named() -> None:
    said = next_transition(decided("Approved"), history(event(WITHDRAWN)), NOW)
    assert said is not None
    assert said.event == IGNORED
    assert "alice" in said.message
    assert "not acted on" in said.message


def test_a_refused_decision_is_not_ignored_again() -> None:
    refused = history(event(APPROVED), event(REFUSED))
    assert next_transition(decided("Approved"), refused, NOW) is None


# -- approvers: checked again against the Mind --------------------------------------------------


def by_group() -> ApprovalSpec:
    return decided("Approved", approvers={"groups": ["sre", "oncall"]})


def by_name() -> ApprovalSpec:
    return decided("Approved", approvers={"users": ["alice"]})


@pytest.mark.parametrize(
    ("s", "mind"),
    [
        pytest.param(by_name(), Approvers(users=["alice"]), id="user"),
        pytest.param(by_group(), Approvers(groups=["sre", "oncall", "more"]), id="groups"),
    ],
)
def test_a_decider_the_mind_still_names_stands(s: ApprovalSpec, mind: Approvers) -> None:
    assert decider_refused(s, mind) is None


@pytest.mark.parametrize(
    ("s", "mind", "why"),
    [
        pytest.param(by_name(), Approvers(users=["bob"]), "not an approver", id="user-removed"),
        pytest.param(by_group(), Approvers(groups=["sre"]), "not an approver", id="group-removed"),
        pytest.param(by_name(), None, "is gone", id="mind-gone"),
        # Admission saw an empty list and refused; a hand-made request gets no further here.
        pytest.param(decided("Approved"), Approvers(), "not an approver", id="nobody"),
        pytest.param(decided("Approved"), Approvers(groups=["sre"]), "not an approver", id="none"),
    ],
)
def test_a_decider_the_mind_does_not_name_is_refused(
    s: ApprovalSpec, mind: Approvers | None, why: str
) -> None:
    refused = decider_refused(s, mind)
    assert refused is not None
    assert why in refused


def test_the_author_of_the_plan_does_not_approve_its_steps() -> None:
    refused = decider_refused(by_name(), Approvers(users=["alice"]), author="alice")
    assert refused is not None
    assert "four eyes" in refused
    assert decider_refused(by_name(), Approvers(users=["alice"]), author="bob") is None


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

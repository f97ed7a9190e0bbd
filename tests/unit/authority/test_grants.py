"""CapabilityGrant rules: phase precedence, consuming exactly one operation, the policy view."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from minds.domain.grants import consumed, link_problem, phase_of, view
from minds.domain.resources.approval import ApprovalSpec
from minds.domain.resources.grant import CapabilityGrantSpec, CapabilityGrantStatus, GrantPhase

NOW = datetime(2025, 3, 1, 12, 0, tzinfo=UTC)
EXPIRES = NOW + timedelta(minutes=30)
LATER = NOW + timedelta(hours=1)


def spec(**over: Any) -> CapabilityGrantSpec:
    fields: dict[str, Any] = {
        "mind": "caretaker",
        "capability": "logs.query",
        "targetPattern": "prod/atlas",
        "parameterLimits": {"mask": True},
        "expiresAt": EXPIRES,
        "operationCap": 3,
        "reason": "diagnose atlas",
    }
    return CapabilityGrantSpec.model_validate(fields | over)


def status(used: int = 0, **over: Any) -> CapabilityGrantStatus:
    return CapabilityGrantStatus.model_validate({"operationsUsed": used} | over)


# -- phase -----------------------------------------------------------------------------------


def test_a_fresh_grant_inside_its_window_is_active() -> None:
    assert phase_of(spec(), status(), NOW) is GrantPhase.ACTIVE


def test_a_stored_phase_never_authorises() -> None:
    # A live phase is recomputed from spec, counter and clock, never read back from status.
    assert phase_of(spec(), status(3, phase="Active"), NOW) is GrantPhase.EXHAUSTED
    assert phase_of(spec(revoked=True), status(phase="Active"), NOW) is GrantPhase.REVOKED
    assert phase_of(spec(), status(phase="Active"), EXPIRES) is GrantPhase.EXPIRED


@pytest.mark.parametrize("ended", ["Expired", "Exhausted", "Revoked"])
def test_a_phase_that_ended_the_grant_is_final(ended: str) -> None:
    # Status can only take authority away: an ended grant stays ended, whatever spec says
    # (the status guard refuses to move a terminal phase, so the controller never tries).
    assert phase_of(spec(), status(phase=ended), NOW) is GrantPhase(ended)
    assert phase_of(spec(revoked=True), status(3, phase=ended), LATER) is GrantPhase(ended)
    assert consumed(spec(), status(phase=ended), NOW) is None


def test_revoked_beats_everything() -> None:
    s = spec(revoked=True, notBefore=NOW + timedelta(minutes=1))
    assert phase_of(s, status(3), LATER) is GrantPhase.REVOKED
    assert phase_of(spec(revoked=True), status(), NOW) is GrantPhase.REVOKED


def test_exhausted_beats_expired_and_not_yet_started() -> None:
    assert phase_of(spec(), status(3), LATER) is GrantPhase.EXHAUSTED
    s = spec(notBefore=NOW + timedelta(minutes=1))
    assert phase_of(s, status(3), NOW) is GrantPhase.EXHAUSTED
    assert phase_of(spec(), status(4), NOW) is GrantPhase.EXHAUSTED


def test_one_operation_left_is_not_exhausted() -> None:
    assert phase_of(spec(), status(2), NOW) is GrantPhase.ACTIVE


def test_expired_beats_not_yet_started() -> None:
    s = spec(notBefore=NOW + timedelta(minutes=10), expiresAt=NOW + timedelta(minutes=20))
    assert phase_of(s, status(), NOW + timedelta(minutes=20)) is GrantPhase.EXPIRED


@pytest.mark.parametrize(
    ("now", "phase"),
    [
        (EXPIRES - timedelta(microseconds=1), GrantPhase.ACTIVE),
        (EXPIRES, GrantPhase.EXPIRED),
        (EXPIRES + timedelta(days=1), GrantPhase.EXPIRED),
    ],
)
def test_a_grant_expires_at_expires_at(now: datetime, phase: GrantPhase) -> None:
    assert phase_of(spec(), status(), now) is phase


@pytest.mark.parametrize(
    ("now", "phase"),
    [
        (NOW - timedelta(microseconds=1), GrantPhase.PENDING),
        (NOW, GrantPhase.ACTIVE),
        (NOW + timedelta(minutes=1), GrantPhase.ACTIVE),
    ],
)
def test_a_grant_starts_at_not_before(now: datetime, phase: GrantPhase) -> None:
    assert phase_of(spec(notBefore=NOW), status(), now) is phase


# -- consuming -------------------------------------------------------------------------------


def test_consuming_an_active_grant_counts_exactly_one_operation() -> None:
    after = consumed(spec(), status(1), NOW)
    assert after is not None
    assert after.operations_used == 2
    assert after.phase is GrantPhase.ACTIVE


def test_consuming_the_last_operation_exhausts_the_grant() -> None:
    after = consumed(spec(), status(2), NOW)
    assert after is not None
    assert after.operations_used == 3
    assert after.phase is GrantPhase.EXHAUSTED


def test_consuming_keeps_the_rest_of_the_status() -> None:
    before = status(0, grantedBy="alice", approval="caretaker-grant-0123456789")
    after = consumed(spec(), before, NOW)
    assert after is not None
    assert after.granted_by == "alice"
    assert after.approval == "caretaker-grant-0123456789"
    assert before.operations_used == 0  # the input is not changed


@pytest.mark.parametrize(
    ("s", "used", "now"),
    [
        pytest.param(spec(revoked=True), 0, NOW, id="revoked"),
        pytest.param(spec(), 3, NOW, id="exhausted"),
        pytest.param(spec(), 0, EXPIRES, id="expired"),
        pytest.param(spec(notBefore=NOW + timedelta(seconds=1)), 0, NOW, id="not-yet-started"),
    ],
)
def test_a_grant_that_is_not_active_cannot_be_consumed(
    s: CapabilityGrantSpec, used: int, now: datetime
) -> None:
    assert consumed(s, status(used), now) is None


@settings(max_examples=200)
@given(cap=st.integers(1, 60), extra=st.integers(0, 20))
def test_consuming_from_zero_succeeds_exactly_operation_cap_times(cap: int, extra: int) -> None:
    s = spec(operationCap=cap)
    current = status()
    successes = 0
    for _ in range(cap + extra + 1):
        after = consumed(s, current, NOW)
        if after is None:
            continue
        assert after.operations_used == current.operations_used + 1
        successes += 1
        current = after
    assert successes == cap
    assert current.operations_used == cap
    assert current.phase is GrantPhase.EXHAUSTED


@settings(max_examples=200)
@given(
    cap=st.integers(1, 20),
    used=st.integers(0, 25),
    offset=st.integers(-7200, 7200),
    revoked=st.booleans(),
)
def test_consuming_succeeds_exactly_when_active(
    cap: int, used: int, offset: int, revoked: bool
) -> None:
    s = spec(operationCap=cap, revoked=revoked, notBefore=NOW - timedelta(minutes=30))
    now = NOW + timedelta(seconds=offset)
    after = consumed(s, status(used), now)
    assert (after is not None) is (phase_of(s, status(used), now) is GrantPhase.ACTIVE)
    if after is not None:
        assert after.operations_used == used + 1
        assert after.operations_used <= cap


# -- the view policy sees --------------------------------------------------------------------


def test_the_view_carries_what_policy_needs() -> None:
    s = spec(notBefore=NOW, revoked=True)
    v = view("prod", "logs-atlas", s, status(1))
    assert v.name == "logs-atlas"
    assert v.namespace == "prod"
    assert v.capability == "logs.query"
    assert v.target_pattern == "prod/atlas"
    assert v.not_before == NOW
    assert v.expires_at == EXPIRES
    assert v.revoked is True
    assert v.operations_remaining == 2


@pytest.mark.parametrize(("used", "remaining"), [(0, 3), (2, 1), (3, 0), (7, 0)])
def test_operations_remaining_never_goes_below_zero(used: int, remaining: int) -> None:
    assert view("prod", "g", spec(), status(used)).operations_remaining == remaining


@settings(max_examples=200)
@given(cap=st.integers(1, 20), used=st.integers(0, 25), offset=st.integers(-3600, 3600))
def test_the_view_is_live_exactly_when_the_grant_is_active(
    cap: int, used: int, offset: int
) -> None:
    s = spec(operationCap=cap, notBefore=NOW - timedelta(minutes=10))
    now = NOW + timedelta(seconds=offset)
    live = view("prod", "g", s, status(used)).live(now)
    assert live is (phase_of(s, status(used), now) is GrantPhase.ACTIVE)


# -- a grant covers only the namespace it is held in ----------------------------------------


@pytest.mark.parametrize("pattern", ["*", "atlas", "atlas*", "*/atlas", "*/*", "**"])
def test_no_pattern_reaches_a_workload_of_another_namespace(pattern: str) -> None:
    v = view("prod", "g", spec(targetPattern=pattern), status())
    assert not v.covers("logs.query", "staging/atlas")
    assert v.covers("logs.query", "prod/atlas")


def test_targets_outside_the_cluster_are_not_namespaced() -> None:
    v = view("prod", "g", spec(capability="host.process.list", targetPattern="host"), status())
    assert v.covers("host.process.list", "host")


# -- what vouches for a grant the controller created ----------------------------------------

CREATED = NOW


def request(**over: Any) -> ApprovalSpec:
    fields: dict[str, Any] = {
        "kind": "grant",
        "mind": "caretaker",
        "capability": "logs.query",
        "target": "prod/atlas",
        "grant": {
            "targetPattern": "prod/atlas",
            "parameterLimits": {"mask": True},
            "durationSeconds": 1800,
            "operationCap": 3,
            "reason": "diagnose atlas",
        },
        "explanation": {"what": "read logs", "why": "atlas restarts"},
        "origin": {"mind": "caretaker", "plan": "p", "step": "R1"},
        "expiresAt": NOW + timedelta(hours=1),
        "decision": "Approved",
        "decidedBy": "alice",
    }
    return ApprovalSpec.model_validate(fields | over)


def linked(**over: Any) -> CapabilityGrantSpec:
    return spec(approval="caretaker-grant-1", grantedBy="alice", **over)


def test_a_grant_made_by_a_person_needs_no_approval() -> None:
    assert link_problem("g", spec(grantedBy="bob"), CREATED, None) is None


def test_a_grant_backed_by_the_approved_request_is_vouched_for() -> None:
    assert link_problem("caretaker-grant-1", linked(), CREATED, request()) is None


@pytest.mark.parametrize(
    ("grant", "approval", "why"),
    [
        pytest.param(linked(), None, "does not exist", id="no-approval"),
        pytest.param(
            linked(),
            request(decision="Denied"),
            "not approved",
            id="denied",
        ),
        pytest.param(
            linked(),
            request(decision=None, decidedBy=None),
            "not approved",
            id="pending",
        ),
        pytest.param(linked(mind="other"), request(), "not what", id="other-mind"),
        pytest.param(
            linked(capability="service.restart"), request(), "not what", id="other-capability"
        ),
        pytest.param(linked(targetPattern="*"), request(), "not what", id="wider-pattern"),
        pytest.param(linked(operationCap=30), request(), "not what", id="bigger-cap"),
        pytest.param(linked(parameterLimits={}), request(), "not what", id="no-limits"),
        pytest.param(
            spec(approval="caretaker-grant-1", grantedBy="mallory"),
            request(),
            "not what",
            id="other-granter",
        ),
        pytest.param(linked(expiresAt=NOW + timedelta(days=3)), request(), "outlasts", id="longer"),
        pytest.param(
            linked(),
            request(kind="action", grant=None, parameters={}),
            "not a grant request",
            id="action-approval",
        ),
    ],
)
def test_the_controller_cannot_vouch_for_itself(
    grant: CapabilityGrantSpec, approval: ApprovalSpec | None, why: str
) -> None:
    problem = link_problem("caretaker-grant-1", grant, CREATED, approval)
    assert problem is not None
    assert why in problem


def test_a_grant_named_otherwise_than_its_approval_is_not_vouched_for() -> None:
    problem = link_problem("elsewhere", linked(), CREATED, request())
    assert problem is not None
    assert "not this grant's name" in problem

"""Does this Approval authorise this step now? The rules the executor applies before it acts
on an approved request: the decision in ``spec``, the ledger's record of it, and the bond to
one plan uid, step, attempt and request. Every doubt fails closed."""

from __future__ import annotations

from dataclasses import replace
from datetime import datetime, timedelta
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from minds.domain.approvals import Asker, Recorded, Verdict, authorises
from minds.domain.resources.approval import ApprovalKind, ApprovalSpec
from tests.unit.authority.test_approvals import EXPIRES, NOW, origin
from tests.unit.authority.test_approvals import spec as request

PLAN_UID = "6f1c-uid"
ASKER = Asker(
    plan_uid=PLAN_UID,
    step="P1",
    attempt=1,
    kind=ApprovalKind.ACTION,
    capability="service.restart",
    target="prod/atlas",
)
OWNERS = [PLAN_UID]
SEEN = Recorded(approved_at=NOW - timedelta(minutes=1))


def spec(**over: Any) -> ApprovalSpec:
    """The request ASKER raised (test_approvals' request, bound to the plan's uid)."""
    bound = {"origin": origin(planUid=PLAN_UID).model_dump(by_alias=True)}
    return request(**(bound | over))


def approved(**over: Any) -> ApprovalSpec:
    return spec(decision="Approved", decidedBy="alice", **over)


def test_an_approval_recorded_in_time_for_this_step_authorises_it() -> None:
    ruling = authorises(approved(), OWNERS, ASKER, SEEN, NOW)
    assert ruling.verdict is Verdict.ACT
    assert "alice" in ruling.reason


def test_nobody_decided_yet_means_wait() -> None:
    assert authorises(spec(), OWNERS, ASKER, Recorded(), NOW).verdict is Verdict.WAIT


def test_a_decision_not_yet_recorded_by_the_controller_means_wait() -> None:
    # The decision is in spec, but the controller has not derived it yet: no acting on it.
    assert authorises(approved(), OWNERS, ASKER, Recorded(), NOW).verdict is Verdict.WAIT


def test_a_denial_refuses_with_the_approver_and_note() -> None:
    denied = spec(decision="Denied", decidedBy="bob", note="freeze")
    ruling = authorises(denied, OWNERS, ASKER, Recorded(), NOW)
    assert ruling.verdict is Verdict.DENIED
    assert ruling.reason == "bob: freeze"


@pytest.mark.parametrize(
    "recorded",
    [
        pytest.param(replace(SEEN, withdrawn=True), id="withdrawn-after-approval"),
        pytest.param(Recorded(withdrawn=True), id="withdrawn"),
    ],
)
def test_a_withdrawal_in_the_ledger_ends_it_whatever_spec_says(recorded: Recorded) -> None:
    assert authorises(approved(), OWNERS, ASKER, recorded, NOW).verdict is Verdict.WITHDRAWN


def test_an_expiry_in_the_ledger_ends_it() -> None:
    ruling = authorises(approved(), OWNERS, ASKER, Recorded(expired=True), NOW)
    assert ruling.verdict is Verdict.EXPIRED


def test_an_approval_never_recorded_before_the_deadline_expires() -> None:
    assert authorises(approved(), OWNERS, ASKER, Recorded(), EXPIRES).verdict is Verdict.EXPIRED


def test_an_approval_recorded_at_or_after_the_deadline_does_not_count() -> None:
    late = Recorded(approved_at=EXPIRES)
    assert authorises(approved(), OWNERS, ASKER, late, NOW).verdict is Verdict.EXPIRED


def test_without_a_decision_the_deadline_expires_it() -> None:
    assert authorises(spec(), OWNERS, ASKER, Recorded(), EXPIRES).verdict is Verdict.EXPIRED


@pytest.mark.parametrize(
    ("asker", "owners", "why"),
    [
        pytest.param(
            replace(ASKER, plan_uid="7a2d-uid"), ["7a2d-uid"], "another plan", id="re-created-plan"
        ),
        pytest.param(ASKER, [], "not owned by this plan", id="no-owner"),
        pytest.param(ASKER, ["7a2d-uid"], "not owned by this plan", id="owner-rewritten"),
        pytest.param(replace(ASKER, step="P2"), OWNERS, "raised for P1", id="other-step"),
        pytest.param(replace(ASKER, attempt=2), OWNERS, "attempt 1", id="other-attempt"),
        pytest.param(replace(ASKER, target="prod/other"), OWNERS, "not for", id="other-target"),
        pytest.param(
            replace(ASKER, capability="service.scale"), OWNERS, "not for", id="other-capability"
        ),
        pytest.param(replace(ASKER, kind=ApprovalKind.GRANT), OWNERS, "not for", id="other-kind"),
    ],
)
def test_an_approval_bound_to_anything_else_is_not_ours(
    asker: Asker, owners: list[str], why: str
) -> None:
    ruling = authorises(approved(), owners, asker, SEEN, NOW)
    assert ruling.verdict is Verdict.NOT_OURS
    assert why in ruling.reason


def test_an_approval_without_a_plan_uid_is_not_ours() -> None:
    legacy = approved(origin=origin().model_dump(by_alias=True))
    assert authorises(legacy, OWNERS, ASKER, SEEN, NOW).verdict is Verdict.NOT_OURS


@given(
    decision=st.sampled_from([None, "Approved", "Denied"]),
    approved_at=st.none() | st.just(NOW - timedelta(minutes=1)) | st.just(EXPIRES),
    expired=st.booleans(),
    withdrawn=st.booleans(),
    own=st.booleans(),
    offset=st.integers(-7200, 7200),
)
def test_acting_needs_every_condition_at_once(
    decision: str | None,
    approved_at: datetime | None,
    expired: bool,
    withdrawn: bool,
    own: bool,
    offset: int,
) -> None:
    s = spec(decision=decision, decidedBy="alice") if decision else spec()
    recorded = Recorded(approved_at=approved_at, expired=expired, withdrawn=withdrawn)
    now = NOW + timedelta(seconds=offset * 30)
    acts = authorises(s, OWNERS if own else [], ASKER, recorded, now).verdict is Verdict.ACT
    assert acts == (
        decision == "Approved"
        and approved_at is not None
        and approved_at < EXPIRES
        and not expired
        and not withdrawn
        and own
    )

"""People's corrections as pure rules: stopping a cancelled plan, abandoning or resuming an
intention, revoking a commitment; each names the person."""

from __future__ import annotations

from datetime import timedelta

import pytest

from minds.domain.corrections import (
    after_cancel,
    correct_intention,
    revocations,
    stop_plan,
    tried_before_cancel,
)
from minds.domain.intentions import IntentionStatus
from minds.domain.planning.model import (
    Cancellation,
    Lease,
    Plan,
    PlanStatus,
    StepState,
    StepStatus,
)
from minds.domain.resources.mind import IntentionCorrection
from minds.domain.resources.plan import PlanResourceStatus
from minds.domain.volition.commitments import CommitmentContext, CommitmentState, commitment_state
from minds.domain.volition.decisions import DecisionKind
from minds.domain.volition.reconsideration import Verdict
from minds.domain.volition.wants import WantStatus
from tests.unit.volition.builders import NS, T0, a_spec, a_want, an_intention

S = IntentionStatus
BY_ALICE = Cancellation(by="alice", reason="handled by hand")


def correction(action: str, intention: str = "int-1") -> IntentionCorrection:
    return IntentionCorrection.model_validate(
        {"intention": intention, "action": action, "by": "alice", "reason": "handled by hand"}
    )


def running(*steps: StepState) -> PlanResourceStatus:
    return PlanResourceStatus(phase=PlanStatus.EXECUTING, steps=list(steps))


def test_a_plan_is_stopped_with_every_open_step_cancelled_in_the_persons_name() -> None:
    status = running(
        StepState(key="R1", status=StepStatus.COMPLETED),
        StepState(key="P1", status=StepStatus.AWAITING_APPROVAL),
        StepState(key="V1", status=StepStatus.PENDING),
    )
    stop = stop_plan(status, BY_ALICE, T0)
    assert stop.wait_until is None
    assert stop.status is not None
    assert stop.status.phase is PlanStatus.ABANDONED
    assert [s.status for s in stop.status.steps] == [
        StepStatus.COMPLETED,
        StepStatus.CANCELLED,
        StepStatus.CANCELLED,
    ]
    assert stop.status.reason == "cancelled by alice: handled by hand"


def look_then_restart() -> Plan:
    atlas = {"namespace": NS, "kind": "Deployment", "name": "atlas-worker"}
    return Plan.model_validate(
        {
            "objective": "restart atlas-worker",
            "origin": "template",
            "strategy": "direct",
            "steps": [
                {
                    "key": "R1",
                    "title": "look",
                    "kind": "capability",
                    "capability": "service.status",
                    "parameters": atlas,
                },
                {
                    "key": "P1",
                    "title": "restart",
                    "kind": "capability",
                    "capability": "service.restart",
                    "parameters": atlas,
                    "dependsOn": ["R1"],
                },
            ],
        }
    )


def test_a_plan_cancelled_after_it_acted_leaves_its_strategy_failed() -> None:
    done = StepStatus.COMPLETED
    acted = running(
        StepState(key="R1", status=done),
        StepState(key="P1", status=done),
        StepState(key="V1", status=StepStatus.CANCELLED),
    )
    intention = an_intention(failed_strategies=["other"])
    assert tried_before_cancel(intention, look_then_restart(), acted) == ("other", "direct")
    # Recorded once.
    again = an_intention(failed_strategies=["direct"])
    assert tried_before_cancel(again, look_then_restart(), acted) is None


def test_a_plan_cancelled_before_it_acted_leaves_nothing_failed() -> None:
    looked_only = running(
        StepState(key="R1", status=StepStatus.COMPLETED),
        StepState(key="P1", status=StepStatus.CANCELLED),
    )
    assert tried_before_cancel(an_intention(), look_then_restart(), looked_only) is None


def test_a_step_under_a_live_lease_is_waited_for_and_an_expired_one_is_not() -> None:
    lease = Lease(holder="a", expires_at=T0 + timedelta(seconds=90))
    acting = StepState(key="P1", status=StepStatus.EXECUTING, lease=lease)
    assert stop_plan(running(acting), BY_ALICE, T0).wait_until == lease.expires_at
    after = stop_plan(running(acting), BY_ALICE, lease.expires_at)
    assert after.status is not None
    assert after.status.steps[0].status is StepStatus.CANCELLED
    assert "see the ledger" in (after.status.steps[0].reason or "")


def test_abandon_suppresses_the_served_want_and_names_the_person() -> None:
    want = a_want()
    other = a_want(subject="ops/other", target="ops/other")
    judged = correct_intention(an_intention(), correction("abandon"), [want, other], T0)
    assert judged.verdict is Verdict.ABANDON
    assert judged.status is S.ABANDONED
    assert [w.id for w in judged.wants] == [want.id]
    assert judged.wants[0].status is WantStatus.SUPPRESSED
    first = judged.decisions[0]
    assert first.kind is DecisionKind.RECONSIDERATION
    assert first.reason == "alice said abandon: handled by hand"
    assert first.inputs["by"] == "alice"
    assert first.inputs["trigger"] == "operator_correction"


@pytest.mark.parametrize("status", [S.BLOCKED, S.SUSPENDED])
def test_resume_brings_back_a_blocked_or_suspended_intention(status: S) -> None:
    judged = correct_intention(an_intention(status=status), correction("resume"), [a_want()], T0)
    assert judged.status is S.ACTIVE
    assert judged.wants == ()


@pytest.mark.parametrize(
    ("status", "action"),
    [(S.ACTIVE, "resume"), (S.FULFILLED, "abandon"), (S.ABANDONED, "resume")],
)
def test_a_correction_that_changes_nothing_says_why(status: S, action: str) -> None:
    judged = correct_intention(an_intention(status=status), correction(action), [a_want()], T0)
    assert judged.status is None
    assert judged.verdict is Verdict.KEEP
    assert judged.reason.startswith(f"alice said {action}: handled by hand (")


def test_a_revocation_names_the_person_and_leaves_an_irrevocable_commitment() -> None:
    commitments = [
        {"name": "restart-atlas", "mode": "do", "capability": "service.restart",
         "target": "ops/atlas-worker"},
        {"name": "never-delete", "mode": "refrain", "capability": "service.restart",
         "target": "ops/db-*", "revocable": False},
    ]  # fmt: skip
    revoked = [
        {"commitment": name, "by": "alice", "reason": "no longer needed"}
        for name in ("restart-atlas", "never-delete")
    ]
    spec = a_spec(commitments=commitments, commitmentRevocations=revoked)
    context = CommitmentContext(spec=spec, revocations=revocations(spec))
    first, second = spec.commitments
    assert commitment_state(first, T0, context) == (
        CommitmentState.REVOKED,
        "revoked by alice: no longer needed",
    )
    state, reason = commitment_state(second, T0, context)
    assert state is CommitmentState.ACTIVE
    assert "revocation refused" in reason


def test_a_cancelled_plans_wants_are_suppressed_in_the_persons_name() -> None:
    want, done = a_want(), a_want(subject="ops/other", target="ops/other")
    wants, decisions = after_cancel(an_intention(status=S.ABANDONED), BY_ALICE, [want, done], T0)
    assert [w.id for w in wants] == [want.id]
    assert wants[0].status is WantStatus.SUPPRESSED
    assert decisions[0].reason == "plan of intention int-1 cancelled by alice: handled by hand"

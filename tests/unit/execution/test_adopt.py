"""Adopting what happened: every outcome of acting, verifying, monitoring, preconditions,
waits and approvals, with the ledger effects that must follow it."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest

from minds.domain.execution.adopt import (
    ATTENTION_RETRY,
    Acted,
    ActKind,
    Effect,
    EffectKind,
    Looked,
    after_act,
    after_approval,
    after_monitor,
    after_precondition,
    after_verify,
    after_wait,
    judge,
    summarise_findings,
    verify_window,
)
from minds.domain.execution.machine import retry_delay
from minds.domain.planning.model import (
    Check,
    Lease,
    Observation,
    Plan,
    Step,
    StepState,
    StepStatus,
)
from tests.unit.planning.builders import (
    NOW,
    expectation,
    monitor,
    plan,
    request,
    restart,
    status,
    status_check,
    summary,
    verify,
    wait,
)

S = StepStatus
LEASE = Lease(holder="controller-a", expires_at=NOW + timedelta(seconds=90))


def running(state: str = "running") -> Looked:
    return Looked(True, state == "running", f"state {state}", {"state": state})


UNOBSERVABLE = Looked(False, False, "not observable: the service timed out", {})
DENIED = Looked(False, False, "not observable: policy denies service.status", {}, permanent=True)


def executing(key: str, attempts: int = 1, **over: Any) -> StepState:
    return StepState(
        key=key, status=S.EXECUTING, attempts=attempts, lease=LEASE, started_at=NOW, **over
    )


def only(p: Plan, key: str) -> Step:
    found = p.step(key)
    assert found is not None
    return found


def kinds(effects: list[Any]) -> list[EffectKind]:
    return [e.kind for e in effects]


# -- acting ----------------------------------------------------------------------------------


def test_executed_completes_and_opens_a_prediction_for_the_expectation() -> None:
    p = plan(restart(expectation=expectation(windowSeconds=45, confidence=0.7)))
    acted = Acted(ActKind.EXECUTED, "restart requested", {"x": 1}, execution="17")
    new, effects = after_act(only(p, "P1"), executing("P1"), acted, NOW)
    assert new.status is S.COMPLETED
    assert new.lease is None
    assert new.finished_at == NOW
    assert new.execution_ref == "17"
    assert new.observation is not None
    assert new.observation.summary == "restart requested"
    [opened] = effects
    assert opened.kind is EffectKind.OPEN_PREDICTION
    assert opened.step == "P1"
    assert opened.data["window_start"] == NOW
    assert opened.data["window_end"] == NOW + timedelta(seconds=45)
    assert opened.data["confidence"] == 0.7
    assert opened.data["execution"] == "17"
    assert opened.data["check"] == Check.model_validate(status_check()).to_k8s()
    assert opened.data["description"] == "atlas runs normally within 60 s"


def test_executed_without_an_expectation_predicts_nothing() -> None:
    p = plan(status())
    new, effects = after_act(
        only(p, "D1"), executing("D1"), Acted(ActKind.EXECUTED, "ok", execution="3"), NOW
    )
    assert new.status is S.COMPLETED
    assert effects == []


@pytest.mark.parametrize(
    ("step", "waiting"),
    [(restart(), S.AWAITING_APPROVAL), (request(), S.AWAITING_GRANT)],
)
def test_pending_waits_for_a_person_blocks_the_intention_and_forms_a_subordinate(
    step: dict[str, Any], waiting: StepStatus
) -> None:
    p = plan(step)
    key = p.steps[0].key
    acted = Acted(ActKind.PENDING, "waiting for approval ap-1", approval="ap-1")
    new, effects = after_act(p.steps[0], executing(key), acted, NOW)
    assert new.status is waiting
    assert new.approval_ref == "ap-1"
    assert new.lease is None
    assert new.finished_at is None
    assert kinds(effects) == [EffectKind.BLOCK_INTENTION, EffectKind.FORM_SUBORDINATE]
    assert effects[1].data == {"approval": "ap-1"}


def test_deferred_at_the_attention_cap_asks_again_in_ten_minutes() -> None:
    p = plan(request())
    acted = Acted(ActKind.DEFERRED, "operator attention cap reached (5 open requests)")
    new, effects = after_act(only(p, "R1"), executing("R1"), acted, NOW)
    assert new.status is S.WAITING
    assert new.next_run_at == NOW + timedelta(minutes=10) == NOW + ATTENTION_RETRY
    assert new.lease is None
    assert "attention cap" in (new.reason or "")
    assert effects == []


def test_denied_fails_the_step() -> None:
    p = plan(restart())
    acted = Acted(ActKind.DENIED, "policy denies service.restart")
    new, effects = after_act(only(p, "P1"), executing("P1"), acted, NOW)
    assert new.status is S.FAILED
    assert new.reason == "denied: policy denies service.restart"
    assert new.finished_at == NOW
    assert effects == []


@pytest.mark.parametrize("attempt", [1, 2])
def test_a_failed_idempotent_step_retries_with_backoff_while_attempts_remain(
    attempt: int,
) -> None:
    p = plan(status(maxAttempts=3))
    acted = Acted(ActKind.FAILED, "the API timed out")
    new, effects = after_act(only(p, "D1"), executing("D1", attempt), acted, NOW)
    assert new.status is S.WAITING
    assert new.next_run_at == NOW + retry_delay(attempt)
    assert new.reason == f"attempt {attempt} failed: the API timed out"
    assert effects == []


def test_a_failed_step_fails_when_its_attempts_are_used_up() -> None:
    p = plan(status(maxAttempts=3))
    acted = Acted(ActKind.FAILED, "the API timed out", execution="9")
    new, _ = after_act(only(p, "D1"), executing("D1", 3), acted, NOW)
    assert new.status is S.FAILED
    assert new.reason == "failed: the API timed out"
    assert new.execution_ref == "9"


def test_a_non_idempotent_step_has_one_attempt() -> None:
    p = plan(restart())
    new, _ = after_act(only(p, "P1"), executing("P1"), Acted(ActKind.FAILED, "no such"), NOW)
    assert new.status is S.FAILED


# -- verifying -------------------------------------------------------------------------------

WINDOW = 60


def verified_plan(interval: int = 10) -> Plan:
    return plan(
        restart(expectation=expectation(windowSeconds=WINDOW)), verify(intervalSeconds=interval)
    )


def verify_at(
    looked: Looked, seconds_after: float, interval: int = 10
) -> tuple[StepState, list[Effect]]:
    p = verified_plan(interval)
    done = StepState(key="P1", status=S.COMPLETED, finished_at=NOW)
    at = NOW + timedelta(seconds=seconds_after)
    states = {"P1": done, "V1": executing("V1")}
    return after_verify(p, only(p, "V1"), states["V1"], states, looked, at)


def test_the_window_starts_when_the_verified_step_completed() -> None:
    p = verified_plan()
    done = StepState(key="P1", status=S.COMPLETED, finished_at=NOW)
    assert verify_window(p, only(p, "V1"), {"P1": done}) == (
        NOW,
        NOW + timedelta(seconds=WINDOW),
    )


@pytest.mark.parametrize("seconds_after", [0, 30, WINDOW, WINDOW + 100])
def test_a_check_that_holds_confirms_the_prediction(seconds_after: int) -> None:
    new, effects = verify_at(running(), seconds_after)
    assert new.status is S.COMPLETED
    assert new.observation is not None
    assert new.observation.holds is True
    [confirm] = effects
    assert confirm.kind is EffectKind.CONFIRM_PREDICTION
    assert confirm.step == "P1"  # the prediction belongs to the step that expected


def test_not_yet_waits_and_looks_again_after_the_interval() -> None:
    new, effects = verify_at(running("degraded"), 10)
    assert new.status is S.WAITING
    assert new.next_run_at == NOW + timedelta(seconds=20)
    assert new.lease is None
    assert new.observation is not None
    assert new.observation.holds is False
    assert effects == []


def test_the_last_look_is_when_the_window_closes() -> None:
    new, _ = verify_at(running("degraded"), WINDOW - 1)
    assert new.status is S.WAITING
    assert new.next_run_at == NOW + timedelta(seconds=WINDOW)


def test_the_window_closing_without_the_check_holding_refutes() -> None:
    new, effects = verify_at(running("degraded"), WINDOW)
    assert new.status is S.FAILED
    assert new.reason == "expectation failed: the check did not hold within the window"
    [refute] = effects
    assert refute.kind is EffectKind.REFUTE_PREDICTION
    assert refute.step == "P1"


def test_an_observation_policy_refuses_expires_the_prediction_at_once() -> None:
    new, effects = verify_at(DENIED, 0)
    assert new.status is S.FAILED
    assert (new.reason or "").startswith("outcome unverified: ")
    assert new.observation is not None
    assert new.observation.holds is None  # unknown, not false
    assert kinds(effects) == [EffectKind.EXPIRE_PREDICTION]


def test_an_observation_that_fails_for_now_is_tried_again_within_the_window() -> None:
    new, effects = verify_at(UNOBSERVABLE, 5)
    assert new.status is S.WAITING
    assert effects == []


def test_unobservable_at_the_end_of_the_window_expires_rather_than_refutes() -> None:
    new, effects = verify_at(UNOBSERVABLE, WINDOW)
    assert new.status is S.FAILED
    assert (new.reason or "").startswith("outcome unverified")
    assert kinds(effects) == [EffectKind.EXPIRE_PREDICTION]


# -- monitoring ------------------------------------------------------------------------------


def watched(**over: Any) -> Step:
    return only(
        plan(monitor(stableSeconds=60, deadlineSeconds=300, intervalSeconds=20, **over)), "M1"
    )


def test_a_monitor_starts_counting_when_the_check_first_holds() -> None:
    new, effects = after_monitor(watched(), executing("M1"), running(), NOW)
    assert new.status is S.WAITING
    assert new.holds_since == NOW
    assert new.next_run_at == NOW + timedelta(seconds=20)
    assert effects == []


def test_a_monitor_completes_when_the_check_held_for_the_stable_period() -> None:
    state = executing("M1", holds_since=NOW)
    new, _ = after_monitor(watched(), state, running(), NOW + timedelta(seconds=60))
    assert new.status is S.COMPLETED
    assert new.holds_since == NOW


def test_a_monitor_is_not_stable_a_moment_too_early() -> None:
    state = executing("M1", holds_since=NOW)
    new, _ = after_monitor(watched(), state, running(), NOW + timedelta(seconds=59))
    assert new.status is S.WAITING
    # the next look is exactly when the stable period would end
    assert new.next_run_at == NOW + timedelta(seconds=60)


def test_an_interruption_starts_the_stable_period_again() -> None:
    state = executing("M1", holds_since=NOW)
    at = NOW + timedelta(seconds=40)
    new, _ = after_monitor(watched(), state, running("degraded"), at)
    assert new.status is S.WAITING
    assert new.holds_since is None
    held, _ = after_monitor(watched(), new, running(), at + timedelta(seconds=20))
    assert held.holds_since == at + timedelta(seconds=20)


def test_a_monitor_fails_at_its_deadline_counted_from_its_start() -> None:
    state = executing("M1")  # started at NOW
    new, _ = after_monitor(watched(), state, running("degraded"), NOW + timedelta(seconds=300))
    assert new.status is S.FAILED
    assert new.reason == "not stable before the deadline"
    early, _ = after_monitor(watched(), state, running("degraded"), NOW + timedelta(seconds=299))
    assert early.status is S.WAITING
    assert early.next_run_at == NOW + timedelta(seconds=300)  # never past the deadline


def test_a_monitor_that_policy_forbids_to_observe_fails_at_once() -> None:
    new, _ = after_monitor(watched(), executing("M1"), DENIED, NOW)
    assert new.status is S.FAILED
    assert (new.reason or "").startswith("not observable")


def test_a_monitor_tries_again_when_an_observation_fails_for_now() -> None:
    state = executing("M1", holds_since=NOW)
    new, _ = after_monitor(watched(), state, UNOBSERVABLE, NOW + timedelta(seconds=20))
    assert new.status is S.WAITING
    assert new.holds_since is None  # unknown does not count as holding


# -- preconditions ---------------------------------------------------------------------------


def guarded(fulfils: bool = False) -> Step:
    pre = {
        "description": "atlas is not running normally",
        "check": status_check(comparison="not_equals"),
        "fulfilsIntentionOnSkip": fulfils,
    }
    return only(plan(restart(precondition=pre)), "P1")


# The precondition reads "not running normally": the unit degraded holds it, running does not.
PRE_HOLDS = Looked(True, True, "state degraded", {"state": "degraded"})
PRE_FAILS = Looked(True, False, "state running", {"state": "running"})


def test_a_precondition_that_holds_lets_the_step_act() -> None:
    assert after_precondition(guarded(), executing("P1"), PRE_HOLDS, NOW) is None


def test_a_precondition_that_no_longer_holds_skips_the_step() -> None:
    decided = after_precondition(guarded(), executing("P1"), PRE_FAILS, NOW)
    assert decided is not None
    new, effects = decided
    assert new.status is S.SKIPPED
    assert new.reason == "precondition does not hold: atlas is not running normally"
    assert new.attempts == 0  # the claim counted an attempt; a skipped step never acted
    assert new.lease is None
    assert effects == []


def test_a_skip_fulfils_the_intention_when_the_precondition_says_so() -> None:
    decided = after_precondition(guarded(fulfils=True), executing("P1"), PRE_FAILS, NOW)
    assert decided is not None
    assert kinds(decided[1]) == [EffectKind.FULFIL_INTENTION]


@pytest.mark.parametrize("looked", [UNOBSERVABLE, DENIED])
def test_a_precondition_that_cannot_be_observed_blocks_the_step(looked: Looked) -> None:
    decided = after_precondition(guarded(fulfils=True), executing("P1"), looked, NOW)
    assert decided is not None
    new, effects = decided
    assert new.status is S.BLOCKED
    assert (new.reason or "").startswith("precondition not observable")
    assert effects == []


# -- waits -----------------------------------------------------------------------------------


def test_a_wait_waits_until_its_period_from_its_start_is_over() -> None:
    step = only(plan(wait("W1", waitSeconds=30)), "W1")
    started = executing("W1")
    new, _ = after_wait(step, started, NOW + timedelta(seconds=1))
    assert new.status is S.WAITING
    assert new.next_run_at == NOW + timedelta(seconds=30)
    assert new.lease is None
    done, _ = after_wait(step, started, NOW + timedelta(seconds=30))
    assert done.status is S.COMPLETED


# -- approvals -------------------------------------------------------------------------------


def awaiting(key: str, waiting: StepStatus = S.AWAITING_APPROVAL) -> StepState:
    return StepState(key=key, status=waiting, attempts=1, approval_ref="ap-1", started_at=NOW)


@pytest.mark.parametrize("phase", ["Pending", "Approved"])
def test_an_undecided_or_not_yet_executed_approval_keeps_the_step_waiting(phase: str) -> None:
    step = only(plan(restart()), "P1")
    assert after_approval(step, awaiting("P1"), phase, "", NOW, None) is None


def test_an_executed_grant_request_completes_the_step_and_resumes_the_intention() -> None:
    step = only(plan(request()), "R1")
    decided = after_approval(step, awaiting("R1", S.AWAITING_GRANT), "Executed", "", NOW, None)
    assert decided is not None
    new, effects = decided
    assert new.status is S.COMPLETED
    assert new.grant_ref == "ap-1"
    assert kinds(effects) == [EffectKind.RESUME_INTENTION, EffectKind.FULFIL_SUBORDINATE]


def test_an_approved_and_executed_action_completes_with_its_prediction() -> None:
    step = only(plan(restart()), "P1")
    outcome = Acted(ActKind.EXECUTED, "restart requested", execution="5")
    decided = after_approval(step, awaiting("P1"), "Executed", "", NOW, outcome)
    assert decided is not None
    new, effects = decided
    assert new.status is S.COMPLETED
    assert new.execution_ref == "5"
    assert kinds(effects) == [
        EffectKind.RESUME_INTENTION,
        EffectKind.FULFIL_SUBORDINATE,
        EffectKind.OPEN_PREDICTION,
    ]


def test_an_approved_action_that_failed_fails_the_step() -> None:
    step = only(plan(restart()), "P1")
    outcome = Acted(ActKind.FAILED, "no such deployment", execution="5")
    decided = after_approval(step, awaiting("P1"), "Executed", "", NOW, outcome)
    assert decided is not None
    assert decided[0].status is S.FAILED


@pytest.mark.parametrize(
    ("phase", "reason"),
    [
        ("Denied", "approval denied: alice: not now"),
        ("Withdrawn", "approval withdrawn: alice: not now"),
        ("Expired", "approval expired: nobody decided in time"),
    ],
)
def test_an_approval_that_ends_otherwise_fails_the_step(phase: str, reason: str) -> None:
    step = only(plan(restart()), "P1")
    decided = after_approval(step, awaiting("P1"), phase, "alice: not now", NOW, None)
    assert decided is not None
    new, effects = decided
    assert new.status is S.FAILED
    assert new.reason == reason
    assert new.finished_at == NOW
    assert kinds(effects) == [EffectKind.RESUME_INTENTION]


# -- checks and findings ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("fields", "holds"),
    [({"state": "running"}, True), ({"state": "degraded"}, False), ({}, False)],
)
def test_judge_needs_the_field_present_and_the_comparison_true(
    fields: dict[str, Any], holds: bool
) -> None:
    assert judge(Check.model_validate(status_check()), fields) is holds


def test_a_missing_field_never_holds_even_for_not_equals() -> None:
    """A precondition "not running" must not be taken as met by a report without a state."""
    check = Check.model_validate(status_check(comparison="not_equals"))
    assert judge(check, {"state": "degraded"}) is True
    assert judge(check, {"ready": False}) is False


def test_summarise_findings_joins_what_each_dependency_saw() -> None:
    p = plan(status(), status(key="D2", title="read memory"), summary("D1", "D2"))
    states = {
        "D1": StepState(
            key="D1", status=S.COMPLETED, observation=Observation(summary="atlas is degraded")
        ),
        "D2": StepState(key="D2", status=S.FAILED, reason="failed: timed out"),
        "S1": executing("S1"),
    }
    text = summarise_findings(p, only(p, "S1"), states)
    assert text == "read atlas status: atlas is degraded; read memory: failed: timed out"

"""The step state machine: every bookkeeping and work rule, as pure functions of the clock."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest

from minds.domain.execution.machine import (
    INTERNAL_LEASE,
    LEASE_GRACE,
    Work,
    WorkKind,
    claim,
    claim_approved,
    lease_for,
    next_work,
    retry_delay,
    settle,
    states,
    summarise,
)
from minds.domain.planning.model import (
    Lease,
    Plan,
    PlanStatus,
    Step,
    StepKind,
    StepState,
    StepStatus,
)
from minds.domain.resources.plan import PlanResourceStatus
from tests.unit.planning.builders import (
    NOW,
    monitor,
    plan,
    request,
    restart,
    status,
    summary,
    verify,
    wait,
)

S = StepStatus
TIMEOUTS = {"service.status": 15, "service.restart": 60}
HOLDER = "controller-a"


def st(key: str, status_: StepStatus = S.PENDING, **over: Any) -> StepState:
    return StepState(key=key, status=status_, **over)


def plan_status(*steps: StepState, phase: PlanStatus = PlanStatus.VALIDATED) -> PlanResourceStatus:
    return PlanResourceStatus(phase=phase, steps=list(steps))


def read(key: str, *depends_on: str) -> dict[str, Any]:
    return status(key=key, dependsOn=list(depends_on))


def statuses(status_: PlanResourceStatus) -> dict[str, StepStatus]:
    return {s.key: s.status for s in status_.steps}


# -- settle: pending -> ready ----------------------------------------------------------------


def test_a_step_without_dependencies_is_ready() -> None:
    settled = settle(plan(read("D1")), plan_status(st("D1")), NOW)
    assert statuses(settled) == {"D1": S.READY}


def test_ready_when_every_dependency_completed_or_was_skipped() -> None:
    p = plan(read("D1"), read("D2"), read("D3", "D1", "D2"))
    settled = settle(p, plan_status(st("D1", S.COMPLETED), st("D2", S.SKIPPED), st("D3")), NOW)
    assert statuses(settled)["D3"] is S.READY


@pytest.mark.parametrize(
    "other",
    [S.PENDING, S.READY, S.EXECUTING, S.WAITING, S.AWAITING_APPROVAL, S.AWAITING_GRANT],
)
def test_not_ready_while_a_dependency_is_unfinished(other: StepStatus) -> None:
    p = plan(read("D1"), read("D2"), read("D3", "D1", "D2"))
    settled = settle(p, plan_status(st("D1", S.COMPLETED), st("D2", other), st("D3")), NOW)
    assert statuses(settled)["D3"] is S.PENDING


# -- settle: pending -> cancelled ------------------------------------------------------------


@pytest.mark.parametrize("broken", [S.FAILED, S.CANCELLED])
def test_cancelled_when_a_dependency_failed_or_was_cancelled(broken: StepStatus) -> None:
    p = plan(read("D1"), read("D2", "D1"))
    settled = settle(p, plan_status(st("D1", broken), st("D2")), NOW)
    d2 = states(settled)["D2"]
    assert d2.status is S.CANCELLED
    assert d2.reason == "a step it depends on did not complete"
    assert d2.finished_at == NOW


def test_cancellation_runs_down_the_whole_chain_in_one_settle() -> None:
    p = plan(read("D1"), read("D2", "D1"), read("D3", "D2"))
    settled = settle(p, plan_status(st("D1", S.FAILED), st("D2"), st("D3")), NOW)
    assert statuses(settled) == {"D1": S.FAILED, "D2": S.CANCELLED, "D3": S.CANCELLED}


def test_settle_reaches_a_fixed_point_whatever_the_order_of_the_steps() -> None:
    # dependents listed before what they depend on
    p = plan(read("D3", "D2"), read("D2", "D1"), read("D1"))
    settled = settle(p, plan_status(st("D3"), st("D2"), st("D1", S.FAILED)), NOW)
    assert statuses(settled) == {"D3": S.CANCELLED, "D2": S.CANCELLED, "D1": S.FAILED}
    ready = settle(p, plan_status(st("D3"), st("D2"), st("D1", S.SKIPPED)), NOW)
    # D2 becomes ready; D3 still waits for D2 to finish
    assert statuses(ready) == {"D3": S.PENDING, "D2": S.READY, "D1": S.SKIPPED}


def test_a_step_after_a_blocked_step_waits_for_its_release() -> None:
    """Blocked is not final: a person may release the step, and what follows it must still
    be able to run then. It stays pending (and the plan blocked) instead of being cancelled."""
    p = plan(restart(), verify())
    blocked = plan_status(st("P1", S.BLOCKED, reason="outcome unknown"), st("V1"))
    settled = settle(p, blocked, NOW)
    assert statuses(settled) == {"P1": S.BLOCKED, "V1": S.PENDING}
    assert settled.phase is PlanStatus.BLOCKED
    # released, re-run and completed: the verify step becomes ready
    done = settle(p, plan_status(st("P1", S.COMPLETED, finished_at=NOW), st("V1")), NOW)
    assert statuses(done)["V1"] is S.READY


# -- settle: waiting -> ready ----------------------------------------------------------------


def test_a_wait_is_over_when_its_next_run_time_has_come() -> None:
    p = plan(wait("W1"))
    due = settle(p, plan_status(st("W1", S.WAITING, next_run_at=NOW)), NOW)
    assert statuses(due)["W1"] is S.READY


def test_a_wait_is_not_over_before_its_next_run_time() -> None:
    p = plan(wait("W1"))
    early = plan_status(st("W1", S.WAITING, next_run_at=NOW + timedelta(seconds=1)))
    assert statuses(settle(p, early, NOW))["W1"] is S.WAITING


def test_settle_changes_nothing_else() -> None:
    p = plan(read("D1"), read("D2"))
    before = plan_status(
        st("D1", S.EXECUTING, lease=Lease(holder=HOLDER, expires_at=NOW - timedelta(1))),
        st("D2", S.AWAITING_APPROVAL, approval_ref="a-1"),
        phase=PlanStatus.AWAITING_APPROVAL,
    )
    assert settle(p, before, NOW).steps == before.steps


# -- the plan's phase, progress and what it waits on -----------------------------------------


@pytest.mark.parametrize(
    ("steps", "phase"),
    [
        ((S.COMPLETED, S.SKIPPED), PlanStatus.COMPLETED),
        ((S.COMPLETED, S.FAILED), PlanStatus.FAILED),
        ((S.FAILED, S.BLOCKED), PlanStatus.FAILED),
        ((S.BLOCKED, S.EXECUTING), PlanStatus.BLOCKED),
        ((S.EXECUTING, S.AWAITING_APPROVAL), PlanStatus.EXECUTING),
        ((S.AWAITING_APPROVAL, S.READY), PlanStatus.AWAITING_APPROVAL),
        ((S.AWAITING_GRANT, S.WAITING), PlanStatus.AWAITING_APPROVAL),
        ((S.READY, S.WAITING), PlanStatus.EXECUTING),
        ((S.WAITING, S.COMPLETED), PlanStatus.WAITING),
        ((S.PENDING, S.PENDING), PlanStatus.VALIDATED),
    ],
)
def test_phase_follows_the_steps(steps: tuple[StepStatus, StepStatus], phase: PlanStatus) -> None:
    p = plan(read("D1"), read("D2"))
    summary_ = summarise(p, plan_status(st("D1", steps[0]), st("D2", steps[1])))
    assert summary_.phase is phase


@pytest.mark.parametrize(
    "final",
    [
        PlanStatus.COMPLETED,
        PlanStatus.FAILED,
        PlanStatus.ABANDONED,
        PlanStatus.SUPERSEDED,
        PlanStatus.DRAFT,
        PlanStatus.REPLANNING,
    ],
)
def test_finished_and_replanning_phases_are_sticky(final: PlanStatus) -> None:
    p = plan(read("D1"))
    assert summarise(p, plan_status(st("D1", S.READY), phase=final)).phase is final


def test_progress_counts_completed_and_skipped_steps() -> None:
    p = plan(read("D1"), read("D2"), read("D3"))
    summary_ = summarise(p, plan_status(st("D1", S.COMPLETED), st("D2", S.SKIPPED), st("D3")))
    assert summary_.progress == "2/3"


@pytest.mark.parametrize(
    ("state", "waiting_on"),
    [
        (st("D2", S.AWAITING_APPROVAL, approval_ref="ap-1"), "D2: approval ap-1"),
        (st("D2", S.AWAITING_GRANT, approval_ref="gr-1"), "D2: grant request gr-1"),
        (st("D2", S.BLOCKED, reason="budget exhausted"), "D2: blocked (budget exhausted)"),
        (st("D2", S.BLOCKED), "D2: blocked (see the step)"),
        (st("D2", S.WAITING, next_run_at=NOW), None),
    ],
)
def test_waiting_on_names_the_step_and_what_a_person_must_do(
    state: StepState, waiting_on: str | None
) -> None:
    p = plan(read("D1"), read("D2"))
    assert summarise(p, plan_status(st("D1", S.COMPLETED), state)).waiting_on == waiting_on


def test_waiting_on_fits_the_column_whatever_the_reason() -> None:
    p = plan(read("D1"))
    long_reason = "precondition not observable: " + "x" * 1900
    summary_ = summarise(p, plan_status(st("D1", S.BLOCKED, reason=long_reason)))
    assert summary_.waiting_on is not None
    assert len(summary_.waiting_on) == 253
    assert summary_.waiting_on.startswith("D1: blocked (precondition not observable: x")
    # what is written is a status the API server (and the model) accepts
    PlanResourceStatus.model_validate(summary_.to_k8s())


# -- next work: claims -----------------------------------------------------------------------


def work(p: Plan, s: PlanResourceStatus, skip: frozenset[str] = frozenset()) -> Work:
    return next_work(p, s, NOW, HOLDER, TIMEOUTS, skip=skip)


def test_a_ready_step_is_claimed_with_a_lease_of_its_timeout_plus_grace() -> None:
    p = plan(read("D1"))
    w = work(p, plan_status(st("D1", S.READY)))
    assert w.kind is WorkKind.RUN
    assert w.step == "D1"
    assert w.claim is not None
    claimed = states(w.claim)["D1"]
    assert claimed.status is S.EXECUTING
    assert claimed.lease == Lease(holder=HOLDER, expires_at=NOW + timedelta(seconds=15 + 30))
    assert claimed.started_at == NOW
    assert w.claim.phase is PlanStatus.EXECUTING  # the claim is written with its summary


def test_a_claim_counts_an_attempt_for_steps_that_invoke_a_capability() -> None:
    p = plan(read("D1"), verify(key="V1", dependsOn=[]), monitor(), request())
    for key in ("D1", "V1", "M1", "R1"):
        s = plan_status(
            *(
                st(k, S.READY if k == key else S.PENDING, attempts=2)
                for k in ("D1", "V1", "M1", "R1")
            )
        )
        w = work(p, s)
        assert w.claim is not None
        assert states(w.claim)[key].attempts == 3, key


@pytest.mark.parametrize("attempts", [0, 1, 4])
def test_a_claim_of_a_wait_or_internal_step_counts_no_new_attempt(attempts: int) -> None:
    p = plan(wait("W1"))
    w = work(p, plan_status(st("W1", S.READY, attempts=attempts)))
    assert w.claim is not None
    assert states(w.claim)["W1"].attempts == max(attempts, 1)


def test_a_reclaim_keeps_when_the_step_first_started() -> None:
    p = plan(wait("W1"))
    earlier = NOW - timedelta(minutes=3)
    w = work(p, plan_status(st("W1", S.READY, attempts=1, started_at=earlier)))
    assert w.claim is not None
    assert states(w.claim)["W1"].started_at == earlier


def test_an_approved_step_is_claimed_as_the_attempt_the_person_approved() -> None:
    # The origin key of the approved action is the one the Approval was raised for: no new
    # attempt, and the Approval it waited on stays named for whoever recovers the lease.
    p = plan(restart())
    waiting = st("P1", S.AWAITING_APPROVAL, attempts=2, approval_ref="keeper-p1-x", started_at=NOW)
    later = NOW + timedelta(minutes=5)
    claimed = claim_approved(p.steps[0], waiting, later, HOLDER, TIMEOUTS, p)
    assert claimed.status is S.EXECUTING
    assert claimed.attempts == 2
    assert claimed.approval_ref == "keeper-p1-x"
    assert claimed.started_at == NOW
    assert claimed.lease == Lease(holder=HOLDER, expires_at=later + timedelta(seconds=60 + 30))


def test_work_is_taken_in_plan_order() -> None:
    p = plan(read("D1"), read("D2"))
    w = work(p, plan_status(st("D1", S.READY), st("D2", S.READY)))
    assert w.step == "D1"
    assert w.claim is not None
    assert states(w.claim)["D2"].status is S.READY


def test_one_claim_at_a_time() -> None:
    p = plan(read("D1"), read("D2"))
    w = work(p, plan_status(st("D1", S.READY), st("D2", S.READY)))
    assert w.claim is not None
    assert [s.status for s in w.claim.steps].count(S.EXECUTING) == 1


# -- next work: recovery, approvals, waits ---------------------------------------------------


def test_an_executing_step_with_an_expired_lease_is_recovered() -> None:
    p = plan(read("D1"))
    lease = Lease(holder="gone", expires_at=NOW)
    w = work(p, plan_status(st("D1", S.EXECUTING, lease=lease)))
    assert (w.kind, w.step) == (WorkKind.RECOVER, "D1")


def test_an_executing_step_with_a_live_lease_is_left_alone_until_it_expires() -> None:
    p = plan(read("D1"), read("D2", "D1"))
    expires = NOW + timedelta(seconds=1)
    w = work(
        p, plan_status(st("D1", S.EXECUTING, lease=Lease(holder="b", expires_at=expires)), st("D2"))
    )
    assert w.kind is WorkKind.NONE
    assert w.wake_at == expires


def test_recovery_comes_before_later_work() -> None:
    p = plan(read("D1"), read("D2"))
    lease = Lease(holder="gone", expires_at=NOW - timedelta(seconds=5))
    w = work(p, plan_status(st("D1", S.EXECUTING, lease=lease), st("D2", S.READY)))
    assert (w.kind, w.step) == (WorkKind.RECOVER, "D1")


@pytest.mark.parametrize("waiting", [S.AWAITING_APPROVAL, S.AWAITING_GRANT])
def test_a_step_awaiting_a_person_is_followed_once_per_pass(waiting: StepStatus) -> None:
    p = plan(read("D1"), read("D2"))
    s = plan_status(st("D1", waiting, approval_ref="ap-1"), st("D2", S.READY))
    w = work(p, s)
    assert (w.kind, w.step) == (WorkKind.FOLLOW, "D1")
    then = work(p, s, skip=frozenset({"D1"}))
    assert (then.kind, then.step) == (WorkKind.RUN, "D2")


def test_nothing_to_do_wakes_at_the_earliest_next_run_time() -> None:
    p = plan(wait("W1"), wait("W2"), read("D1"))
    s = plan_status(
        st("W1", S.WAITING, next_run_at=NOW + timedelta(seconds=40)),
        st("W2", S.WAITING, next_run_at=NOW + timedelta(seconds=20)),
        st("D1", S.COMPLETED),
    )
    w = work(p, s)
    assert w.kind is WorkKind.NONE
    assert w.wake_at == NOW + timedelta(seconds=20)


def test_nothing_to_do_and_nothing_to_wait_for() -> None:
    p = plan(read("D1"))
    w = work(p, plan_status(st("D1", S.COMPLETED)))
    assert (w.kind, w.wake_at) == (WorkKind.NONE, None)


@pytest.mark.parametrize("idle", [S.PENDING, S.BLOCKED, S.FAILED, S.SKIPPED, S.CANCELLED])
def test_steps_that_are_not_ready_are_never_claimed(idle: StepStatus) -> None:
    p = plan(read("D1"))
    assert work(p, plan_status(st("D1", idle))).kind is WorkKind.NONE


def test_claim_changes_only_the_claimed_step() -> None:
    p = plan(read("D1"), read("D2"))
    s = plan_status(st("D1", S.READY), st("D2", S.READY))
    step = p.steps[1]
    claimed = claim(s, step, states(s)["D2"], NOW, HOLDER, TIMEOUTS)
    assert states(claimed)["D1"] == states(s)["D1"]
    assert states(claimed)["D2"].lease is not None


# -- leases and backoff ----------------------------------------------------------------------


def test_lease_of_a_capability_step() -> None:
    p = plan(restart())
    assert lease_for(p.steps[0], TIMEOUTS) == timedelta(seconds=60) + LEASE_GRACE


def test_lease_of_a_monitor_takes_its_check_capability() -> None:
    p = plan(monitor())
    assert lease_for(p.steps[0], TIMEOUTS) == timedelta(seconds=15) + LEASE_GRACE


def test_lease_of_a_verify_step_takes_the_capability_of_the_check_it_makes() -> None:
    p = plan(restart(), verify())
    assert lease_for(p.steps[1], TIMEOUTS, p) == timedelta(seconds=15) + LEASE_GRACE
    w = work(p, plan_status(st("P1", S.COMPLETED, finished_at=NOW), st("V1", S.READY)))
    assert w.claim is not None
    lease = states(w.claim)["V1"].lease
    assert lease is not None
    assert lease.expires_at == NOW + timedelta(seconds=15) + LEASE_GRACE


def test_lease_of_a_step_that_only_checks_a_precondition() -> None:
    step = Step(
        key="P1",
        title="guarded",
        kind=StepKind.CAPABILITY,
        precondition={
            "description": "atlas is degraded",
            "check": {
                "capability": "service.status",
                "field": "state",
                "comparison": "not_equals",
                "value": "running",
            },
        },
    )
    assert lease_for(step, TIMEOUTS) == timedelta(seconds=15) + LEASE_GRACE


def test_lease_of_a_capability_the_table_does_not_know() -> None:
    p = plan(read("D1"))
    assert lease_for(p.steps[0], {}) == timedelta(seconds=60) + LEASE_GRACE


def test_lease_of_steps_that_call_nothing() -> None:
    p = plan(wait("W1"), summary("W1"))
    assert lease_for(p.steps[0], TIMEOUTS) == INTERNAL_LEASE
    assert lease_for(p.steps[1], TIMEOUTS) == INTERNAL_LEASE


def test_lease_grace_is_thirty_seconds() -> None:
    assert timedelta(seconds=30) == LEASE_GRACE


@pytest.mark.parametrize(
    ("attempt", "seconds"), [(0, 5), (1, 5), (2, 10), (3, 20), (4, 40), (7, 300), (30, 300)]
)
def test_retry_backoff_doubles_up_to_five_minutes(attempt: int, seconds: int) -> None:
    assert retry_delay(attempt) == timedelta(seconds=seconds)

"""Plans, Approvals and CapabilityGrants tell their state as conditions, so `kubectl wait
--for=condition=...` works: a Plan like a Job (Complete or Failed once it finished), an
Approval Decided and Executed from the ledger, a grant Active, Exhausted or Expired."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from minds.domain.approvals import conditions_of, recorded, status_of
from minds.domain.ledger import EventRecord, SubjectRef
from minds.domain.planning.model import PlanStatus
from minds.domain.resources.common import Condition
from minds.domain.resources.conditions import grant_conditions, plan_conditions
from minds.domain.resources.grant import GrantPhase

NOW = datetime(2026, 12, 6, 12, 0, tzinfo=UTC)


def shown(conditions: list[Condition]) -> dict[str, tuple[str, str]]:
    return {c.type: (c.status.value, c.reason) for c in conditions}


def plan(phase: PlanStatus, previous: list[Condition] | None = None, at: datetime = NOW,
         valid: bool | None = True) -> list[Condition]:  # fmt: skip
    return plan_conditions(
        previous or [], phase, valid=valid, progress="1/2", reason=None, generation=1, now=at
    )


@pytest.mark.parametrize(
    ("phase", "progressing"),
    [
        (PlanStatus.VALIDATED, ("True", "Validated")),
        (PlanStatus.EXECUTING, ("True", "Executing")),
        (PlanStatus.WAITING, ("True", "Waiting")),
        (PlanStatus.AWAITING_APPROVAL, ("True", "AwaitingApproval")),
        (PlanStatus.REPLANNING, ("True", "Replanning")),
        (PlanStatus.BLOCKED, ("False", "Blocked")),
    ],
)
def test_an_open_plan_is_progressing_or_not_and_neither_complete_nor_failed(
    phase: PlanStatus, progressing: tuple[str, str]
) -> None:
    assert shown(plan(phase)) == {"Validated": ("True", "Valid"), "Progressing": progressing}


@pytest.mark.parametrize(
    ("phase", "complete", "failed"),
    [
        (PlanStatus.COMPLETED, "True", "False"),
        (PlanStatus.FAILED, "False", "True"),
        (PlanStatus.ABANDONED, "False", "True"),
        (PlanStatus.SUPERSEDED, "False", "True"),
    ],
)
def test_a_finished_plan_is_complete_or_failed_like_a_job(
    phase: PlanStatus, complete: str, failed: str
) -> None:
    conditions = shown(plan(phase))
    assert conditions["Complete"][0] == complete
    assert conditions["Failed"][0] == failed
    assert conditions["Progressing"][0] == "False"


def test_an_invalid_plan_says_so_and_a_plan_not_yet_admitted_says_nothing_of_validity() -> None:
    assert shown(plan(PlanStatus.DRAFT, valid=False))["Validated"] == ("False", "Invalid")
    assert "Validated" not in shown(plan(PlanStatus.DRAFT, valid=None))


def test_a_plans_transition_times_move_only_with_the_status() -> None:
    running = plan(PlanStatus.EXECUTING)
    later = NOW + timedelta(minutes=1)
    waiting = plan(PlanStatus.WAITING, running, later)
    assert {c.type: c.last_transition_time for c in waiting} == {
        "Validated": NOW,
        "Progressing": NOW,
    }
    done = plan(PlanStatus.COMPLETED, waiting, later)
    assert {c.type: c.last_transition_time for c in done}["Progressing"] == later


@pytest.mark.parametrize(
    ("phase", "active", "exhausted", "expired"),
    [
        (GrantPhase.PENDING, "False", "False", "False"),
        (GrantPhase.ACTIVE, "True", "False", "False"),
        (GrantPhase.EXHAUSTED, "False", "True", "False"),
        (GrantPhase.EXPIRED, "False", "False", "True"),
        (GrantPhase.REVOKED, "False", "False", "False"),
    ],
)
def test_a_grant_is_active_exhausted_or_expired_by_its_phase(
    phase: GrantPhase, active: str, exhausted: str, expired: str
) -> None:
    conditions = grant_conditions([], phase, used=2, message=None, generation=1, now=NOW)
    assert {t: s for t, (s, _) in shown(conditions).items()} == {
        "Active": active,
        "Exhausted": exhausted,
        "Expired": expired,
    }
    assert all(c.reason == phase.value for c in conditions)


def row(type_: str, at: datetime, **payload: object) -> EventRecord:
    return EventRecord(
        mind="keeper",
        namespace="shop",
        type=type_,
        subject=SubjectRef(kind="Approval", name="ask-1", uid="u1"),
        payload=payload,  # type: ignore[arg-type]
        occurred_at=at,
        idempotency_key=f"k-{type_}",
    )


ASKED = row("approval_requested", NOW)
APPROVED = row("approval_approved", NOW + timedelta(minutes=1), message="approved by alice")
EXECUTED = row("approval_executed", NOW + timedelta(minutes=2), execution="e-1")


def test_an_approval_is_decided_when_the_ledger_records_the_decision_and_executed_when_it_ran(
) -> None:  # fmt: skip
    # Pending says nothing: it is shown as the schema's default, with no status write.
    assert conditions_of(recorded([ASKED])) == []
    approved = conditions_of(recorded([ASKED, APPROVED]))
    assert shown(approved) == {
        "Decided": ("True", "Approved"),
        "Executed": ("False", "AwaitingExecution"),
    }
    done = conditions_of(recorded([ASKED, APPROVED, EXECUTED]))
    assert shown(done) == {"Decided": ("True", "Approved"), "Executed": ("True", "Executed")}
    # The ledger's times: the same rows give the same conditions, whoever derives them.
    assert {c.type: c.last_transition_time for c in done} == {
        "Decided": APPROVED.occurred_at,
        "Executed": EXECUTED.occurred_at,
    }


def test_an_approval_that_ends_undecided_or_unexecuted_says_why() -> None:
    expired = conditions_of(recorded([ASKED, row("approval_expired", NOW + timedelta(days=1))]))
    assert shown(expired) == {"Decided": ("False", "Expired"), "Executed": ("False", "Expired")}
    # Undecided from the start: an expiry is no transition of Decided.
    assert all(c.last_transition_time == NOW for c in expired)
    denied = conditions_of(recorded([ASKED, row("approval_denied", NOW + timedelta(minutes=1))]))
    assert shown(denied) == {"Decided": ("True", "Denied"), "Executed": ("False", "Denied")}
    withdrawn = conditions_of(
        recorded([ASKED, APPROVED, row("approval_not_executed", NOW + timedelta(minutes=3))])
    )
    assert shown(withdrawn) == {
        "Decided": ("True", "Approved"),
        "Executed": ("False", "Withdrawn"),
    }


def test_the_status_an_approval_shows_carries_its_conditions() -> None:
    """So a forged condition differs from the ledger's status and is written back."""
    status = status_of(recorded([ASKED, APPROVED, EXECUTED]), 1)
    assert shown(status.conditions)["Executed"] == ("True", "Executed")
    assert conditions_of(recorded([])) == []

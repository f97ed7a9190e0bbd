"""When a finished plan may leave the cluster."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from minds.domain.plan_retention import CONCLUSION, expiry, finished_at
from minds.domain.planning.model import PlanStatus, StepState, StepStatus
from minds.domain.resources.plan import PlanResourceStatus

CREATED = datetime(2026, 1, 1, tzinfo=UTC)


def _status(phase: PlanStatus, *ends: datetime) -> PlanResourceStatus:
    steps = [
        StepState(key=f"S{i}", status=StepStatus.COMPLETED, finished_at=end)
        for i, end in enumerate(ends)
    ]
    return PlanResourceStatus(phase=phase, steps=steps)


@pytest.mark.parametrize("phase", [p for p in PlanStatus if p not in CONCLUSION])
def test_a_plan_that_is_not_finished_never_expires(phase: PlanStatus) -> None:
    assert expiry(_status(phase, CREATED), CREATED, 60) is None


def test_a_finished_plan_expires_its_ttl_after_its_last_step_ended() -> None:
    last = CREATED + timedelta(hours=5)
    status = _status(PlanStatus.COMPLETED, CREATED + timedelta(hours=1), last)
    found = expiry(status, CREATED, 3600)
    assert found is not None
    assert found.at == last + timedelta(hours=1)
    assert found.conclusion == "plan_completed"


def test_a_plan_no_step_of_which_ended_counts_from_its_creation() -> None:
    assert finished_at(_status(PlanStatus.SUPERSEDED), CREATED) == CREATED


@pytest.mark.parametrize(
    ("phase", "conclusion"),
    [
        (PlanStatus.COMPLETED, "plan_completed"),
        (PlanStatus.FAILED, "plan_failed"),
        (PlanStatus.SUPERSEDED, None),
        (PlanStatus.ABANDONED, None),
    ],
)
def test_what_must_be_in_the_ledger_first(phase: PlanStatus, conclusion: str | None) -> None:
    found = expiry(_status(phase, CREATED), CREATED, 60)
    assert found is not None
    assert found.conclusion == conclusion

"""The executor's dispatch tables cover their whole vocabulary: a kind the domain adds without
a handler fails here, not in a controller at three in the morning."""

from __future__ import annotations

from minds.domain.execution.adopt import EffectKind
from minds.domain.execution.machine import RUNNABLE, WorkKind
from minds.domain.planning.model import PlanStatus, StepKind, StepStatus
from minds.engine import executor
from minds.engine.executing import acting, conclusion, effects, following, outcome


def test_every_effect_has_one_handler() -> None:
    assert not set(effects.TOLD) & set(effects.APPLIED)
    assert set(effects.TOLD) | set(effects.APPLIED) == set(EffectKind)


def test_every_step_kind_has_a_handler() -> None:
    assert set(acting.HANDLERS) == set(StepKind)


def test_every_work_but_none_has_a_handler() -> None:
    assert set(executor.WORK) == set(WorkKind) - {WorkKind.NONE}


def test_an_approval_is_followed_for_each_waiting_status() -> None:
    assert set(following.APPROVED) == {StepStatus.AWAITING_APPROVAL, StepStatus.AWAITING_GRANT}


def test_finished_steps_are_journalled_and_the_rest_are_not() -> None:
    assert set(outcome.ROWS) == {
        StepStatus.COMPLETED,
        StepStatus.SKIPPED,
        StepStatus.FAILED,
        StepStatus.BLOCKED,
    }


def test_events_only_for_what_a_person_reads() -> None:
    assert set(outcome.NOTICES) == {
        StepStatus.FAILED,
        StepStatus.BLOCKED,
        StepStatus.AWAITING_APPROVAL,
        StepStatus.AWAITING_GRANT,
    }


def test_only_finished_phases_are_concluded() -> None:
    assert not set(conclusion.CONCLUSIONS) & RUNNABLE
    assert set(conclusion.CONCLUSIONS) == {
        PlanStatus.COMPLETED,
        PlanStatus.FAILED,
        PlanStatus.REPLANNING,
    }

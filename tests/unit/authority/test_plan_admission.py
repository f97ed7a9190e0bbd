"""Admitting a Plan resource: the status it earns from its spec, and when it is left alone."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest

from minds.domain.capabilities.registry import REGISTRY
from minds.domain.plan_admission import Admission, admit, progress
from minds.domain.planning.model import IssueCode, PlanStatus, StepState, StepStatus
from minds.domain.planning.views import MindView
from minds.domain.resources.plan import PlanResourceStatus
from tests.unit.planning.builders import restart, status, verify

NOW = datetime(2025, 3, 1, 12, 0, tzinfo=UTC)
MIND = MindView(name="caretaker", namespace="prod")
FRESH = PlanResourceStatus()


def spec(*steps: dict[str, Any], **over: Any) -> dict[str, Any]:
    chosen = list(steps) or [status(), restart(dependsOn=["D1"]), verify()]
    return {
        "objective": "atlas runs normally",
        "origin": "operator",
        "strategy": "authored",
        "mind": "caretaker",
        "steps": chosen,
    } | over


def run(
    raw: dict[str, Any],
    current: PlanResourceStatus = FRESH,
    mind: MindView | None = MIND,
    generation: int = 1,
) -> Admission:
    return admit(raw, current, mind, generation, REGISTRY, NOW)


def codes(admission: Admission) -> set[IssueCode]:
    return {issue.code for issue in admission.result.errors}


# -- a valid plan ----------------------------------------------------------------------------


def test_a_valid_plan_is_validated_with_every_step_pending() -> None:
    admitted = run(spec(), generation=4)
    assert admitted.changed
    assert admitted.result.ok
    assert admitted.plan is not None
    s = admitted.status
    assert s.phase is PlanStatus.VALIDATED
    assert [step.key for step in s.steps] == ["D1", "P1", "V1"]
    assert all(step.status is StepStatus.PENDING for step in s.steps)
    assert all(step.attempts == 0 for step in s.steps)
    assert s.progress == "0/3"
    assert s.observed_generation == 4
    assert s.validation == admitted.result
    assert s.validation is not None
    assert s.validation.order == ["D1", "P1", "V1"]


def test_an_operator_origin_is_validated_like_any_other() -> None:
    denied = MindView(name="caretaker", locked_capabilities=("service.restart",))
    admitted = run(spec(), mind=denied)
    assert admitted.status.phase is PlanStatus.DRAFT
    assert IssueCode.LOCKED_CAPABILITY in codes(admitted)


def test_a_plan_invalid_as_a_whole_is_a_draft_with_its_steps() -> None:
    admitted = run(spec(restart(), verify(dependsOn=["X9"])))
    assert admitted.status.phase is PlanStatus.DRAFT
    assert IssueCode.UNKNOWN_DEPENDENCY in codes(admitted)
    assert admitted.plan is not None
    assert admitted.status.progress == "0/2"


# -- shape errors ----------------------------------------------------------------------------


def test_a_missing_field_makes_a_draft_naming_the_field() -> None:
    untitled = {k: v for k, v in restart().items() if k != "title"}
    admitted = run(spec(untitled))
    assert admitted.status.phase is PlanStatus.DRAFT
    assert admitted.plan is None
    assert admitted.status.steps == []
    assert admitted.status.progress == "0/0"
    [issue] = admitted.result.errors
    assert issue.code is IssueCode.SCHEMA
    assert issue.field == "steps[0].title"
    assert "required" in issue.message.lower()


def test_a_field_of_the_wrong_shape_is_named_in_the_spec_spelling() -> None:
    admitted = run(spec(restart(key="bad"), verify(dependsOn=[1])))
    assert admitted.status.phase is PlanStatus.DRAFT
    fields = {issue.field for issue in admitted.result.errors}
    assert fields == {"steps[0].key", "steps[1].dependsOn[0]"}
    assert codes(admitted) == {IssueCode.SCHEMA}


def test_a_missing_objective_is_named() -> None:
    raw = {k: v for k, v in spec().items() if k != "objective"}
    admitted = run(raw)
    assert [i.field for i in admitted.result.errors] == ["objective"]


def test_an_unknown_field_with_a_very_long_name_is_reported_not_raised() -> None:
    admitted = run(spec() | {"x" * 400: 1})
    assert admitted.status.phase is PlanStatus.DRAFT
    [issue] = admitted.result.errors
    assert issue.field is not None
    assert issue.field.startswith("xxx")
    assert len(issue.field) <= 300


def test_shape_errors_are_bounded() -> None:
    steps = [{"key": f"bad{i}"} for i in range(30)]
    admitted = run(spec(*steps))
    assert admitted.status.phase is PlanStatus.DRAFT
    assert len(admitted.result.errors) == 50


# -- the mind --------------------------------------------------------------------------------


def test_an_unknown_mind_makes_a_draft() -> None:
    admitted = run(spec(), mind=None)
    assert admitted.status.phase is PlanStatus.DRAFT
    [issue] = admitted.result.errors
    assert issue.code is IssueCode.UNKNOWN_MIND
    assert issue.field == "mind"
    assert "'caretaker' not found" in issue.message
    # the steps are known even though the plan cannot be judged
    assert [step.key for step in admitted.status.steps] == ["D1", "P1", "V1"]


@pytest.mark.parametrize("mind", [None, MIND])
def test_a_plan_that_names_no_mind_is_a_draft(mind: MindView | None) -> None:
    raw = {k: v for k, v in spec().items() if k != "mind"}
    admitted = run(raw, mind=mind)
    assert admitted.status.phase is PlanStatus.DRAFT
    [issue] = admitted.result.errors
    assert issue.code is IssueCode.UNKNOWN_MIND
    assert "spec.mind" in issue.message


def test_an_empty_mind_name_is_a_draft() -> None:
    admitted = run(spec(mind=""))
    assert IssueCode.UNKNOWN_MIND in codes(admitted)


# -- re-admission ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    "phase",
    [p for p in PlanStatus if p not in (PlanStatus.DRAFT, PlanStatus.VALIDATED)],
)
def test_a_plan_that_left_validated_is_not_re_read(phase: PlanStatus) -> None:
    running = PlanResourceStatus(
        phase=phase,
        steps=[
            StepState(key="D1", status=StepStatus.COMPLETED, attempts=1),
            StepState(key="P1", status=StepStatus.EXECUTING, attempts=1),
        ],
        progress="1/2",
        observed_generation=1,
    )
    # even a spec that no longer validates, or another mind, changes nothing
    admitted = run(spec(restart(key="bad")), running, mind=None, generation=2)
    assert admitted.changed is False
    assert admitted.status == running
    assert admitted.plan is None


def test_re_admitting_an_identical_draft_changes_nothing() -> None:
    raw = spec(restart(), verify(dependsOn=["X9"]))
    first = run(raw)
    assert first.status.phase is PlanStatus.DRAFT
    # as the controller reads it back: rendered to the resource and parsed again
    stored = PlanResourceStatus.model_validate(first.status.to_k8s())
    again = run(raw, stored)
    assert again.changed is False
    assert again.status == stored


def test_re_admitting_an_identical_shape_error_changes_nothing() -> None:
    raw = spec(restart(key="bad"))
    first = run(raw)
    stored = PlanResourceStatus.model_validate(first.status.to_k8s())
    assert run(raw, stored).changed is False


def test_re_admitting_an_identical_valid_plan_changes_nothing() -> None:
    first = run(spec())
    stored = PlanResourceStatus.model_validate(first.status.to_k8s())
    again = run(spec(), stored)
    assert again.changed is False
    assert again.status.phase is PlanStatus.VALIDATED


def test_a_new_generation_is_recorded_even_when_the_verdict_is_the_same() -> None:
    first = run(spec(), generation=1)
    again = run(spec(), first.status, generation=2)
    assert again.changed is True
    assert again.status.observed_generation == 2


def test_a_fixed_draft_becomes_validated() -> None:
    draft = run(spec(restart(key="bad")))
    fixed = run(spec(), draft.status, generation=2)
    assert fixed.changed is True
    assert fixed.status.phase is PlanStatus.VALIDATED
    assert fixed.result.ok


def test_a_validated_plan_whose_spec_breaks_goes_back_to_draft() -> None:
    validated = run(spec())
    broken = run(spec(restart(key="bad")), validated.status, generation=2)
    assert broken.status.phase is PlanStatus.DRAFT
    assert broken.status.steps == []


# -- progress --------------------------------------------------------------------------------


def test_progress_counts_completed_and_skipped_steps() -> None:
    s = PlanResourceStatus(
        steps=[
            StepState(key="A1", status=StepStatus.COMPLETED),
            StepState(key="A2", status=StepStatus.SKIPPED),
            StepState(key="A3", status=StepStatus.FAILED),
            StepState(key="A4", status=StepStatus.EXECUTING),
            StepState(key="A5"),
        ]
    )
    assert progress(s) == "2/5"
    assert progress(PlanResourceStatus()) == "0/0"


# -- hostile free-form input -----------------------------------------------------------------


@pytest.mark.parametrize(
    ("path", "value"),
    [
        (("parameters",), {"name": "atlas", "x": {"a": {"a": {"a": {"a": 1}}}}}),
        (("parameters",), {"name": "atlas\x00"}),
        (("expectation", "check", "parameters"), {"name": ["x" * 5000]}),
    ],
    ids=["deep", "nul", "long"],
)
def test_free_form_beyond_its_limits_leaves_a_draft_naming_the_field(
    path: tuple[str, ...], value: dict[str, Any]
) -> None:
    step = restart()
    holder = step
    for part in path[:-1]:
        holder = holder.setdefault(part, {})
    holder[path[-1]] = value
    admitted = run(spec(status(), step, verify()))
    assert admitted.status.phase is PlanStatus.DRAFT
    assert admitted.plan is None
    (issue,) = admitted.result.errors
    assert issue.field is not None
    assert issue.field.startswith(f"steps[1].{'.'.join(path)}")
    assert issue.message.startswith(issue.field)

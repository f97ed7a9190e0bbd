"""Admitting a Plan resource: validate it and give it the status it has earned.

A Plan applied by a person (``origin: operator``) or written by the planner goes through the
same validation; being written by a person grants nothing. A plan with errors stays a
``draft`` with its errors in status, and nothing ever runs a draft. Once a plan has left
``validated`` (it is executing, waiting, done), its spec is no longer re-read: changing a
running plan would rewrite history; a change is a new revision.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any, cast

from pydantic import ValidationError

from minds.domain.capabilities.registry import CapabilityRegistry
from minds.domain.free_form import Breach, first_breach
from minds.domain.planning.model import (
    Budget,
    IssueCode,
    Plan,
    PlanOrigin,
    PlanStatus,
    StepState,
    StepStatus,
    ValidationIssue,
    ValidationResult,
)
from minds.domain.planning.scoring import estimate
from minds.domain.planning.validation import validate
from minds.domain.planning.views import MindView
from minds.domain.resources.plan import PlanResourceStatus

#: Phases in which the spec is still open to (re)validation.
OPEN_PHASES = frozenset({None, PlanStatus.DRAFT, PlanStatus.VALIDATED})

DONE_STEP = frozenset({StepStatus.COMPLETED, StepStatus.SKIPPED})

#: ``ValidationIssue.field`` holds at most this many characters.
MAX_FIELD_PATH = 300

#: Where a step holds free-form JSON, as paths into the step.
STEP_FREE_FORM: tuple[tuple[str, ...], ...] = (
    ("parameters",),
    ("check", "parameters"),
    ("expectation", "check", "parameters"),
    ("precondition", "check", "parameters"),
    ("request", "parameterLimits"),
)


@dataclass(frozen=True)
class Admission:
    status: PlanResourceStatus
    changed: bool
    result: ValidationResult
    plan: Plan | None


def _path(loc: tuple[int | str, ...]) -> str:
    """A field path in the spec's own spelling (``steps[0].title``), bounded like the field."""
    out = ""
    for part in loc:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out[:MAX_FIELD_PATH]


def _shape_errors(exc: ValidationError) -> ValidationResult:
    return ValidationResult(
        errors=[
            ValidationIssue(
                code=IssueCode.SCHEMA,
                field=_path(e["loc"]),
                message=str(e["msg"]),
            )
            for e in exc.errors()[:50]
        ]
    )


def _dig(value: object, path: tuple[str, ...]) -> object:
    for part in path:
        if not isinstance(value, dict):
            return None
        value = value.get(part)
    return value


def free_form_breach(raw_spec: dict[str, Any]) -> Breach | None:
    """The first free-form field of a raw Plan spec beyond the limits of
    `minds.domain.free_form`, looked at before anything else reads the spec."""
    steps = raw_spec.get("steps")
    fields = {
        f"steps[{index}].{'.'.join(path)}": found
        for index, step in enumerate(steps if isinstance(steps, list) else [])
        for path in STEP_FREE_FORM
        if (found := _dig(step, path)) is not None
    }
    return first_breach(fields)


def _refused(breach: Breach) -> ValidationResult:
    return ValidationResult(
        errors=[
            ValidationIssue(
                code=IssueCode.SCHEMA,
                field=breach.field[:MAX_FIELD_PATH],
                message=f"{breach.field} {breach.message}"[:2000],
            )
        ]
    )


def progress(status: PlanResourceStatus) -> str:
    done = sum(1 for s in status.steps if s.status in DONE_STEP)
    return f"{done}/{len(status.steps)}"


def effective_budget(plan: Budget, mind: Budget) -> Budget:
    """Field by field the tighter of the two: writing a plan by hand cannot raise the budget
    its mind allows (an absent cap is no cap)."""

    def tighter(a: float | None, b: float | None) -> float | None:
        if a is None:
            return b
        return a if b is None else min(a, b)

    return Budget(
        invocations=min(plan.invocations, mind.invocations),
        checks=min(plan.checks, mind.checks),
        wall_seconds=cast(int | None, tighter(plan.wall_seconds, mind.wall_seconds)),
        money=tighter(plan.money, mind.money),
        approvals=cast(int | None, tighter(plan.approvals, mind.approvals)),
    )


def reopens(current: PlanResourceStatus) -> bool:
    """Whether reading the spec again may change the plan's status: only until it runs."""
    return current.phase in OPEN_PHASES


def admit(
    raw_spec: dict[str, Any],
    current: PlanResourceStatus,
    mind: MindView | None,
    generation: int,
    registry: CapabilityRegistry,
    now: datetime,
) -> Admission:
    """The status a plan should have after (re)reading its spec. ``mind`` None: not found."""
    if not reopens(current):
        return Admission(current, False, current.validation or ValidationResult(), None)
    plan: Plan | None = None
    breach = free_form_breach(raw_spec)
    if breach is not None:
        result = _refused(breach)
    else:
        try:
            plan = Plan.model_validate(raw_spec)
        except ValidationError as exc:
            plan, result = None, _shape_errors(exc)
    if plan is not None:
        if mind is None or not plan.mind:
            result = ValidationResult(
                errors=[
                    ValidationIssue(
                        code=IssueCode.UNKNOWN_MIND,
                        field="mind",
                        message=f"mind {plan.mind!r} not found in this namespace"
                        if plan.mind
                        else "spec.mind must name the Mind this plan serves",
                    )
                ]
            )
        else:
            budget = effective_budget(plan.budget, mind.budget)
            plan = plan.model_copy(
                update={
                    "budget": budget,
                    "estimate": estimate(plan, registry, mind, now),
                }
            )
            result = validate(plan, registry, mind)
    if plan is not None and plan.origin is PlanOrigin.DREAM and result.ok:
        # A dream is a draft by nature: it may be read, never run.
        result = result.model_copy(
            update={
                "errors": [
                    ValidationIssue(
                        code=IssueCode.DREAM,
                        field="origin",
                        message="a dream plan is never run; it stays a draft",
                    )
                ]
            }
        )
    steps = [StepState(key=s.key) for s in plan.steps] if plan is not None else []
    status = current.model_copy(
        update={
            "phase": result.status,
            "validation": result,
            "steps": steps,
            "observed_generation": generation,
            "budget": plan.budget if plan is not None and result.ok else None,
            "estimate": plan.estimate if plan is not None and result.ok else None,
        }
    )
    status = status.model_copy(update={"progress": progress(status)})
    return Admission(status, status != current, result, plan)

"""Admitting a Plan resource: validate it and give it the status it has earned.

A Plan applied by a person (``origin: operator``) or written by the planner goes through the
same validation; being written by a person grants nothing. A plan with errors stays a
``draft`` with its errors in status, and nothing ever runs a draft. Once a plan has left
``validated`` (it is executing, waiting, done), its spec is no longer re-read: changing a
running plan would rewrite history; a change is a new revision.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from pydantic import ValidationError

from minds.domain.capabilities.registry import CapabilityRegistry
from minds.domain.planning.model import (
    IssueCode,
    Plan,
    PlanStatus,
    StepState,
    StepStatus,
    ValidationIssue,
    ValidationResult,
)
from minds.domain.planning.validation import validate
from minds.domain.planning.views import MindView
from minds.domain.resources.plan import PlanResourceStatus

#: Phases in which the spec is still open to (re)validation.
OPEN_PHASES = frozenset({None, PlanStatus.DRAFT, PlanStatus.VALIDATED})

DONE_STEP = frozenset({StepStatus.COMPLETED, StepStatus.SKIPPED})

#: ``ValidationIssue.field`` holds at most this many characters.
MAX_FIELD_PATH = 300


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
                code=IssueCode.MISSING_FIELD
                if e["type"] == "missing"
                else IssueCode.INVALID_PARAMETERS,
                field=_path(e["loc"]),
                message=str(e["msg"]),
            )
            for e in exc.errors()[:50]
        ]
    )


def progress(status: PlanResourceStatus) -> str:
    done = sum(1 for s in status.steps if s.status in DONE_STEP)
    return f"{done}/{len(status.steps)}"


def admit(
    raw_spec: dict[str, Any],
    current: PlanResourceStatus,
    mind: MindView | None,
    generation: int,
    registry: CapabilityRegistry,
) -> Admission:
    """The status a plan should have after (re)reading its spec. ``mind`` None: not found."""
    if current.phase not in OPEN_PHASES:
        return Admission(current, False, current.validation or ValidationResult(), None)
    plan: Plan | None
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
            result = validate(plan, registry, mind)
    steps = [StepState(key=s.key) for s in plan.steps] if plan is not None else []
    status = current.model_copy(
        update={
            "phase": result.status,
            "validation": result,
            "steps": steps,
            "observed_generation": generation,
        }
    )
    status = status.model_copy(update={"progress": progress(status)})
    return Admission(status, status != current, result, plan)

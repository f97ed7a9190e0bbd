"""Procedural memory: what a completed plan teaches, in words the mind can reuse.

When a plan completes, the steps that completed become one sentence ("To restart atlas-worker:
run service.restart on ns/atlas-worker; then verify: service.status state equals running. The
outcome was confirmed by observation."). A procedure whose outcome a verify or monitor step
observed is held with more confidence than one that merely ran, and one found only after earlier
plans failed says so, because how it was found is part of what was learned.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from typing import Annotated, Final

from pydantic import AwareDatetime, Field

from minds.domain.base import Model
from minds.domain.ledger import idempotency_key
from minds.domain.planning.model import Check, InternalAction, Plan, Step, StepKind

__all__ = [
    "CONFIRMED_CONFIDENCE",
    "PROCEDURE_STORED",
    "UNCONFIRMED_CONFIDENCE",
    "ProceduralMemory",
    "ProcedureStep",
    "describe_check",
    "procedure_id",
    "procedure_steps",
    "render_procedure",
]

Name = Annotated[str, Field(min_length=1, max_length=253)]

CONFIRMED_CONFIDENCE: Final = 0.8
UNCONFIRMED_CONFIDENCE: Final = 0.5

# Event type (stored as text).
PROCEDURE_STORED: Final = "procedure_stored"

_OBSERVING_KINDS: Final = frozenset({StepKind.VERIFY, StepKind.MONITOR})

_INTERNAL_PHRASES: Final = {
    InternalAction.SUMMARISE_FINDINGS: "summarise the findings",
    InternalAction.NOTIFY_OPERATOR: "tell the operator what was tried and seen",
}


class ProcedureStep(Model):
    """A completed step, reduced to what the procedure needs to say about it.

    `check_text` is the check of a verify or monitor step in words ("service.status state
    equals running").
    """

    kind: StepKind
    capability: str | None = None
    target: str | None = None
    check_text: str | None = None
    internal_action: InternalAction | None = None


class ProceduralMemory(Model):
    """One procedure learned from one completed plan (append-only `procedural_memories` row).

    `subject` is what the procedure is about (a workload target such as `ns/atlas-worker`, or
    the objective when there is none), so the mind can find it again.
    """

    id: Annotated[str, Field(min_length=1, max_length=128)]
    namespace: Name
    mind: Name
    subject: Annotated[str, Field(min_length=1, max_length=500)]
    text: Annotated[str, Field(min_length=1, max_length=8000)]
    confidence: Annotated[float, Field(ge=0.0, le=1.0)]
    plan: Name
    revision: Annotated[int, Field(ge=1)]
    created_at: AwareDatetime


def describe_check(check: Check) -> str:
    """A check in words: "service.status state equals running"."""
    comparison = check.comparison.value.replace("_", " ")
    return f"{check.capability} {check.field} {comparison} {check.value}"


def procedure_steps(plan: Plan, completed: Collection[str]) -> list[ProcedureStep]:
    """The plan's completed steps (by key), in plan order, as a procedure describes them.

    A verify step's check is the expectation of the step it verifies.
    """
    return [_procedure_step(plan, step) for step in plan.steps if step.key in completed]


def _procedure_step(plan: Plan, step: Step) -> ProcedureStep:
    check = step.check
    if step.kind is StepKind.VERIFY and step.verifies is not None:
        verified = plan.step(step.verifies)
        if verified is not None and verified.expectation is not None:
            check = verified.expectation.check
    capability, target = step.capability, step.target
    if step.kind is StepKind.REQUEST_CAPABILITY and step.request is not None:
        capability, target = step.request.capability, step.request.target_pattern
    return ProcedureStep(
        kind=step.kind,
        capability=capability,
        target=target,
        check_text=describe_check(check) if check is not None else None,
        internal_action=step.internal_action,
    )


def procedure_id(namespace: str, mind: str, plan: str) -> str:
    """One procedural memory per completed plan."""
    return "proc-" + idempotency_key("procedure", namespace, mind, plan)[:24]


def render_procedure(
    objective: str,
    steps: Sequence[ProcedureStep],
    *,
    confirmed: bool,
    revision: int,
    earlier_failures: int,
) -> tuple[str, float]:
    """The procedure's text and the confidence to hold it with.

    `confirmed` says a verify or monitor step observed the outcome; it only counts when such a
    step is among `steps`, so a procedure cannot claim an observation it does not describe.
    Confidence is `CONFIRMED_CONFIDENCE` then, `UNCONFIRMED_CONFIDENCE` otherwise. When
    `earlier_failures` is above 0 the revision that worked is noted.
    """
    if not steps:
        raise ValueError("a procedure needs at least one completed step")
    if revision < 1 or earlier_failures < 0:
        raise ValueError("revision starts at 1 and earlier failures cannot be negative")
    observed = confirmed and any(step.kind in _OBSERVING_KINDS for step in steps)
    phrases = [_phrase(step) for step in steps]
    sequence = "; ".join([phrases[0], *(f"then {phrase}" for phrase in phrases[1:])])
    sentences = [f"To {_as_infinitive(objective)}: {sequence}."]
    if observed:
        sentences.append("The outcome was confirmed by observation.")
    else:
        sentences.append("The outcome was not confirmed by observation.")
    if earlier_failures > 0:
        plans = "plan" if earlier_failures == 1 else "plans"
        sentences.append(f"Found in revision {revision}, after {earlier_failures} failed {plans}.")
    confidence = CONFIRMED_CONFIDENCE if observed else UNCONFIRMED_CONFIDENCE
    return " ".join(sentences), confidence


def _as_infinitive(objective: str) -> str:
    """The objective as it reads after "To": "Restart atlas-worker." becomes "restart
    atlas-worker"; acronyms keep their capitals ("DNS ..." stays)."""
    text = " ".join(objective.split()).rstrip(".")
    if len(text) > 1 and text[0].isupper() and text[1].islower():
        text = text[0].lower() + text[1:]
    return text or "reach the objective"


def _phrase(step: ProcedureStep) -> str:
    kind = step.kind
    if kind is StepKind.CAPABILITY:
        return _on(f"run {step.capability or 'a capability'}", step.target)
    if kind is StepKind.REQUEST_CAPABILITY:
        return _on(f"request access to {step.capability or 'a capability'}", step.target)
    if kind is StepKind.VERIFY:
        return f"verify: {step.check_text or 'the expected outcome'}"
    if kind is StepKind.MONITOR:
        return f"monitor until stable: {step.check_text or 'the expected state'}"
    if kind is StepKind.WAIT:
        return "wait"
    if step.internal_action is not None:
        return _INTERNAL_PHRASES[step.internal_action]
    return "take an internal step"


def _on(action: str, target: str | None) -> str:
    return f"{action} on {target}" if target else action

"""The planner: from an intention to a plan, deterministically.

Strategies are tried in preference order (`direct`, `diagnose`, `diagnose_then_escalate`, then
`model`). The first one that applies and yields a valid plan is chosen; every other one is still
recorded as an alternative with its estimate, expected confidence, score and the reason it was
not chosen, so an operator sees what was considered. A strategy that failed in an earlier
revision of the same intention is never used again.

A model is consulted only when no deterministic strategy applies and a model holds the `plan`
role. The call itself is I/O and belongs to the engine, so planning is two-step: without a
proposal the planner answers `needs_model_proposal`; called again with the proposal text, it
reads, validates and returns it. A proposal that fails validation is returned as a `draft`
with its errors: it is stored for inspection and never runs.

When nothing applies the answer is `no_possible_plan`, with the reasons.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum
from typing import Annotated

from pydantic import Field

from minds.domain.base import Model
from minds.domain.capabilities.registry import REGISTRY, CapabilityRegistry
from minds.domain.planning.model import (
    Alternative,
    Plan,
    PlanOrigin,
    PlanStatus,
    StepKind,
    Strategy,
    ValidationResult,
)
from minds.domain.planning.proposal import combine, read_proposal
from minds.domain.planning.scoring import estimate, score
from minds.domain.planning.strategies import (
    DETERMINISTIC,
    MODEL_CONFIDENCE,
    Context,
    Draft,
    NotApplicable,
)
from minds.domain.planning.validation import validate
from minds.domain.planning.views import IntentionView, MindView


class PlanningOutcome(StrEnum):
    PLANNED = "planned"
    DRAFT = "draft"
    NEEDS_MODEL_PROPOSAL = "needs_model_proposal"
    NO_POSSIBLE_PLAN = "no_possible_plan"


class ModelProposal(Model):
    """The text a model returned for the `plan` role and the tokens the call used."""

    text: str | bytes
    tokens: Annotated[int, Field(ge=0)] = 0


@dataclass(frozen=True)
class PlanningResult:
    """What the planner decided. `plan` and `validation` are set for `planned` and `draft`."""

    outcome: PlanningOutcome
    reason: str
    alternatives: tuple[Alternative, ...]
    plan: Plan | None = None
    validation: ValidationResult | None = None

    @property
    def status(self) -> PlanStatus | None:
        """The status the plan must be stored with, when there is a plan."""
        return self.validation.status if self.validation is not None else None


@dataclass(frozen=True)
class _Candidate:
    plan: Plan
    validation: ValidationResult
    confidence: float
    score: float


def make_plan(
    intention: IntentionView,
    mind: MindView,
    *,
    now: datetime,
    registry: CapabilityRegistry = REGISTRY,
    proposal: ModelProposal | None = None,
) -> PlanningResult:
    """Plan for an intention (see the module notes). Same inputs, same result."""
    ctx = Context(intention=intention, mind=mind, registry=registry, now=now)
    failed = _failed_revisions(intention)
    alternatives: list[Alternative] = []
    chosen: _Candidate | None = None
    for strategy, build in DETERMINISTIC:
        if strategy in failed:
            alternatives.append(_not_considered(strategy, failed[strategy]))
            continue
        drafted = build(ctx)
        if isinstance(drafted, NotApplicable):
            alternatives.append(
                Alternative(strategy=strategy, selected=False, reason=drafted.reason)
            )
            continue
        candidate = _candidate(drafted, ctx)
        if chosen is None and candidate.validation.ok:
            chosen = candidate
            alternatives.append(
                _selected(candidate, "first applicable strategy in preference order")
            )
        else:
            why = (
                f"not chosen: {chosen.plan.strategy.value} comes first in preference order"
                if chosen is not None
                else "not chosen: its plan fails validation: " + _first_error(candidate)
            )
            alternatives.append(_recorded(candidate, why))

    if chosen is not None:
        alternatives.append(
            Alternative(
                strategy=Strategy.MODEL,
                selected=False,
                reason="not consulted: a deterministic strategy applies",
            )
        )
        return _planned(chosen, alternatives)

    if Strategy.MODEL in failed:
        alternatives.append(_not_considered(Strategy.MODEL, failed[Strategy.MODEL]))
        return _nothing(alternatives)
    if not mind.plan_model:
        alternatives.append(
            Alternative(
                strategy=Strategy.MODEL,
                selected=False,
                reason="no model is assigned the plan role",
            )
        )
        return _nothing(alternatives)
    if proposal is None:
        return PlanningResult(
            outcome=PlanningOutcome.NEEDS_MODEL_PROPOSAL,
            reason="no deterministic strategy applies; ask the model in the plan role",
            alternatives=tuple(alternatives),
        )
    return _from_proposal(proposal, ctx, alternatives)


def _failed_revisions(intention: IntentionView) -> dict[Strategy, int]:
    failed: dict[Strategy, int] = {}
    for failure in intention.failures:
        failed.setdefault(failure.strategy, failure.revision)
    return failed


def _not_considered(strategy: Strategy, revision: int) -> Alternative:
    return Alternative(
        strategy=strategy,
        selected=False,
        reason=f"not reused: it failed in revision {revision} of this intention",
    )


def _origin(intention: IntentionView) -> PlanOrigin:
    return PlanOrigin.TEMPLATE if intention.revision == 1 else PlanOrigin.REPLAN


def _skeleton(ctx: Context, strategy: Strategy, origin: PlanOrigin) -> Plan:
    intention = ctx.intention
    return Plan(
        objective=(intention.objective.strip() or f"intention {intention.id}")[:500],
        origin=origin,
        strategy=strategy,
        mind=ctx.mind.name or None,
        intention=intention.id,
        revision=intention.revision,
        supersedes=intention.supersedes,
        budget=ctx.mind.budget,
    )


def _finish(plan: Plan, ctx: Context, tokens: int = 0) -> tuple[Plan, ValidationResult]:
    """Attach the estimate, then validate (the budget check needs the estimate)."""
    plan = plan.model_copy(
        update={"estimate": estimate(plan, ctx.registry, ctx.mind, ctx.now, tokens=tokens)}
    )
    return plan, validate(plan, ctx.registry, ctx.mind)


def _candidate(drafted: Draft, ctx: Context) -> _Candidate:
    plan = _skeleton(ctx, drafted.strategy, _origin(ctx.intention)).model_copy(
        update={
            "steps": list(drafted.steps),
            "assumptions": list(drafted.assumptions),
            "completion_criteria": list(drafted.completion_criteria),
            "abort_conditions": list(drafted.abort_conditions),
            "risk": drafted.risk,
        }
    )
    plan, validation = _finish(plan, ctx)
    return _Candidate(
        plan,
        validation,
        drafted.expected_confidence,
        score(drafted.expected_confidence, plan.estimate),
    )


def _first_error(candidate: _Candidate) -> str:
    return candidate.validation.errors[0].message if candidate.validation.errors else ""


def _recorded(candidate: _Candidate, reason: str, *, selected: bool = False) -> Alternative:
    return Alternative(
        strategy=candidate.plan.strategy,
        selected=selected,
        reason=reason[:2000],
        estimate=candidate.plan.estimate,
        expected_confidence=candidate.confidence,
        score=candidate.score,
    )


def _selected(candidate: _Candidate, why: str) -> Alternative:
    return _recorded(candidate, f"chosen: {why} (score {candidate.score:g})", selected=True)


def _planned(chosen: _Candidate, alternatives: list[Alternative]) -> PlanningResult:
    plan = chosen.plan.model_copy(update={"alternatives": alternatives})
    return PlanningResult(
        outcome=PlanningOutcome.PLANNED if chosen.validation.ok else PlanningOutcome.DRAFT,
        reason=next(a.reason for a in alternatives if a.selected),
        alternatives=tuple(alternatives),
        plan=plan,
        validation=chosen.validation,
    )


def _nothing(alternatives: list[Alternative]) -> PlanningResult:
    reasons = "; ".join(f"{a.strategy.value}: {a.reason}" for a in alternatives)
    return PlanningResult(
        outcome=PlanningOutcome.NO_POSSIBLE_PLAN,
        reason=f"no possible plan ({reasons})",
        alternatives=tuple(alternatives),
    )


def _from_proposal(
    proposal: ModelProposal, ctx: Context, alternatives: list[Alternative]
) -> PlanningResult:
    skeleton = _skeleton(ctx, Strategy.MODEL, PlanOrigin.MODEL)
    reading = read_proposal(
        proposal.text,
        objective=skeleton.objective,
        intention=skeleton.intention,
        mind=skeleton.mind,
        revision=skeleton.revision,
    )
    # The proposal supplies steps and its own reasoning about them; authority, budget and
    # links come from the intention and the mind.
    steps = [
        step.model_copy(update={"requires_approval": _requires_approval(step.capability, ctx)})
        if step.kind == StepKind.CAPABILITY
        else step
        for step in reading.plan.steps
    ]
    plan = skeleton.model_copy(
        update={
            "steps": steps,
            "assumptions": reading.plan.assumptions,
            "completion_criteria": reading.plan.completion_criteria,
            "abort_conditions": reading.plan.abort_conditions,
            "risk": reading.plan.risk,
        }
    )
    plan, validation = _finish(plan, ctx, tokens=proposal.tokens)
    validation = combine(reading, validation)
    candidate = _Candidate(
        plan, validation, MODEL_CONFIDENCE, score(MODEL_CONFIDENCE, plan.estimate)
    )
    if validation.ok:
        alternatives.append(_selected(candidate, "no deterministic strategy applies"))
    else:
        alternatives.append(
            _recorded(
                candidate,
                "proposed by the model but invalid; kept as a draft that never runs: "
                + (validation.errors[0].message if validation.errors else ""),
                selected=True,
            )
        )
    return _planned(candidate, alternatives)


def _requires_approval(capability: str | None, ctx: Context) -> bool:
    spec = ctx.registry.get(capability or "")
    return ctx.intention.requires_approval and spec is not None and not spec.read_only

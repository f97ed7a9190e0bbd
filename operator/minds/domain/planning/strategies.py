"""The deterministic strategies, in the planner's order of preference.

| strategy                 | applies to                                        |
|--------------------------|---------------------------------------------------|
| `direct`                 | an intention with a capability as its means       |
| `diagnose`               | an investigation of a service-like subject        |
| `diagnose_then_escalate` | after a direct service action failed              |

Each returns the steps of a plan and the confidence that the plan achieves its objective, or
says why it does not apply. The confidences are fixed, deliberately modest priors (a direct
action with a stated expectation takes the expectation's own confidence); calibration from
outcomes belongs to predictions, not to the planner.

Step keys follow the seed: P for the action, V for its verification, D for diagnostic
readings, R for a capability request, S for the summary and N for the note to the operator.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Final

from minds.domain.capabilities.registry import (
    HOST_TARGET,
    CapabilityRegistry,
    CapabilitySpec,
    parameter_problems,
)
from minds.domain.planning.model import (
    Assumption,
    CapabilityRequest,
    Check,
    Comparison,
    Expectation,
    InternalAction,
    Step,
    StepKind,
    Strategy,
)
from minds.domain.planning.views import IntentionKind, IntentionView, MindView, Workload
from minds.domain.resources.mind import PolicyDecision

RESTART: Final = "service.restart"
STATUS: Final = "service.status"
LOGS: Final = "logs.query"
RESTART_WINDOW_SECONDS: Final = 60
RESTART_CONFIDENCE: Final = 0.8
READ_CONFIDENCE: Final = 0.9
UNVERIFIED_WRITE_CONFIDENCE: Final = 0.6
DIAGNOSE_CONFIDENCE: Final = 0.7
ESCALATE_CONFIDENCE: Final = 0.6
MODEL_CONFIDENCE: Final = 0.5
READ_ATTEMPTS: Final = 3
ASSUMPTION_MIN_CONFIDENCE: Final = 0.5
LOG_GRANT_SECONDS: Final = 30 * 60
LOG_GRANT_OPERATIONS: Final = 20
LOG_SINCE_SECONDS: Final = 3600
LOG_LIMIT: Final = 200


@dataclass(frozen=True)
class Context:
    """Everything a strategy may look at. `now` only judges whether grants are live."""

    intention: IntentionView
    mind: MindView
    registry: CapabilityRegistry
    now: datetime


@dataclass(frozen=True)
class Draft:
    """A strategy's plan before the planner assembles, estimates and validates it."""

    strategy: Strategy
    steps: tuple[Step, ...]
    expected_confidence: float
    risk: str
    completion_criteria: tuple[str, ...]
    abort_conditions: tuple[str, ...]
    assumptions: tuple[Assumption, ...] = field(default=())


@dataclass(frozen=True)
class NotApplicable:
    strategy: Strategy
    reason: str


Outcome = Draft | NotApplicable


def _assumptions(intention: IntentionView) -> tuple[Assumption, ...]:
    if intention.supporting_belief is None:
        return ()
    return (
        Assumption(belief=intention.supporting_belief, min_confidence=ASSUMPTION_MIN_CONFIDENCE),
    )


def _expected(expectation: Expectation | None) -> tuple[Assumption, ...]:
    """The action's expected outcome: the belief the executor's prediction tests (its
    description), so refutations weaken every open plan that relies on the same outcome. The
    planner's own threshold, not the expectation's confidence: one failed restart is not
    enough for the mind to stop believing restarts help (from 0.8, the second refutation in a
    row takes it below 0.5); a person's plan may ask for more."""
    if expectation is None:
        return ()
    return (Assumption(belief=expectation.description, min_confidence=ASSUMPTION_MIN_CONFIDENCE),)


def _canonical(spec: CapabilitySpec, parameters: Mapping[str, Any]) -> dict[str, Any]:
    """Parameters as the schema spells them, defaults included, so the plan shows everything
    the capability will be invoked with."""
    return spec.parse(parameters).to_k8s()


def direct(ctx: Context) -> Outcome:
    """P1 the intention's means; for `service.restart`, an expectation and V1 to verify it."""
    means = ctx.intention.means
    if means is None:
        return NotApplicable(Strategy.DIRECT, "the intention names no capability as its means")
    spec = ctx.registry.get(means.capability)
    if spec is None:
        return NotApplicable(Strategy.DIRECT, f"{means.capability} is not a registered capability")
    if ctx.mind.locked(spec.name):
        return NotApplicable(Strategy.DIRECT, f"{spec.name} is locked for this mind")
    problems = parameter_problems(spec, means.parameters)
    if problems:
        detail = "; ".join(f"{p.path}: {p.message}" for p in problems)
        return NotApplicable(Strategy.DIRECT, f"the means' parameters fail the schema: {detail}")
    parameters = _canonical(spec, means.parameters)
    target = spec.target_of(spec.parse(parameters))
    if ctx.mind.decide(spec.name, target, ctx.now, ctx.registry).decision is PolicyDecision.DENY:
        return NotApplicable(Strategy.DIRECT, f"policy denies {spec.name} on {target}")
    expectation = _restart_expectation(spec, parameters, target, ctx.registry)
    action = Step(
        key="P1",
        title=f"{spec.name} on {target}",
        kind=StepKind.CAPABILITY,
        capability=spec.name,
        parameters=parameters,
        target=target,
        expectation=expectation,
        # Approval comes from the intention (its commitments) and applies to writing actions.
        requires_approval=ctx.intention.requires_approval and not spec.read_only,
        max_attempts=READ_ATTEMPTS if spec.idempotent else None,
    )
    steps: tuple[Step, ...] = (action,)
    completion: tuple[str, ...] = (f"P1 {spec.name} on {target} completes",)
    abort: tuple[str, ...] = ("P1 is denied or fails",)
    if expectation is not None:
        steps += (
            Step(
                key="V1",
                title=f"verify: {expectation.description}",
                kind=StepKind.VERIFY,
                depends_on=["P1"],
                verifies="P1",
            ),
        )
        completion = (f"V1 observes: {expectation.description}",)
        abort = (*abort, f"V1's window closes without observing: {expectation.description}")
        confidence = expectation.confidence
    else:
        confidence = READ_CONFIDENCE if spec.read_only else UNVERIFIED_WRITE_CONFIDENCE
    return Draft(
        strategy=Strategy.DIRECT,
        steps=steps,
        expected_confidence=confidence,
        risk=(
            f"read-only: {spec.summary}" if spec.read_only else f"acts on {target}: {spec.summary}"
        ),
        completion_criteria=completion,
        abort_conditions=abort,
        assumptions=(*_assumptions(ctx.intention), *_expected(expectation)),
    )


def _restart_expectation(
    spec: CapabilitySpec,
    parameters: Mapping[str, Any],
    target: str,
    registry: CapabilityRegistry,
) -> Expectation | None:
    """The only built-in expected observation: a restarted unit runs normally within 60 s."""
    if spec.name != RESTART:
        return None
    status = registry[STATUS]
    check_parameters = _canonical(
        status, {k: parameters[k] for k in ("namespace", "kind", "name") if k in parameters}
    )
    return Expectation(
        description=f"{target} is running normally within {RESTART_WINDOW_SECONDS} s",
        check=Check(
            capability=STATUS,
            parameters=check_parameters,
            field="state",
            comparison=Comparison.EQUALS,
            value="running",
        ),
        confidence=RESTART_CONFIDENCE,
        window_seconds=RESTART_WINDOW_SECONDS,
    )


@dataclass(frozen=True)
class Diagnosis:
    """The diagnostic steps and what they read, or why no reading is possible."""

    steps: tuple[Step, ...]
    readings: tuple[str, ...]
    skipped: tuple[str, ...]
    requests_logs: bool


def _readings(workload: Workload) -> tuple[tuple[str, str, dict[str, Any]], ...]:
    """(capability, what it reads, parameters) in the seed's order."""
    return (
        (STATUS, "status", workload.parameters()),
        ("host.memory.status", "host memory", {}),
        ("host.disk.usage", "disk", {}),
        (
            LOGS,
            "logs",
            {**workload.parameters(), "sinceSeconds": LOG_SINCE_SECONDS, "limit": LOG_LIMIT},
        ),
    )


def diagnosis(ctx: Context, workload: Workload) -> Diagnosis:
    """Status, host memory, disk and logs, each only if policy allows or asks.

    Log access that needs approval, with no live grant, is asked for as a temporary scoped
    grant (R1) rather than a one-off approval: the request states its risk, mitigation and
    fallback, and the logs step runs under the grant once an operator gives it.
    """
    steps: list[Step] = []
    readings: list[str] = []
    skipped: list[str] = []
    requests_logs = False
    for capability, what, raw in _readings(workload):
        spec = ctx.registry.get(capability)
        if spec is None or ctx.mind.locked(capability):
            skipped.append(f"{what} ({capability} is locked or unavailable)")
            continue
        parameters = _canonical(spec, raw)
        target = spec.target_of(spec.parse(parameters))
        outcome = ctx.mind.decide(capability, target, ctx.now, ctx.registry)
        if outcome.decision is PolicyDecision.DENY:
            skipped.append(f"{what} (policy denies {capability} on {target})")
            continue
        depends_on: list[str] = []
        if capability == LOGS and outcome.decision is PolicyDecision.APPROVE:
            steps.append(_log_request(workload))
            depends_on = ["R1"]
            requests_logs = True
        steps.append(
            Step(
                key=f"D{len(readings) + 1}",
                title=f"read {what} of {target}" if target != HOST_TARGET else f"read {what}",
                kind=StepKind.CAPABILITY,
                depends_on=depends_on,
                capability=capability,
                parameters=parameters,
                target=target,
                max_attempts=READ_ATTEMPTS,
            )
        )
        readings.append(what)
    return Diagnosis(tuple(steps), tuple(readings), tuple(skipped), requests_logs)


def _log_request(workload: Workload) -> Step:
    return Step(
        key="R1",
        title=f"ask for {LOG_GRANT_SECONDS // 60} minutes of {LOGS} on {workload.target}",
        kind=StepKind.REQUEST_CAPABILITY,
        request=CapabilityRequest(
            capability=LOGS,
            target_pattern=workload.target,
            parameter_limits={
                "namespace": workload.namespace,
                "name": workload.name,
                "mask": True,
            },
            duration_seconds=LOG_GRANT_SECONDS,
            operation_cap=LOG_GRANT_OPERATIONS,
            reason=f"diagnose {workload.target}: read its recent logs",
            risk="logs may contain personal identifiers",
            mitigation="masking on by default",
            fallback="ask the operator",
            alternatives=["diagnose from status, host memory and disk without logs"],
        ),
    )


def _summary(diag: Diagnosis) -> Step:
    return Step(
        key="S1",
        title=f"summarise the findings ({', '.join(diag.readings)})",
        kind=StepKind.INTERNAL,
        depends_on=[s.key for s in diag.steps if s.kind == StepKind.CAPABILITY],
        internal_action=InternalAction.SUMMARISE_FINDINGS,
    )


def _workload_of(intention: IntentionView) -> Workload | None:
    """The service-like subject: named by the intention, or by a workload means."""
    if intention.workload is not None:
        return intention.workload
    means = intention.means
    if means is None or not means.capability.startswith("service."):
        return None
    parameters = means.parameters
    namespace, name = parameters.get("namespace"), parameters.get("name")
    if not isinstance(namespace, str) or not isinstance(name, str):
        return None
    try:
        return Workload.model_validate(
            {"namespace": namespace, "name": name, "kind": parameters.get("kind", "Deployment")}
        )
    except ValueError:
        return None


def diagnose(ctx: Context) -> Outcome:
    """The diagnosis of a service-like subject, then S1 summarises the findings."""
    if ctx.intention.kind is not IntentionKind.INVESTIGATION:
        return NotApplicable(Strategy.DIAGNOSE, "the intention is not an investigation")
    workload = _workload_of(ctx.intention)
    if workload is None:
        return NotApplicable(Strategy.DIAGNOSE, "the subject is not a workload")
    diag = diagnosis(ctx, workload)
    if not diag.readings:
        return NotApplicable(
            Strategy.DIAGNOSE, "policy allows no diagnostic reading: " + "; ".join(diag.skipped)
        )
    return Draft(
        strategy=Strategy.DIAGNOSE,
        steps=(*diag.steps, _summary(diag)),
        expected_confidence=DIAGNOSE_CONFIDENCE,
        risk=_diagnosis_risk(diag),
        completion_criteria=("S1 summarises the findings",),
        abort_conditions=("every diagnostic reading fails",),
        assumptions=_assumptions(ctx.intention),
    )


def _diagnosis_risk(diag: Diagnosis) -> str:
    risk = "read-only"
    if diag.requests_logs:
        risk += "; logs may contain personal identifiers (masking on by default)"
    if diag.skipped:
        risk += "; not read: " + "; ".join(diag.skipped)
    return risk


def diagnose_then_escalate(ctx: Context) -> Outcome:
    """After a direct service action failed: diagnose, then N1 tells the operator what was
    tried and seen. The failed action is not repeated."""
    intention = ctx.intention
    means = intention.means
    if Strategy.DIRECT not in intention.failed_strategies:
        return NotApplicable(
            Strategy.DIAGNOSE_THEN_ESCALATE, "no direct action of this intention has failed"
        )
    spec = ctx.registry.get(means.capability) if means is not None else None
    if means is None or spec is None or spec.read_only or not spec.name.startswith("service."):
        # Only a service action escalates; a failed read is not an action to avoid repeating.
        return NotApplicable(
            Strategy.DIAGNOSE_THEN_ESCALATE, "the failed action was not a service action"
        )
    workload = _workload_of(intention)
    if workload is None:
        return NotApplicable(Strategy.DIAGNOSE_THEN_ESCALATE, "the subject is not a workload")
    diag = diagnosis(ctx, workload)
    if not diag.readings:
        return NotApplicable(
            Strategy.DIAGNOSE_THEN_ESCALATE,
            "policy allows no diagnostic reading: " + "; ".join(diag.skipped),
        )
    summary = _summary(diag)
    tried = "; ".join(
        f"revision {f.revision} ({f.strategy.value})" + (f": {f.summary}" if f.summary else "")
        for f in intention.failures
        if f.strategy is Strategy.DIRECT
    )
    note = Step(
        key="N1",
        title=f"tell the operator what was tried on {workload.target} and what was seen",
        kind=StepKind.INTERNAL,
        depends_on=["S1"],
        internal_action=InternalAction.NOTIFY_OPERATOR,
        note=(
            f"Tried {means.capability} on {workload.target}: {tried}. It is not being "
            f"repeated. The findings of S1 ({', '.join(diag.readings)}) are attached."
        )[:2000],
    )
    return Draft(
        strategy=Strategy.DIAGNOSE_THEN_ESCALATE,
        steps=(*diag.steps, summary, note),
        expected_confidence=ESCALATE_CONFIDENCE,
        risk=_diagnosis_risk(diag),
        completion_criteria=("N1 tells the operator what was tried and seen",),
        abort_conditions=("every diagnostic reading fails",),
        assumptions=_assumptions(intention),
    )


# Deterministic strategies in preference order; `model` comes after all of them.
DETERMINISTIC: Final[tuple[tuple[Strategy, Callable[[Context], Outcome]], ...]] = (
    (Strategy.DIRECT, direct),
    (Strategy.DIAGNOSE, diagnose),
    (Strategy.DIAGNOSE_THEN_ESCALATE, diagnose_then_escalate),
)
PREFERENCE: Final = (*(s for s, _ in DETERMINISTIC), Strategy.MODEL)

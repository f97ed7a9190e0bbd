"""Plan validation: nothing in a draft is trusted, whoever wrote it.

`validate` judges a plan against the capability vocabulary and the mind, and returns every
error and warning with the step and the field path (in the resource's own spelling), so a
`kubectl describe plan` reader can find what is wrong. A plan with errors stays a `draft` and
never runs (`ValidationResult.status`).

The rules, in the order they are checked:

- one to thirty steps; keys unique and short (`P1`, `V1`); titles present;
- dependencies name steps of the plan, no step depends on itself, no dependency is listed
  twice, and the graph is acyclic (Kahn's algorithm; each cycle is reported with its steps);
- each kind is from the closed vocabulary and carries exactly the fields its kind uses;
- capabilities are registered and not locked; parameters pass the capability's schema, unknown
  parameters included; a declared target equals the one derived from the parameters;
- checks (expectations, preconditions, monitors) use read-only capabilities, a known
  comparison and a field the capability reports, with a value of the field's type;
- a verify step depends on the step whose expectation it verifies, and that step has one;
- internal actions are from the closed vocabulary; a summary has something to summarise;
- writing, non-idempotent steps are limited to one attempt;
- warnings: a writing step without an expectation, a check observing another target than its
  step acts on, a step policy denies, an estimate over budget.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from itertools import pairwise
from typing import Any

from minds.domain.capabilities.policy import decide
from minds.domain.capabilities.registry import (
    CapabilityRegistry,
    CapabilitySpec,
    ObservationType,
    parameter_problems,
)
from minds.domain.planning.budget import KINDS, number
from minds.domain.planning.graph import cycle_path, cycles, dependency_graph, topological_order
from minds.domain.planning.model import (
    MAX_ISSUES,
    MAX_STEPS,
    STEP_KEY_PATTERN,
    Check,
    Comparison,
    InternalAction,
    IssueCode,
    Plan,
    Step,
    StepKind,
    ValidationIssue,
    ValidationResult,
    as_number,
    render_scalar,
)
from minds.domain.planning.views import MindView
from minds.domain.resources.mind import PolicyDecision

_KEY = re.compile(STEP_KEY_PATTERN)

# The fields each kind uses beyond key, title, kind and dependsOn: (required, optional).
KIND_FIELDS: Mapping[StepKind, tuple[frozenset[str], frozenset[str]]] = {
    StepKind.CAPABILITY: (
        frozenset({"capability"}),
        frozenset(
            {
                "parameters",
                "target",
                "expectation",
                "precondition",
                "requires_approval",
                "max_attempts",
            }
        ),
    ),
    StepKind.REQUEST_CAPABILITY: (frozenset({"request"}), frozenset()),
    StepKind.VERIFY: (frozenset({"verifies"}), frozenset({"interval_seconds"})),
    StepKind.MONITOR: (
        frozenset({"check", "stable_seconds", "deadline_seconds"}),
        frozenset({"interval_seconds"}),
    ),
    StepKind.WAIT: (frozenset({"wait_seconds"}), frozenset()),
    StepKind.INTERNAL: (frozenset({"internal_action"}), frozenset({"note"})),
}
_COMMON_FIELDS = frozenset({"key", "title", "kind", "depends_on"})


def _alias(name: str) -> str:
    alias = Step.model_fields[name].alias
    return alias if alias is not None else name


class _Issues:
    """Collects findings; keeps the stored result bounded."""

    def __init__(self) -> None:
        self.errors: list[ValidationIssue] = []
        self.warnings: list[ValidationIssue] = []

    def error(self, code: IssueCode, message: str, **where: Any) -> None:
        self.errors.append(_issue(code, message, **where))

    def warning(self, code: IssueCode, message: str, **where: Any) -> None:
        self.warnings.append(_issue(code, message, **where))

    def result(self, order: list[str] | None) -> ValidationResult:
        return ValidationResult(
            errors=bounded(self.errors), warnings=bounded(self.warnings), order=order
        )


def _issue(
    code: IssueCode,
    message: str,
    *,
    step: str | None = None,
    field: str | None = None,
    steps: Sequence[str] | None = None,
) -> ValidationIssue:
    return ValidationIssue(
        code=code,
        message=message[:2000],
        step=step if step is not None and _KEY.fullmatch(step) else None,
        field=field[:300] if field is not None else None,
        steps=[key for key in steps if _KEY.fullmatch(key)][:MAX_STEPS] if steps else None,
    )


def bounded(issues: list[ValidationIssue]) -> list[ValidationIssue]:
    """At most `MAX_ISSUES`, the last saying how many more there were."""
    if len(issues) <= MAX_ISSUES:
        return issues
    hidden = len(issues) - (MAX_ISSUES - 1)
    return [
        *issues[: MAX_ISSUES - 1],
        _issue(IssueCode.TRUNCATED, f"{hidden} more issues not shown"),
    ]


def validate(plan: Plan, registry: CapabilityRegistry, mind: MindView) -> ValidationResult:
    """Judge a plan; see the module notes for the rules."""
    issues = _Issues()
    steps = list(plan.steps)
    count_ok = 1 <= len(steps) <= MAX_STEPS
    if not count_ok:
        issues.error(
            IssueCode.STEP_COUNT,
            f"a plan has 1 to {MAX_STEPS} steps; this one has {len(steps)}",
            field="steps",
        )
    keys_ok = _check_keys_and_titles(steps, issues)
    by_key: dict[str, Step] = {}
    for step in steps:
        by_key.setdefault(step.key, step)
    deps_ok = _check_dependencies(steps, by_key, issues)
    order = _order(steps, by_key, issues)
    for index, step in enumerate(steps):
        _check_step(index, step, by_key, registry, mind, issues)
    _check_budget(plan, issues)
    return issues.result(order if count_ok and keys_ok and deps_ok else None)


def _check_keys_and_titles(steps: Sequence[Step], issues: _Issues) -> bool:
    ok = True
    seen: set[str] = set()
    for index, step in enumerate(steps):
        path = f"steps[{index}]"
        if not _KEY.fullmatch(step.key):
            ok = False
            issues.error(
                IssueCode.INVALID_KEY,
                f"step key {step.key!r} is not a short key like P1 ({STEP_KEY_PATTERN})",
                field=f"{path}.key",
            )
        elif step.key in seen:
            ok = False
            issues.error(
                IssueCode.DUPLICATE_KEY,
                f"step key {step.key} is used by more than one step",
                step=step.key,
                field=f"{path}.key",
            )
        seen.add(step.key)
        if not step.title.strip():
            issues.error(
                IssueCode.MISSING_TITLE,
                "every step needs a title",
                step=step.key,
                field=f"{path}.title",
            )
    return ok


def _check_dependencies(steps: Sequence[Step], by_key: Mapping[str, Step], issues: _Issues) -> bool:
    ok = True
    for index, step in enumerate(steps):
        listed: set[str] = set()
        for position, dependency in enumerate(step.depends_on):
            field = f"steps[{index}].dependsOn[{position}]"
            if dependency == step.key:
                ok = False
                issues.error(
                    IssueCode.SELF_DEPENDENCY,
                    f"step {step.key} depends on itself",
                    step=step.key,
                    field=field,
                )
            elif dependency not in by_key:
                ok = False
                issues.error(
                    IssueCode.UNKNOWN_DEPENDENCY,
                    f"step {step.key} depends on {dependency!r}, which is not a step of this plan",
                    step=step.key,
                    field=field,
                )
            elif dependency in listed:
                issues.error(
                    IssueCode.DUPLICATE_DEPENDENCY,
                    f"step {step.key} lists dependency {dependency} more than once",
                    step=step.key,
                    field=field,
                )
            listed.add(dependency)
    return ok


def _order(steps: Sequence[Step], by_key: Mapping[str, Step], issues: _Issues) -> list[str] | None:
    graph = dependency_graph(steps, by_key)
    order, left = topological_order(graph)
    if not left:
        return order
    for group in cycles(graph, left):
        path = cycle_path(graph, group)
        chain = ", ".join(f"{a} depends on {b}" for a, b in pairwise(path))
        issues.error(
            IssueCode.DEPENDENCY_CYCLE,
            f"dependency cycle among {', '.join(group)}: {chain}",
            step=group[0],
            field="steps",
            steps=group,
        )
    return None


def _set_fields(step: Step) -> set[str]:
    return {
        name
        for name, info in Step.model_fields.items()
        if name not in _COMMON_FIELDS and getattr(step, name) != info.default
    }


def _check_step(
    index: int,
    step: Step,
    by_key: Mapping[str, Step],
    registry: CapabilityRegistry,
    mind: MindView,
    issues: _Issues,
) -> None:
    path = f"steps[{index}]"
    try:
        kind = StepKind(step.kind)
    except ValueError:
        issues.error(
            IssueCode.UNKNOWN_KIND,
            f"step kind {step.kind!r} is not one of {', '.join(k.value for k in StepKind)}",
            step=step.key,
            field=f"{path}.kind",
        )
        return
    required, optional = KIND_FIELDS[kind]
    present = _set_fields(step)
    for name in sorted(required - present):
        issues.error(
            IssueCode.MISSING_FIELD,
            f"a {kind.value} step needs {_alias(name)}",
            step=step.key,
            field=f"{path}.{_alias(name)}",
        )
    for name in sorted(present - required - optional):
        issues.error(
            IssueCode.FIELD_NOT_ALLOWED,
            f"a {kind.value} step does not use {_alias(name)}",
            step=step.key,
            field=f"{path}.{_alias(name)}",
        )
    if kind is StepKind.CAPABILITY:
        _check_capability_step(path, step, registry, mind, issues)
    elif kind is StepKind.REQUEST_CAPABILITY:
        _check_request(path, step, registry, mind, issues)
    elif kind is StepKind.VERIFY:
        _check_verify(path, step, by_key, issues)
    elif kind is StepKind.MONITOR:
        _check_monitor(path, step, registry, mind, issues)
    elif kind is StepKind.INTERNAL:
        _check_internal(path, step, issues)


def _known_capability(
    name: str,
    step: Step,
    field: str,
    registry: CapabilityRegistry,
    mind: MindView,
    issues: _Issues,
) -> CapabilitySpec | None:
    spec = registry.get(name)
    if spec is None:
        issues.error(
            IssueCode.UNKNOWN_CAPABILITY,
            f"{name!r} is not a registered capability",
            step=step.key,
            field=field,
        )
        return None
    if mind.locked(name):
        issues.error(
            IssueCode.LOCKED_CAPABILITY,
            f"{name} is locked for this mind",
            step=step.key,
            field=field,
        )
        return None
    return spec


def _target(
    spec: CapabilitySpec,
    parameters: Mapping[str, Any] | None,
    step: Step,
    field: str,
    issues: _Issues,
) -> str | None:
    """The target the parameters name, or None after reporting why they fail the schema."""
    problems = parameter_problems(spec, parameters)
    for problem in problems:
        issues.error(
            IssueCode.INVALID_PARAMETERS,
            f"{spec.name} parameter {problem.path}: {problem.message}",
            step=step.key,
            field=f"{field}.{problem.path}",
        )
    if problems:
        return None
    return spec.target_of(spec.parse(parameters))


def _check_capability_step(
    path: str, step: Step, registry: CapabilityRegistry, mind: MindView, issues: _Issues
) -> None:
    if step.capability is None:
        return
    spec = _known_capability(step.capability, step, f"{path}.capability", registry, mind, issues)
    if spec is None:
        return
    target = _target(spec, step.parameters, step, f"{path}.parameters", issues)
    if target is not None and step.target is not None and step.target != target:
        issues.error(
            IssueCode.TARGET_MISMATCH,
            f"target {step.target!r} does not agree with the parameters, which name {target!r}",
            step=step.key,
            field=f"{path}.target",
        )
    if target is not None:
        outcome = decide(mind.policy, spec.name, target, registry)
        if outcome.decision is PolicyDecision.DENY:
            issues.warning(
                IssueCode.POLICY_DENIES,
                f"policy denies {spec.name} on {target}: {outcome.reason}",
                step=step.key,
                field=f"{path}.capability",
            )
    writing = not spec.read_only
    if writing and not spec.idempotent and step.attempts_allowed > 1:
        issues.error(
            IssueCode.TOO_MANY_ATTEMPTS,
            f"{spec.name} writes and is not idempotent, so it is attempted at most once",
            step=step.key,
            field=f"{path}.maxAttempts",
        )
    if writing and step.expectation is None:
        issues.warning(
            IssueCode.MISSING_EXPECTATION,
            f"{spec.name} writes but the step states no expectation, so its outcome will "
            "not be verified by observation",
            step=step.key,
            field=f"{path}.expectation",
        )
    for name, checked in (("expectation", step.expectation), ("precondition", step.precondition)):
        if checked is None:
            continue
        check_target = _check_check(
            checked.check, f"{path}.{name}.check", step, registry, mind, issues
        )
        if target is not None and check_target is not None and check_target != target:
            issues.warning(
                IssueCode.CHECK_TARGET_DIFFERS,
                f"the {name} observes {check_target!r} but the step acts on {target!r}",
                step=step.key,
                field=f"{path}.{name}.check.parameters",
            )


def _check_check(
    check: Check,
    field: str,
    step: Step,
    registry: CapabilityRegistry,
    mind: MindView,
    issues: _Issues,
) -> str | None:
    """Validate a read-only check; return the target it observes when that is known."""
    spec = _known_capability(check.capability, step, f"{field}.capability", registry, mind, issues)
    if spec is None:
        return None
    if not spec.read_only:
        issues.error(
            IssueCode.CHECK_NOT_READ_ONLY,
            f"checks observe and never act: {spec.name} is not read-only",
            step=step.key,
            field=f"{field}.capability",
        )
    target = _target(spec, check.parameters, step, f"{field}.parameters", issues)
    try:
        comparison = Comparison(check.comparison)
    except ValueError:
        issues.error(
            IssueCode.UNKNOWN_COMPARISON,
            f"comparison {check.comparison!r} is not one of "
            f"{', '.join(c.value for c in Comparison)}",
            step=step.key,
            field=f"{field}.comparison",
        )
        return target
    field_type = spec.observation_fields.get(check.field)
    if field_type is None:
        known = ", ".join(spec.observation_fields) or "nothing"
        issues.error(
            IssueCode.UNKNOWN_OBSERVATION_FIELD,
            f"{spec.name} does not report {check.field!r} (it reports {known})",
            step=step.key,
            field=f"{field}.field",
        )
        return target
    problem = _type_problem(comparison, field_type, check.value)
    if problem is not None:
        issues.error(
            IssueCode.COMPARISON_TYPE,
            f"{check.field}: {problem}",
            step=step.key,
            field=f"{field}.value",
        )
    return target


def _type_problem(comparison: Comparison, field_type: ObservationType, value: str) -> str | None:
    numeric = as_number(value) is not None
    if comparison.numeric and field_type is not ObservationType.NUMBER:
        return f"{comparison.value} compares numbers but the field is a {field_type.value}"
    if comparison is Comparison.CONTAINS and field_type is not ObservationType.STRING:
        return f"contains needs a string field; the field is a {field_type.value}"
    if field_type is ObservationType.NUMBER and not numeric:
        return f"the field is a number but {value!r} is not one"
    if field_type is ObservationType.BOOLEAN and value not in (
        render_scalar(True),
        render_scalar(False),
    ):
        return f"the field is a boolean but {value!r} is neither true nor false"
    return None


def _check_request(
    path: str, step: Step, registry: CapabilityRegistry, mind: MindView, issues: _Issues
) -> None:
    request = step.request
    if request is None:
        return
    spec = _known_capability(
        request.capability, step, f"{path}.request.capability", registry, mind, issues
    )
    if not request.target_pattern.strip():
        issues.error(
            IssueCode.MISSING_FIELD,
            "a capability request names a target pattern",
            step=step.key,
            field=f"{path}.request.targetPattern",
        )
    if spec is None:
        return
    known = {name for name in spec.parameters.model_fields} | {
        info.alias for info in spec.parameters.model_fields.values() if info.alias
    }
    for name in request.parameter_limits or {}:
        if name not in known:
            issues.error(
                IssueCode.INVALID_PARAMETERS,
                f"{spec.name} has no parameter {name!r} to limit",
                step=step.key,
                field=f"{path}.request.parameterLimits.{name}",
            )


def _check_verify(path: str, step: Step, by_key: Mapping[str, Step], issues: _Issues) -> None:
    if step.verifies is None:
        return
    field = f"{path}.verifies"
    verified = by_key.get(step.verifies)
    if verified is None or verified is step:
        issues.error(
            IssueCode.VERIFY_UNKNOWN_STEP,
            f"step {step.key} verifies {step.verifies!r}, which is not another step of this plan",
            step=step.key,
            field=field,
        )
        return
    if step.verifies not in step.depends_on:
        issues.error(
            IssueCode.VERIFY_NOT_DEPENDENT,
            f"step {step.key} verifies {step.verifies} and so must depend on it",
            step=step.key,
            field=f"{path}.dependsOn",
        )
    if verified.kind != StepKind.CAPABILITY or verified.expectation is None:
        issues.error(
            IssueCode.VERIFY_NO_EXPECTATION,
            f"step {step.verifies} states no expectation for {step.key} to verify",
            step=step.key,
            field=field,
        )


def _check_monitor(
    path: str, step: Step, registry: CapabilityRegistry, mind: MindView, issues: _Issues
) -> None:
    if step.check is not None:
        _check_check(step.check, f"{path}.check", step, registry, mind, issues)
    if (
        step.stable_seconds is not None
        and step.deadline_seconds is not None
        and step.stable_seconds > step.deadline_seconds
    ):
        issues.error(
            IssueCode.MONITOR_STABLE_EXCEEDS_DEADLINE,
            f"the check cannot hold for {step.stable_seconds}s before a deadline of "
            f"{step.deadline_seconds}s",
            step=step.key,
            field=f"{path}.stableSeconds",
        )


def _check_internal(path: str, step: Step, issues: _Issues) -> None:
    if step.internal_action is None:
        return
    try:
        action = InternalAction(step.internal_action)
    except ValueError:
        issues.error(
            IssueCode.UNKNOWN_INTERNAL_ACTION,
            f"internal action {step.internal_action!r} is not one of "
            f"{', '.join(a.value for a in InternalAction)}",
            step=step.key,
            field=f"{path}.internalAction",
        )
        return
    if action is InternalAction.SUMMARISE_FINDINGS and not step.depends_on:
        issues.error(
            IssueCode.SUMMARY_WITHOUT_DEPENDENCIES,
            "summarise_findings summarises the results of its dependencies; it has none",
            step=step.key,
            field=f"{path}.dependsOn",
        )


def _check_budget(plan: Plan, issues: _Issues) -> None:
    estimate, budget = plan.estimate, plan.budget
    over = [
        f"{number(measure.amount(estimate))} {measure.noun} > {number(cap)}"
        for measure in KINDS.values()
        if (cap := measure.cap(budget)) is not None and measure.amount(estimate) > cap
    ]
    if over:
        issues.warning(
            IssueCode.ESTIMATE_OVER_BUDGET,
            "the estimate exceeds the budget (" + "; ".join(over) + "); the executor will "
            "block the plan when the budget is exhausted",
            field="estimate",
        )

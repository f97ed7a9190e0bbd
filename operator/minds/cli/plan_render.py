"""Pure renderings of a plan for people: its findings, its header and its dependency tree.

Everything here takes the spec (a `Plan`) and the resource's status as the API server returned
it (a plain dict, empty for a plan nobody has judged yet) and returns text, so the output is
tested without a cluster. The status is read leniently: a malformed entry is skipped rather than
failing the whole view, because a person needs to see a plan most when something is off.

The tree hangs each step under the dependency that finishes last in the topological order, so
reading top-down every step appears after everything it waits for; its other dependencies are
named in an "also after" note. Steps Kahn's algorithm cannot order (on or after a cycle) are
listed at the top level with what they wait for.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from pydantic import ValidationError

from minds.domain.capabilities.registry import REGISTRY
from minds.domain.execution.machine import OPEN_PLAN
from minds.domain.planning.budget import KINDS, Kind, elapsed, number
from minds.domain.planning.budget import rows as budget_rows
from minds.domain.planning.graph import cycles, dependency_graph, topological_order
from minds.domain.planning.model import (
    Budget,
    Check,
    Comparison,
    Plan,
    ResourceUse,
    Step,
    StepKind,
    StepState,
    StepStatus,
    ValidationIssue,
    ValidationResult,
)

DONE = frozenset({StepStatus.COMPLETED.value, StepStatus.SKIPPED.value})
SYMBOLS = {
    Comparison.EQUALS: "==",
    Comparison.NOT_EQUALS: "!=",
    Comparison.LESS_THAN: "<",
    Comparison.LESS_OR_EQUAL: "<=",
    Comparison.GREATER_THAN: ">",
    Comparison.GREATER_OR_EQUAL: ">=",
    Comparison.CONTAINS: "contains",
}


@dataclass(frozen=True)
class Finding:
    """One error or warning as the CLI prints it. Unlike `ValidationIssue` its code is free
    text, so shape errors found before validation can run (code `schema`) print the same way."""

    level: str
    code: str
    message: str
    step: str | None = None
    field: str | None = None
    steps: tuple[str, ...] = ()

    @classmethod
    def from_issue(cls, level: str, issue: ValidationIssue) -> Finding:
        return cls(
            level,
            issue.code.value,
            issue.message,
            issue.step,
            issue.field,
            tuple(issue.steps or ()),
        )

    def as_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"code": self.code, "message": self.message}
        if self.step:
            out["step"] = self.step
        if self.field:
            out["field"] = self.field
        if self.steps:
            out["steps"] = list(self.steps)
        return out


def findings(result: ValidationResult) -> list[Finding]:
    return [Finding.from_issue("error", i) for i in result.errors] + [
        Finding.from_issue("warning", i) for i in result.warnings
    ]


def render_finding(finding: Finding) -> str:
    where: list[str] = []
    if finding.steps:
        where.append("steps " + ", ".join(finding.steps))
    elif finding.step:
        where.append(f"step {finding.step}")
    if finding.field:
        where.append(f"field {finding.field}")
    located = f" ({'; '.join(where)})" if where else ""
    return f"{finding.level} {finding.code}{located}: {finding.message}"


def count(n: int, noun: str) -> str:
    return f"{n} {noun}" if n == 1 else f"{n} {noun}s"


def seconds(value: int) -> str:
    """A duration as a person says it: 45 s, 30 min, 2 h, 1 h 30 min."""
    if value < 120 or value % 60:
        return f"{value} s"
    hours, minutes = divmod(value // 60, 60)
    if not hours:
        return f"{minutes} min"
    return f"{hours} h" if not minutes else f"{hours} h {minutes} min"


def _target(capability: str, parameters: Mapping[str, Any] | None) -> str | None:
    spec = REGISTRY.get(capability)
    if spec is None:
        return None
    try:
        return spec.target_of(spec.parse(parameters))
    except ValueError:
        return None


def _acts_on(capability: str, parameters: Mapping[str, Any] | None, target: str | None) -> str:
    target = target or _target(capability, parameters)
    return f"{capability} on {target}" if target else f"{capability} {dict(parameters or {})}"


def render_check(check: Check, step_target: str | None = None) -> str:
    target = _target(check.capability, check.parameters)
    on = f" on {target}" if target and target != step_target else ""
    comparison = SYMBOLS.get(check.comparison, check.comparison)
    return f"{check.capability}{on}: {check.field} {comparison} {check.value}"


def _step_details(step: Step, by_key: Mapping[str, Step]) -> list[str]:
    """What the spec says the step does, one line per fact."""
    kind = step.kind
    lines: list[str] = []
    if kind == StepKind.CAPABILITY and step.capability:
        target = step.target or _target(step.capability, step.parameters)
        extras = []
        if step.requires_approval:
            extras.append("approval required")
        if step.max_attempts and step.max_attempts > 1:
            extras.append(f"up to {step.max_attempts} attempts")
        lines.append(
            _acts_on(step.capability, step.parameters, target) + "".join(f", {e}" for e in extras)
        )
        if step.precondition is not None:
            pre = step.precondition
            lines.append(f"only if: {pre.description} ({render_check(pre.check, target)})")
        if step.expectation is not None:
            exp = step.expectation
            lines.append(f"expects: {exp.description}")
            lines.append(
                f"  check {render_check(exp.check, target)}; confidence {exp.confidence:g}; "
                f"window {seconds(exp.window_seconds)}"
            )
    elif kind == StepKind.REQUEST_CAPABILITY and step.request is not None:
        req = step.request
        lines.append(
            f"asks for {req.capability} on {req.target_pattern} for "
            f"{seconds(req.duration_seconds)}, at most {count(req.operation_cap, 'operation')}"
        )
        lines.append(f"risk: {req.risk}; mitigation: {req.mitigation}; fallback: {req.fallback}")
    elif kind == StepKind.VERIFY and step.verifies:
        verified = by_key.get(step.verifies)
        expectation = verified.expectation if verified is not None else None
        what = f": {expectation.description}" if expectation is not None else ""
        lines.append(f"verifies {step.verifies}'s expectation{what}")
    elif kind == StepKind.MONITOR and step.check is not None:
        lines.append(f"holds: {render_check(step.check)}")
        stable = seconds(step.stable_seconds) if step.stable_seconds else "?"
        deadline = seconds(step.deadline_seconds) if step.deadline_seconds else "?"
        lines.append(f"  stable for {stable}, or fails at {deadline}")
    elif kind == StepKind.WAIT and step.wait_seconds:
        lines.append(f"waits {seconds(step.wait_seconds)}")
    elif kind == StepKind.INTERNAL and step.internal_action:
        lines.append(str(step.internal_action))
        if step.note:
            lines.append(f"note: {step.note}")
    return lines


def _state_details(state: Mapping[str, Any]) -> list[str]:
    """What the status says happened to the step."""
    lines: list[str] = []
    observation = state.get("observation")
    if isinstance(observation, Mapping) and observation.get("summary"):
        holds = observation.get("holds")
        verdict = " (holds)" if holds is True else " (does not hold)" if holds is False else ""
        lines.append(f"observed: {observation['summary']}{verdict}")
    if state.get("reason"):
        lines.append(f"reason: {state['reason']}")
    refs = [
        f"{label} {state[name]}"
        for label, name in (
            ("approval", "approvalRef"),
            ("grant", "grantRef"),
            ("execution", "executionRef"),
            ("prediction", "predictionRef"),
        )
        if state.get(name)
    ]
    attempts = state.get("attempts")
    if isinstance(attempts, int) and attempts > 0:
        refs.append(count(attempts, "attempt"))
    if refs:
        lines.append(" · ".join(refs))
    lease = state.get("lease")
    if isinstance(lease, Mapping) and lease.get("holder"):
        lines.append(f"claimed by {lease['holder']} until {lease.get('expiresAt', '?')}")
    if state.get("nextRunAt"):
        lines.append(f"next run at {state['nextRunAt']}")
    return lines


def step_states(status: Mapping[str, Any]) -> dict[str, Mapping[str, Any]]:
    """The status entries of the steps, by key (the first entry wins)."""
    states: dict[str, Mapping[str, Any]] = {}
    entries = status.get("steps")
    for entry in entries if isinstance(entries, list) else []:
        if isinstance(entry, Mapping) and isinstance(entry.get("key"), str):
            states.setdefault(entry["key"], entry)
    return states


def step_status(states: Mapping[str, Mapping[str, Any]], key: str) -> str:
    value = states.get(key, {}).get("status")
    return value if isinstance(value, str) and value else StepStatus.PENDING.value


@dataclass
class Layout:
    """Where each step goes in the tree; steps are named by their index in the plan."""

    roots: list[int] = field(default_factory=list)
    children: dict[int, list[int]] = field(default_factory=dict)
    notes: dict[int, list[str]] = field(default_factory=dict)


def layout(steps: Sequence[Step]) -> Layout:
    by_key: dict[str, Step] = {}
    index: dict[str, int] = {}
    for i, step in enumerate(steps):
        by_key.setdefault(step.key, step)
        index.setdefault(step.key, i)
    graph = dependency_graph(steps, by_key)
    order, left = topological_order(graph)
    rank = {key: position for position, key in enumerate(order)}
    on_cycle = {key for group in cycles(graph, left) for key in group}
    out = Layout()
    for i, step in enumerate(steps):
        notes = out.notes.setdefault(i, [])
        unknown = [d for d in step.depends_on if d not in by_key]
        if unknown:
            notes.append(f"after {', '.join(unknown)}, which is not a step of this plan")
        if step.key in step.depends_on:
            notes.append("depends on itself")
        if index[step.key] != i:
            notes.append(f"duplicate key: another step is already {step.key}")
            out.roots.append(i)
            continue
        deps = graph[step.key]
        if step.key in left:
            why = "on a dependency cycle" if step.key in on_cycle else "after a dependency cycle"
            notes.append(
                f"cannot be ordered: {why}" + (f"; after {', '.join(deps)}" if deps else "")
            )
            out.roots.append(i)
            continue
        if not deps:
            out.roots.append(i)
            continue
        parent = max(deps, key=rank.__getitem__)
        out.children.setdefault(index[parent], []).append(i)
        others = [d for d in deps if d != parent]
        if others:
            notes.append(f"also after {', '.join(others)}")
    return out


def render_tree(spec: Plan, status: Mapping[str, Any]) -> list[str]:
    """The dependency graph as a tree, each step with its kind, status, spec and state."""
    steps = list(spec.steps)
    by_key: dict[str, Step] = {}
    for step in steps:
        by_key.setdefault(step.key, step)
    states = step_states(status)
    shape = layout(steps)
    # A duplicate key's status entry belongs to the first step with that key.
    first = {step.key: i for i, step in reversed(list(enumerate(steps)))}
    lines = ["steps"]
    if not steps:
        return [*lines, "└── (none)"]

    def draw(i: int, prefix: str, last: bool) -> Iterator[str]:
        step = steps[i]
        yield (
            f"{prefix}{'└── ' if last else '├── '}{step.key} "
            f"[{step_status(states, step.key)}] {step.kind}: {step.title}"
        )
        inner = prefix + ("    " if last else "│   ")
        children = shape.children.get(i, [])
        gutter = "│ " if children else "  "
        state = states.get(step.key, {}) if first[step.key] == i else {}
        details = [*_step_details(step, by_key), *shape.notes.get(i, []), *_state_details(state)]
        for detail in details:
            yield f"{inner}{gutter}{detail}".rstrip()
        for n, child in enumerate(children):
            yield from draw(child, inner, n == len(children) - 1)

    for n, root in enumerate(shape.roots):
        lines.extend(draw(root, "", n == len(shape.roots) - 1))
    return lines


def _progress(spec: Plan, status: Mapping[str, Any]) -> str:
    if isinstance(status.get("progress"), str):
        return str(status["progress"])
    states = step_states(status)
    done = sum(1 for step in spec.steps if step_status(states, step.key) in DONE)
    return f"{done}/{len(spec.steps)}"


def _stored_finding(level: str, raw: object) -> Finding | None:
    if not isinstance(raw, Mapping) or not isinstance(raw.get("code"), str):
        return None
    steps = raw.get("steps")
    return Finding(
        level,
        raw["code"],
        str(raw.get("message", "")),
        raw.get("step") if isinstance(raw.get("step"), str) else None,
        raw.get("field") if isinstance(raw.get("field"), str) else None,
        tuple(str(s) for s in steps) if isinstance(steps, list) else (),
    )


def stored_findings(status: Mapping[str, Any]) -> tuple[list[Finding], list[Finding]] | None:
    """The errors and warnings in `status.validation`, read as plain data: a controller newer
    than this CLI may use codes it does not know, and those still deserve to be shown."""
    raw = status.get("validation")
    if not isinstance(raw, Mapping):
        return None
    found: list[list[Finding]] = []
    for level, name in (("error", "errors"), ("warning", "warnings")):
        entries = raw.get(name)
        if entries is not None and not isinstance(entries, list):
            return None
        read = (_stored_finding(level, entry) for entry in entries or [])
        found.append([f for f in read if f is not None])
    return found[0], found[1]


def render_header(name: str, namespace: str, spec: Plan, status: Mapping[str, Any]) -> list[str]:
    """Who the plan is for, where it stands and what validation said of it."""
    lines = [f"Plan {namespace}/{name}: {spec.objective}"]
    lines.append(
        f"mind {spec.mind or '(none)'} · origin {spec.origin} · strategy {spec.strategy} · "
        f"revision {spec.revision}"
    )
    if spec.supersedes or spec.superseded_by:
        links = [f"supersedes {spec.supersedes}"] if spec.supersedes else []
        links += [f"superseded by {spec.superseded_by}"] if spec.superseded_by else []
        lines.append(" · ".join(links))
    phase = status.get("phase")
    if isinstance(phase, str) and phase:
        state = f"phase {phase} · progress {_progress(spec, status)}"
        if status.get("waitingOn"):
            state += f" · waiting on {status['waitingOn']}"
        lines.append(state)
    else:
        lines.append("phase unknown: no controller has judged this plan yet (no status)")
    if status.get("reason"):
        lines.append(f"reason: {status['reason']}")
    if spec.risk:
        lines.append(f"risk: {spec.risk}")
    lines.extend(f"done when: {c}" for c in spec.completion_criteria)
    lines.extend(f"abort if: {c}" for c in spec.abort_conditions)
    lines.extend(
        f"assumes: {a.belief} (confidence at least {a.min_confidence:g})" for a in spec.assumptions
    )
    stored = stored_findings(status)
    if stored is not None:
        errors, warnings = stored
        tally = f"{count(len(errors), 'error')}, {count(len(warnings), 'warning')}"
        lines.append(f"validation: {tally}")
        lines.extend(f"  {render_finding(f)}" for f in [*errors, *warnings])
    return lines


def _lenient(model: type[Budget] | type[ResourceUse], raw: object) -> Any:
    if not isinstance(raw, Mapping):
        return None
    try:
        return model.model_validate(raw)
    except ValidationError:
        return None


def _amount(value: float | None) -> str:
    return "-" if value is None else number(value)


def render_budget(spec: Plan, status: Mapping[str, Any], now: datetime | None) -> list[str]:
    """Each kind of the budget the executor enforces: used, cap (``-``: none) and the estimate
    admission computed. Wall time used runs from the first step started to ``now`` (``-``
    without a clock, or while no step has started)."""
    cap: Budget = _lenient(Budget, status.get("budget")) or spec.budget
    use: ResourceUse = _lenient(ResourceUse, status.get("actual")) or ResourceUse()
    estimate: ResourceUse | None = _lenient(ResourceUse, status.get("estimate"))
    lines = [f"{'budget':<14}{'used':>6}{'cap':>7}{'estimate':>10}"]
    for row in budget_rows(cap, use, estimate):
        used: float | None = row.used
        if row.kind is Kind.WALL_SECONDS:
            used = _wall(status, now)
        lines.append(
            f"  {KINDS[row.kind].noun:<12}{_amount(used):>6}{_amount(row.cap):>7}"
            f"{_amount(row.estimate):>10}"
        )
    return lines


def _wall(status: Mapping[str, Any], now: datetime | None) -> float | None:
    states: list[StepState] = []
    for raw in status.get("steps") or []:
        try:
            states.append(StepState.model_validate(raw))
        except ValidationError:
            continue
    if now is None or not any(s.started_at for s in states):
        return None
    if status.get("phase") not in OPEN_PLAN:
        # A plan at rest spends no more time: count up to its last step's end.
        now = max((s.finished_at for s in states if s.finished_at), default=now)
    return elapsed(states, now)


def render_show(
    name: str, namespace: str, spec: Plan, status: Mapping[str, Any], now: datetime | None = None
) -> str:
    """What `minds plan show` prints: the header, the budget, a blank line, the tree."""
    return "\n".join(
        [
            *render_header(name, namespace, spec, status),
            *render_budget(spec, status, now),
            "",
            *render_tree(spec, status),
        ]
    )

"""What a plan would cost, and how the planner scores the alternatives it considered.

    score = expected confidence - 0.05 * approvals - 0.001 * wall seconds - 0.01 * money

An estimate is an upper bound where the plan bounds itself and a typical value elsewhere:

- invocations: one per capability step;
- checks: one per precondition; a verify step polls its expectation's window at its
  interval; a monitor polls until its deadline;
- approvals: writing steps that require approval, steps policy answers with `approve` (unless a
  live grant covers them, or they run under a grant an earlier request step asks for), and
  every capability request;
- wall seconds: the longest dependency path, with each capability step taking its
  capability's typical duration, a verify its window, a monitor its deadline, a wait its
  period, and requests and internal actions nothing (operator time is priced as an approval);
- network operations: invocations of capabilities that leave the cluster and the host;
- money: the prices of the capabilities that capability steps invoke, as the platform team
  priced them (zero when unpriced);
- tokens: what the model call that proposed the plan used.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from datetime import datetime

from minds.domain.capabilities.policy import target_matches
from minds.domain.capabilities.registry import CapabilityRegistry
from minds.domain.planning.graph import dependency_graph, topological_order
from minds.domain.planning.model import Plan, ResourceUse, Step, StepKind
from minds.domain.planning.views import MindView
from minds.domain.resources.mind import PolicyDecision

APPROVAL_WEIGHT = 0.05
WALL_SECOND_WEIGHT = 0.001
MONEY_WEIGHT = 0.01


def score(expected_confidence: float, estimate: ResourceUse) -> float:
    """The seed's formula, rounded so that scores compare and print stably."""
    value = (
        expected_confidence
        - APPROVAL_WEIGHT * estimate.approvals
        - WALL_SECOND_WEIGHT * estimate.wall_seconds
        - MONEY_WEIGHT * estimate.money
    )
    return round(value, 6)


def estimate(
    plan: Plan,
    registry: CapabilityRegistry,
    mind: MindView,
    now: datetime,
    *,
    tokens: int = 0,
) -> ResourceUse:
    """Estimate a plan's resource use (see the module notes). Unknown capabilities count as
    nothing: validation reports them."""
    by_key = {step.key: step for step in plan.steps}
    invocations = checks = approvals = network = 0
    money = 0.0
    durations: dict[str, int] = {}
    for step in plan.steps:
        calls, looks, seconds = _calls_and_seconds(step, by_key, registry)
        durations[step.key] = seconds
        invocations += sum(calls.values())
        checks += sum(looks.values())
        for name, count in [*calls.items(), *looks.items()]:
            spec = registry.get(name)
            network += count if spec is not None and spec.network else 0
        # Only a capability step pays its capability's price (checks are free), as it runs.
        for name, count in calls.items():
            spec = registry.get(name)
            money += count * spec.money if spec is not None else 0.0
        approvals += _approvals(step, by_key, registry, mind, now)
    return ResourceUse(
        invocations=invocations,
        checks=checks,
        approvals=approvals,
        wall_seconds=_longest_path(plan, durations),
        network_operations=network,
        money=round(money, 6),
        tokens=tokens,
    )


def _calls_and_seconds(
    step: Step, by_key: Mapping[str, Step], registry: CapabilityRegistry
) -> tuple[dict[str, int], dict[str, int], int]:
    """Invocations and checks per capability a step makes, and how long it takes."""
    calls: dict[str, int] = {}
    looks: dict[str, int] = {}
    seconds = 0

    def add(name: str, count: int) -> None:
        looks[name] = looks.get(name, 0) + count

    if step.kind == StepKind.CAPABILITY and step.capability is not None:
        spec = registry.get(step.capability)
        calls[step.capability] = 1
        seconds = spec.expected_seconds if spec is not None else 0
        if step.precondition is not None:
            add(step.precondition.check.capability, 1)
            pre = registry.get(step.precondition.check.capability)
            seconds += pre.expected_seconds if pre is not None else 0
    elif step.kind == StepKind.VERIFY and step.verifies is not None:
        verified = by_key.get(step.verifies)
        if verified is not None and verified.expectation is not None:
            window = verified.expectation.window_seconds
            add(verified.expectation.check.capability, _polls(window, step.poll_interval_seconds))
            seconds = window
    elif step.kind == StepKind.MONITOR and step.check is not None:
        deadline = step.deadline_seconds or 0
        add(step.check.capability, _polls(deadline, step.poll_interval_seconds))
        seconds = deadline
    elif step.kind == StepKind.WAIT:
        seconds = step.wait_seconds or 0
    return calls, looks, seconds


def _polls(period: int, interval: int) -> int:
    return max(1, math.ceil(period / max(1, interval)))


def _approvals(
    step: Step,
    by_key: Mapping[str, Step],
    registry: CapabilityRegistry,
    mind: MindView,
    now: datetime,
) -> int:
    if step.kind == StepKind.REQUEST_CAPABILITY:
        return 1
    if step.kind != StepKind.CAPABILITY or step.capability is None:
        return 0
    spec = registry.get(step.capability)
    if spec is None:
        return 0
    if step.requires_approval and not spec.read_only:
        return 1
    target = step_target(step, registry)
    if target is None or _requested_before(step, by_key, target):
        return 0
    decision = mind.decide(step.capability, target, now, registry).decision
    return 1 if decision is PolicyDecision.APPROVE else 0


def step_target(step: Step, registry: CapabilityRegistry) -> str | None:
    """The target a capability step acts on, when its parameters name one."""
    spec = registry.get(step.capability or "")
    if spec is None:
        return None
    try:
        return spec.target_of(spec.parse(step.parameters))
    except ValueError:
        return None


def _requested_before(step: Step, by_key: Mapping[str, Step], target: str) -> bool:
    """Whether the step runs under a grant that a request step it depends on asks for."""
    for key in step.depends_on:
        dependency = by_key.get(key)
        request = dependency.request if dependency is not None else None
        if (
            request is not None
            and request.capability == step.capability
            and target_matches(request.target_pattern, target)
        ):
            return True
    return False


def _longest_path(plan: Plan, durations: Mapping[str, int]) -> int:
    by_key: dict[str, Step] = {}
    for step in plan.steps:
        by_key.setdefault(step.key, step)
    graph = dependency_graph(plan.steps, by_key)
    order, _ = topological_order(graph)
    finish: dict[str, int] = {}
    for key in order:
        start = max((finish[d] for d in graph[key] if d in finish), default=0)
        finish[key] = start + durations.get(key, 0)
    return max(finish.values(), default=0)

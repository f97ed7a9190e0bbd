"""A plan's budget: the kinds it caps, what a step spends of each, and when a step may not run.

Every plan has a budget (the seed: invocations default to at most 20; wall time, money and
approvals may be capped). Checks are counted apart from invocations, with a cap of their own,
because a check only looks: "monitor until stable for fifteen minutes" polls some thirty times
and must not eat the invocations the plan's actions need.

What a step spends, by kind of step:

| step | invocations | checks | approvals | money |
|---|---|---|---|---|
| `capability` | 1 | 1 for its precondition | 1 when it asks a person | its capability's price |
| `request_capability` | | | 1 | |
| `verify`, `monitor` | | 1 per look | | |
| `wait`, `internal` | | | | |

Before a step starts, the executor asks ``blocking``: for each capped kind the step spends,
would used + spent pass the cap? Wall time is spent by every step that spends anything, so
such a step does not start once the plan's wall time is up. A step that spends nothing never
blocks. The reason always reads ``budget exhausted: X of Y <kind> used``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum
from typing import Final

from minds.domain.capabilities.registry import CapabilityRegistry
from minds.domain.planning.model import Budget, ResourceUse, Step, StepKind, StepState

#: How every reason a budget gives begins (metrics and alerts match on it).
BUDGET_EXHAUSTED: Final = "budget exhausted"


class Kind(StrEnum):
    """What a budget caps; the values are the budget's field names."""

    INVOCATIONS = "invocations"
    CHECKS = "checks"
    APPROVALS = "approvals"
    WALL_SECONDS = "wall_seconds"
    MONEY = "money"


@dataclass(frozen=True)
class Measure:
    """How one kind reads: its cap in a budget, its amount in a use, its name for people."""

    cap: Callable[[Budget], float | None]
    amount: Callable[[ResourceUse], float]
    noun: str


KINDS: Final[Mapping[Kind, Measure]] = {
    Kind.INVOCATIONS: Measure(lambda b: b.invocations, lambda u: u.invocations, "invocations"),
    Kind.CHECKS: Measure(lambda b: b.checks, lambda u: u.checks, "checks"),
    Kind.APPROVALS: Measure(lambda b: b.approvals, lambda u: u.approvals, "approvals"),
    Kind.WALL_SECONDS: Measure(lambda b: b.wall_seconds, lambda u: u.wall_seconds, "wall seconds"),
    Kind.MONEY: Measure(lambda b: b.money, lambda u: u.money, "money"),
}


def number(value: float) -> str:
    """An amount as people read it: 3, 2.5, 0.125."""
    return f"{value:g}"


def exhausted(kind: Kind, used: float, cap: float) -> str:
    """The one format of a budget's reason, in status, Events, the ledger and ``minds plan``."""
    return f"{BUDGET_EXHAUSTED}: {number(used)} of {number(cap)} {KINDS[kind].noun} used"


#: What one step of each kind spends, given its price and whether it asks a person.
SPENDS: Final[Mapping[StepKind, Callable[[Step, float, bool], ResourceUse]]] = {
    StepKind.CAPABILITY: lambda step, price, asks: ResourceUse(
        invocations=1,
        checks=1 if step.precondition is not None else 0,
        approvals=1 if asks else 0,
        money=price,
    ),
    StepKind.REQUEST_CAPABILITY: lambda step, price, asks: ResourceUse(approvals=1),
    StepKind.VERIFY: lambda step, price, asks: ResourceUse(checks=1),
    StepKind.MONITOR: lambda step, price, asks: ResourceUse(checks=1),
    StepKind.WAIT: lambda step, price, asks: ResourceUse(),
    StepKind.INTERNAL: lambda step, price, asks: ResourceUse(),
}


def price(step: Step, registry: CapabilityRegistry) -> float:
    """What the step's capability costs per invocation, as the registry prices it."""
    spec = registry.get(step.capability or "") if step.kind is StepKind.CAPABILITY else None
    return spec.money if spec is not None else 0.0


def spends(step: Step, registry: CapabilityRegistry, *, asks: bool) -> ResourceUse:
    """At most what one run of ``step`` spends. ``asks``: whether it would ask a person (a
    step that requires approval, or one policy sends for approval)."""
    return SPENDS[step.kind](step, price(step, registry), asks)


def elapsed(steps: Iterable[StepState], now: datetime) -> int:
    """Wall time as the budget counts it: whole seconds since the plan's first step started."""
    started = min((s.started_at for s in steps if s.started_at), default=None)
    return max(0, int((now - started).total_seconds())) if started is not None else 0


def used(actual: ResourceUse, steps: Iterable[StepState], now: datetime) -> ResourceUse:
    """What a plan has used so far: its counters, and the wall time up to ``now``."""
    return actual.model_copy(update={"wall_seconds": elapsed(steps, now)})


def blocking(budget: Budget, use: ResourceUse, spent: ResourceUse) -> str | None:
    """Why a step that would spend ``spent`` may not start, given ``use`` so far; None if it
    may. A step that spends nothing never blocks."""
    if spent == ResourceUse():
        return None
    # Any step that spends also takes time: a second at least, so it may not start once the
    # plan's wall time is up.
    spent = spent.model_copy(update={"wall_seconds": max(1, spent.wall_seconds)})
    for kind, measure in KINDS.items():
        cap, more = measure.cap(budget), measure.amount(spent)
        if cap is None or more <= 0:
            continue
        so_far = measure.amount(use)
        if so_far + more > cap:
            return exhausted(kind, so_far, cap)
    return None


def added(use: ResourceUse, more: ResourceUse) -> ResourceUse:
    """Two uses counted together (the counters that accumulate: not wall time or tokens)."""
    return use.model_copy(
        update={
            "invocations": use.invocations + more.invocations,
            "checks": use.checks + more.checks,
            "approvals": use.approvals + more.approvals,
            "network_operations": use.network_operations + more.network_operations,
            "money": round(use.money + more.money, 6),
        }
    )


def rows(budget: Budget, use: ResourceUse, estimate: ResourceUse | None) -> list[BudgetRow]:
    """Each kind's use against its cap (and the estimate, when known), for people to read."""
    return [
        BudgetRow(
            kind,
            measure.amount(use),
            measure.cap(budget),
            measure.amount(estimate) if estimate is not None else None,
        )
        for kind, measure in KINDS.items()
    ]


@dataclass(frozen=True)
class BudgetRow:
    kind: Kind
    used: float
    cap: float | None
    estimate: float | None

"""The budget's pure rules: what a step spends, when it blocks, and the one reason format."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import given
from hypothesis import strategies as st

from minds.domain.capabilities.registry import REGISTRY
from minds.domain.plan_admission import effective_budget
from minds.domain.planning.budget import (
    KINDS,
    SPENDS,
    Kind,
    added,
    blocking,
    elapsed,
    exhausted,
    rows,
    spends,
)
from minds.domain.planning.model import Budget, ResourceUse, Step, StepKind, StepState

from .builders import monitor, request, restart, status, verify, wait

NOW = datetime(2026, 1, 1, tzinfo=UTC)


def step(raw: dict[str, object]) -> Step:
    return Step.model_validate(raw)


@pytest.mark.parametrize(
    ("raw", "asks", "expected"),
    [
        (status(), False, ResourceUse(invocations=1)),
        (restart(), True, ResourceUse(invocations=1, approvals=1)),
        (verify(), False, ResourceUse(checks=1)),
        (monitor(), False, ResourceUse(checks=1)),
        (request(), False, ResourceUse(approvals=1)),
        (wait("W1"), False, ResourceUse()),
    ],
)
def test_what_each_kind_of_step_spends(
    raw: dict[str, object], asks: bool, expected: ResourceUse
) -> None:
    assert spends(step(raw), REGISTRY, asks=asks) == expected


def test_every_step_kind_has_a_spending_rule() -> None:

    assert set(SPENDS) == set(StepKind)


def test_a_capability_step_pays_its_registry_price() -> None:
    priced = REGISTRY.priced({"service.status": 1.5})
    assert spends(step(status()), priced, asks=False).money == 1.5


@pytest.mark.parametrize(
    ("cap", "use", "spent", "reason"),
    [
        (Budget(invocations=3), ResourceUse(invocations=3), ResourceUse(invocations=1),
         "budget exhausted: 3 of 3 invocations used"),
        (Budget(checks=10), ResourceUse(checks=10), ResourceUse(checks=1),
         "budget exhausted: 10 of 10 checks used"),
        (Budget(approvals=2), ResourceUse(approvals=2), ResourceUse(approvals=1),
         "budget exhausted: 2 of 2 approvals used"),
        (Budget(money=5), ResourceUse(money=4.5), ResourceUse(invocations=1, money=1),
         "budget exhausted: 4.5 of 5 money used"),
        (Budget(wall_seconds=60), ResourceUse(wall_seconds=60), ResourceUse(checks=1),
         "budget exhausted: 60 of 60 wall seconds used"),
        (Budget(invocations=3), ResourceUse(invocations=2), ResourceUse(invocations=1), None),
        # Checks do not spend invocations, nor invocations checks.
        (Budget(invocations=3), ResourceUse(invocations=3), ResourceUse(checks=1), None),
        (Budget(checks=3), ResourceUse(checks=3), ResourceUse(invocations=1), None),
        # Free capabilities never pass a money cap, even a spent one.
        (Budget(money=0), ResourceUse(money=0), ResourceUse(invocations=1), None),
        # A step that asks nobody passes a spent approvals cap.
        (Budget(approvals=0), ResourceUse(), ResourceUse(invocations=1), None),
    ],
)  # fmt: skip
def test_blocking(cap: Budget, use: ResourceUse, spent: ResourceUse, reason: str | None) -> None:
    assert blocking(cap, use, spent) == reason


@given(st.integers(0, 1000), st.integers(0, 1000), st.integers(1, 100))
def test_a_step_that_spends_nothing_never_blocks(used: int, elapsed_s: int, cap: int) -> None:
    spent = ResourceUse(invocations=used, checks=used, approvals=used, wall_seconds=elapsed_s)
    budget = Budget(invocations=cap, checks=cap, approvals=0, money=0, wall_seconds=1)
    assert blocking(budget, spent, ResourceUse()) is None


@given(st.integers(0, 300), st.integers(1, 300))
def test_a_step_runs_exactly_while_the_cap_allows(used: int, cap: int) -> None:
    reason = blocking(Budget(checks=cap), ResourceUse(checks=used), ResourceUse(checks=1))
    assert (reason is None) == (used < cap)
    if reason is not None:
        assert reason == exhausted(Kind.CHECKS, used, cap)


def test_wall_time_runs_from_the_first_step_started() -> None:
    steps = [
        StepState(key="A", started_at=NOW + timedelta(seconds=30)),
        StepState(key="B", started_at=NOW),
        StepState(key="C"),
    ]
    assert elapsed(steps, NOW + timedelta(seconds=90)) == 90
    assert elapsed([StepState(key="A")], NOW) == 0


def test_uses_add_up_counter_by_counter() -> None:
    total = added(ResourceUse(invocations=1, money=0.1), ResourceUse(checks=2, money=0.2))
    assert total == ResourceUse(invocations=1, checks=2, money=0.3)


def test_rows_name_every_kind_with_its_cap() -> None:
    shown = rows(Budget(), ResourceUse(checks=4), ResourceUse(checks=7))
    assert [r.kind for r in shown] == list(KINDS)
    checks = next(r for r in shown if r.kind is Kind.CHECKS)
    assert (checks.used, checks.cap, checks.estimate) == (4, 200, 7)
    assert next(r for r in shown if r.kind is Kind.MONEY).cap is None


@pytest.mark.parametrize(
    ("plan", "mind", "expected"),
    [
        (Budget(checks=500), Budget(checks=100), Budget(checks=100)),
        (Budget(checks=50), Budget(), Budget(checks=50)),
        (Budget(money=10), Budget(money=2.5), Budget(money=2.5)),
        (Budget(approvals=3), Budget(), Budget(approvals=3)),
        (Budget(), Budget(approvals=0, wall_seconds=60), Budget(approvals=0, wall_seconds=60)),
    ],
)
def test_a_plan_never_has_more_than_its_mind_allows_in_any_kind(
    plan: Budget, mind: Budget, expected: Budget
) -> None:
    assert effective_budget(plan, mind) == expected


@pytest.mark.parametrize("model", [Budget, ResourceUse])
def test_every_budget_field_is_described_for_kubectl_explain(model: type[Budget]) -> None:
    undescribed = [name for name, f in model.model_fields.items() if not f.description]
    assert undescribed == []

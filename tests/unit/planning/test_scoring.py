"""The scoring formula and the estimates it is fed."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from minds.domain.capabilities.registry import REGISTRY
from minds.domain.planning.model import Plan, ResourceUse
from minds.domain.planning.scoring import estimate, score

from .builders import (
    NOW,
    grant,
    mind,
    monitor,
    plan,
    request,
    restart,
    rule,
    status,
    summary,
    verify,
    wait,
)


@pytest.mark.parametrize(
    ("confidence", "approvals", "wall", "money", "expected"),
    [
        (0.8, 0, 0, 0.0, 0.8),
        (0.8, 1, 0, 0.0, 0.75),
        (0.8, 0, 100, 0.0, 0.7),
        (0.8, 0, 0, 10.0, 0.7),
        (0.8, 1, 70, 0.0, 0.68),
        (0.5, 3, 1000, 2.0, -0.67),
    ],
)
def test_the_formula(
    confidence: float, approvals: int, wall: int, money: float, expected: float
) -> None:
    usage = ResourceUse(approvals=approvals, wall_seconds=wall, money=money)
    assert score(confidence, usage) == pytest.approx(expected)


@given(
    st.floats(0, 1),
    st.integers(0, 20),
    st.integers(0, 100_000),
    st.floats(0, 1000),
    st.integers(0, 1000),
    st.integers(0, 1000),
)
def test_invocations_network_and_tokens_do_not_change_the_score(
    confidence: float, approvals: int, wall: int, money: float, calls: int, tokens: int
) -> None:
    base = ResourceUse(approvals=approvals, wall_seconds=wall, money=money)
    busier = base.model_copy(
        update={"invocations": calls, "network_operations": calls, "tokens": tokens}
    )
    assert score(confidence, busier) == score(confidence, base)
    expected = confidence - 0.05 * approvals - 0.001 * wall - 0.01 * money
    assert score(confidence, base) == pytest.approx(expected, abs=1e-6)


def _estimate(p: Plan, **mind_over: object) -> ResourceUse:
    return estimate(p, REGISTRY, mind(**mind_over), NOW)


def test_a_verified_restart() -> None:
    usage = _estimate(plan(restart(), verify()))
    # one restart, then the 60 s window polled every 10 s: checks, counted apart
    assert (usage.invocations, usage.checks) == (1, 6)
    assert usage.approvals == 1  # service.restart asks by default
    assert usage.wall_seconds == 10 + 60
    assert (usage.network_operations, usage.money, usage.tokens) == (0, 0.0, 0)


def test_approvals_follow_policy_and_the_step() -> None:
    allowed = (rule("service.restart", "allow"),)
    assert _estimate(plan(restart()), policy=allowed).approvals == 0
    required = plan(restart(requiresApproval=True))
    assert _estimate(required, policy=allowed).approvals == 1
    assert _estimate(plan(status())).approvals == 0


def test_a_live_grant_means_no_approval() -> None:
    logs = status(capability="logs.query")
    assert _estimate(plan(logs)).approvals == 1
    assert _estimate(plan(logs), grants=(grant(),)).approvals == 0


def test_a_step_under_a_requested_grant_is_not_counted_twice() -> None:
    logs = status(key="D4", capability="logs.query", dependsOn=["R1"])
    usage = _estimate(plan(request(), logs))
    assert usage.approvals == 1  # the request only


def test_wall_time_is_the_longest_dependency_path() -> None:
    steps = plan(wait("A", waitSeconds=30), wait("B", waitSeconds=50), wait("C", "A", "B"))
    assert _estimate(steps).wall_seconds == 55
    assert _estimate(plan(status(), summary("D1"))).wall_seconds == 2


def test_monitors_count_every_poll_until_the_deadline() -> None:
    usage = _estimate(plan(monitor(deadlineSeconds=600, intervalSeconds=60)))
    assert (usage.invocations, usage.checks) == (0, 10)
    assert usage.wall_seconds == 600


def test_browsing_is_network_use() -> None:
    browse = status(capability="browser.read", parameters={"url": "https://example.org"})
    assert _estimate(plan(browse)).network_operations == 1


def test_tokens_are_carried() -> None:
    assert estimate(plan(status()), REGISTRY, mind(), NOW, tokens=900).tokens == 900

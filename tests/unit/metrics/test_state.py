"""The state gauges, computed from objects as the API server holds them: one rule per test."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from minds.domain.beliefs import PredictionStatus
from minds.domain.metrics import catalogue as m
from minds.domain.metrics.catalogue import MetricSpec
from minds.domain.metrics.state import (
    ATTENTION_CAP,
    OUTCOME_UNKNOWN,
    ClusterState,
    PredictionSummary,
    state_samples,
)
from minds.domain.planning.budget import BUDGET_EXHAUSTED

NOW = datetime(2026, 12, 3, 12, 0, tzinfo=UTC)
NS = "team"


def mind(name: str = "m", **spec: Any) -> dict[str, Any]:
    body: dict[str, Any] = {"metadata": {"namespace": NS, "name": name}, "spec": spec}
    return body


def step(key: str, status: str = "pending", **extra: Any) -> dict[str, Any]:
    return {"key": key, "status": status, **extra}


def plan(
    phase: str = "executing",
    *steps: dict[str, Any],
    of: str = "m",
    actual: Mapping[str, Any] | None = None,
    budget: Mapping[str, Any] | None = None,
    origin: str = "template",
) -> dict[str, Any]:
    status: dict[str, Any] = {"phase": phase, "steps": list(steps), "actual": dict(actual or {})}
    if budget is not None:
        status["budget"] = dict(budget)
    return {
        "metadata": {"namespace": NS, "name": f"p-{phase}"},
        "spec": {"mind": of, "origin": origin},
        "status": status,
    }


def approval(of: str = "m", phase: str | None = "Pending", created: str = "") -> dict[str, Any]:
    body: dict[str, Any] = {
        "metadata": {"namespace": NS, "name": "a", "creationTimestamp": created},
        "spec": {"mind": of},
    }
    if phase is not None:
        body["status"] = {"phase": phase}
    return body


def values(
    metric: MetricSpec,
    state: ClusterState,
    summaries: list[PredictionSummary] | None = None,
    now: datetime = NOW,
) -> dict[tuple[str, ...], float]:
    samples = state_samples(state, [] if summaries is None else summaries, now, "1.2.3")
    return {s.labels: s.value for s in samples if s.metric == metric}


# -- budgets ------------------------------------------------------------------------------------


def test_budget_limit_per_resource_and_absent_when_unlimited() -> None:
    state = ClusterState(minds=[mind(budget={"invocations": 7, "approvals": 2})])
    assert values(m.BUDGET_LIMIT, state) == {
        (NS, "m", "invocations"): 7,
        (NS, "m", "checks"): 200,  # always capped, 200 by default
        (NS, "m", "approvals"): 2,
    }


def test_checks_have_a_ratio_of_their_own_apart_from_invocations() -> None:
    polling = plan(actual={"invocations": 2, "checks": 150}, budget={"invocations": 20})
    state = ClusterState(minds=[mind()], plans=[polling])
    got = values(m.BUDGET_USED_RATIO, state)
    assert got[(NS, "m", "checks")] == 0.75  # 150 of the default 200
    assert got[(NS, "m", "invocations")] == 0.1


def test_budget_limit_includes_wall_seconds_and_money_when_set() -> None:
    state = ClusterState(minds=[mind(budget={"wallSeconds": 600, "money": 2.5})])
    got = values(m.BUDGET_LIMIT, state)
    assert got[(NS, "m", "wall_seconds")] == 600
    assert got[(NS, "m", "money")] == 2.5
    assert got[(NS, "m", "invocations")] == 20  # always capped, 20 by default


def test_used_ratio_is_zero_without_an_open_plan() -> None:
    state = ClusterState(
        minds=[mind(budget={"invocations": 4})],
        plans=[plan("completed", actual={"invocations": 4}, budget={"invocations": 4})],
    )
    assert values(m.BUDGET_USED_RATIO, state) == {
        (NS, "m", "invocations"): 0.0,
        (NS, "m", "checks"): 0.0,
    }


def test_used_ratio_is_the_highest_over_open_plans() -> None:
    low = plan("executing", actual={"invocations": 1}, budget={"invocations": 4})
    high = plan("waiting", actual={"invocations": 3}, budget={"invocations": 4})
    state = ClusterState(minds=[mind(budget={"invocations": 4})], plans=[low, high])
    assert values(m.BUDGET_USED_RATIO, state)[(NS, "m", "invocations")] == 0.75


def test_used_ratio_counts_approvals_against_the_plans_budget() -> None:
    p = plan("awaiting_approval", actual={"approvals": 1}, budget={"approvals": 2})
    state = ClusterState(minds=[mind(budget={"approvals": 2})], plans=[p])
    assert values(m.BUDGET_USED_RATIO, state)[(NS, "m", "approvals")] == 0.5


def test_used_ratio_falls_back_to_the_plan_spec_budget() -> None:
    p = plan("executing", actual={"invocations": 2})
    p["spec"]["budget"] = {"invocations": 8}
    state = ClusterState(minds=[mind()], plans=[p])
    assert values(m.BUDGET_USED_RATIO, state)[(NS, "m", "invocations")] == 0.25


def test_wall_time_runs_from_the_first_started_step() -> None:
    started = (NOW - timedelta(seconds=150)).isoformat()
    later = (NOW - timedelta(seconds=10)).isoformat()
    p = plan(
        "executing",
        step("A1", "completed", startedAt=started),
        step("B1", "executing", startedAt=later),
        budget={"wallSeconds": 600},
    )
    state = ClusterState(minds=[mind(budget={"wallSeconds": 600})], plans=[p])
    assert values(m.BUDGET_USED_RATIO, state)[(NS, "m", "wall_seconds")] == 0.25


def test_used_ratio_never_exceeds_one_and_a_zero_limit_is_spent() -> None:
    started = (NOW - timedelta(hours=2)).isoformat()
    p = plan(
        "executing",
        step("A1", "executing", startedAt=started),
        budget={"wallSeconds": 60, "approvals": 0},
    )
    got = values(m.BUDGET_USED_RATIO, ClusterState(minds=[mind()], plans=[p]))
    assert got[(NS, "m", "wall_seconds")] == 1.0
    assert got[(NS, "m", "approvals")] == 1.0


def test_dream_plans_spend_no_budget() -> None:
    p = plan("validated", actual={"invocations": 3}, budget={"invocations": 4}, origin="dream")
    state = ClusterState(minds=[mind(budget={"invocations": 4})], plans=[p])
    assert values(m.BUDGET_USED_RATIO, state) == {
        (NS, "m", "invocations"): 0.0,
        (NS, "m", "checks"): 0.0,
    }


def test_a_plan_blocked_on_its_budget_counts_as_exhausted() -> None:
    blocked = step("A1", "blocked", reason=f"{BUDGET_EXHAUSTED}: 4 of 4 invocations used")
    other = step("A2", "blocked", reason=f"{BUDGET_EXHAUSTED}: 2 approvals asked")
    state = ClusterState(minds=[mind()], plans=[plan("blocked", blocked, other)])
    assert values(m.PLANS_BUDGET_EXHAUSTED, state) == {(NS, "m"): 1}


def test_exhausted_is_zero_for_other_blocks_and_for_finished_plans() -> None:
    unknown = step("A1", "blocked", reason=f"{OUTCOME_UNKNOWN}; not repeating")
    spent = step("A1", "blocked", reason=f"{BUDGET_EXHAUSTED}: 4 of 4 invocations used")
    state = ClusterState(minds=[mind()], plans=[plan("blocked", unknown), plan("failed", spent)])
    assert values(m.PLANS_BUDGET_EXHAUSTED, state) == {(NS, "m"): 0}


def test_a_plan_being_deleted_is_not_open() -> None:
    spent = step("A1", "blocked", reason=f"{BUDGET_EXHAUSTED}: 4 of 4 invocations used")
    deleting = plan("blocked", spent, actual={"invocations": 4}, budget={"invocations": 4})
    deleting["metadata"]["deletionTimestamp"] = "2026-12-03T11:00:00Z"
    state = ClusterState(minds=[mind(budget={"invocations": 4})], plans=[deleting])
    assert values(m.PLANS_BUDGET_EXHAUSTED, state) == {(NS, "m"): 0}
    assert values(m.BUDGET_USED_RATIO, state) == {
        (NS, "m", "invocations"): 0.0,
        (NS, "m", "checks"): 0.0,
    }
    assert values(m.STEPS, state) == {}


# -- attention ----------------------------------------------------------------------------------


def test_open_requests_count_pending_approvals_of_the_mind() -> None:
    state = ClusterState(
        minds=[mind("m"), mind("n")],
        approvals=[
            approval("m"),
            approval("m", phase=None),  # not looked at yet: still waiting for a person
            approval("m", phase="Approved"),
            approval("m", phase="Expired"),
            approval("n", phase="Denied"),
        ],
    )
    assert values(m.ATTENTION_OPEN, state) == {(NS, "m"): 2, (NS, "n"): 0}


def test_an_approval_being_deleted_asks_nobody() -> None:
    deleting = approval("m", created="2026-12-03T10:00:00Z")
    deleting["metadata"]["deletionTimestamp"] = "2026-12-03T11:00:00Z"
    state = ClusterState(minds=[mind("m")], approvals=[deleting])
    assert values(m.ATTENTION_OPEN, state) == {(NS, "m"): 0}
    assert values(m.ATTENTION_OLDEST, state) == {}


def test_max_open_requests_is_the_minds_cap() -> None:
    state = ClusterState(minds=[mind("m", attention={"maxOpenRequests": 3}), mind("n")])
    assert values(m.ATTENTION_MAX, state) == {(NS, "m"): 3, (NS, "n"): 5}


def test_steps_waiting_at_the_cap() -> None:
    at_cap = step("R1", "waiting", reason=f"{ATTENTION_CAP} (5 open requests); ask again later")
    retrying = step("R2", "waiting", reason="attempt 1 failed: timeout")
    state = ClusterState(minds=[mind()], plans=[plan("executing", at_cap, retrying)])
    assert values(m.ATTENTION_WAITING, state) == {(NS, "m"): 1}


def test_oldest_pending_request_and_absent_when_none() -> None:
    state = ClusterState(
        minds=[mind("m"), mind("n")],
        approvals=[
            approval("m", created="2026-12-03T10:00:00Z"),
            approval("m", created="2026-12-03T09:00:00Z"),
            approval("m", phase="Denied", created="2026-12-03T08:00:00Z"),
            approval("n", phase="Approved", created="2026-12-03T07:00:00Z"),
        ],
    )
    oldest = datetime(2026, 12, 3, 9, 0, tzinfo=UTC).timestamp()
    assert values(m.ATTENTION_OLDEST, state) == {(NS, "m"): oldest}


# -- plans and steps ----------------------------------------------------------------------------


def test_plans_by_phase() -> None:
    state = ClusterState(
        minds=[mind()], plans=[plan("executing"), plan("executing"), plan("completed")]
    )
    assert values(m.PLANS, state) == {(NS, "m", "executing"): 2, (NS, "m", "completed"): 1}


def test_steps_by_status_of_open_plans_only() -> None:
    state = ClusterState(
        minds=[mind()],
        plans=[
            plan("executing", step("A1", "completed"), step("A2", "ready")),
            plan("completed", step("A1", "completed")),
        ],
    )
    assert values(m.STEPS, state) == {(NS, "m", "completed"): 1, (NS, "m", "ready"): 1}


def test_steps_with_outcome_unknown() -> None:
    unknown = step("A1", "blocked", reason=f"{OUTCOME_UNKNOWN}; not repeating a non-idempotent")
    budget = step("A2", "blocked", reason=f"{BUDGET_EXHAUSTED}: 4 of 4 invocations used")
    state = ClusterState(minds=[mind()], plans=[plan("blocked", unknown, budget)])
    assert values(m.STEPS_OUTCOME_UNKNOWN, state) == {(NS, "m"): 1}


def test_last_cycle_time_and_absent_before_the_first() -> None:
    cycled = mind("m")
    cycled["status"] = {"lastCycleAt": "2026-12-03T11:59:00Z"}
    state = ClusterState(minds=[cycled, mind("n")])
    at = datetime(2026, 12, 3, 11, 59, tzinfo=UTC).timestamp()
    assert values(m.LAST_CYCLE, state) == {(NS, "m"): at}


# -- the ledger ---------------------------------------------------------------------------------


def summary(**counts: int) -> PredictionSummary:
    return PredictionSummary(
        NS, "m", {PredictionStatus(k): v for k, v in counts.items()}, squared_error=0.5
    )


def test_predictions_by_outcome_with_open_ones_pending() -> None:
    got = values(
        m.PREDICTIONS,
        ClusterState(minds=[mind()]),
        [summary(confirmed=3, refuted=1, open=2)],
    )
    assert got == {
        (NS, "m", "confirmed"): 3,
        (NS, "m", "refuted"): 1,
        (NS, "m", "expired"): 0,
        (NS, "m", "pending"): 2,
    }


def test_brier_is_the_mean_squared_error_of_resolved_predictions() -> None:
    # Expired predictions are not scored: 0.5 over 3 confirmed-or-refuted, not over 5.
    state = ClusterState(minds=[mind()])
    got = values(m.BRIER, state, [summary(confirmed=2, refuted=1, expired=2)])
    assert got == {(NS, "m"): pytest.approx(0.5 / 3)}


def test_brier_is_absent_before_any_prediction_is_resolved() -> None:
    assert values(m.BRIER, ClusterState(minds=[mind()]), [summary(open=2)]) == {}


def test_a_ledger_that_does_not_answer_sets_ledger_up_zero() -> None:
    down = state_samples(ClusterState(minds=[mind()]), None, NOW, "1.2.3")
    assert [(s.metric, s.value) for s in down if s.metric == m.LEDGER_UP] == [(m.LEDGER_UP, 0)]
    assert not [s for s in down if s.metric in (m.PREDICTIONS, m.BRIER)]
    assert values(m.LEDGER_UP, ClusterState()) == {(): 1}


def test_build_info() -> None:
    assert values(m.BUILD_INFO, ClusterState()) == {("1.2.3",): 1}


# -- robustness ---------------------------------------------------------------------------------


def test_objects_that_do_not_parse_are_left_out() -> None:
    bad_mind = mind("bad", budget={"invocations": "many"})
    bad_plan = plan("executing")
    bad_plan["status"]["steps"] = [{"key": "not a key"}]
    state = ClusterState(minds=[mind("m"), bad_mind], plans=[bad_plan, plan("completed")])
    assert values(m.ATTENTION_MAX, state) == {(NS, "m"): 5}
    assert values(m.PLANS, state) == {(NS, "m", "completed"): 1}


def test_every_sample_has_one_value_per_label_of_its_metric() -> None:
    started = (NOW - timedelta(seconds=5)).isoformat()
    cycled = mind(budget={"wallSeconds": 60, "money": 1, "approvals": 1})
    cycled["status"] = {"lastCycleAt": started}
    state = ClusterState(
        minds=[cycled],
        plans=[plan("executing", step("A1", "executing", startedAt=started))],
        approvals=[approval(created="2026-12-03T10:00:00Z")],
    )
    samples = state_samples(state, [summary(confirmed=1)], NOW, "1")
    assert {s.metric for s in samples} == {
        spec for spec in m.CATALOGUE if spec.scope is m.Scope.STATE
    }
    for sample in samples:
        assert len(sample.labels) == len(sample.metric.labels), sample


# -- Minds that are gone ------------------------------------------------------------------------


def _about(state: ClusterState, summaries: list[PredictionSummary]) -> set[tuple[str, ...]]:
    """The Minds the samples are about."""
    samples = state_samples(state, summaries, NOW, "1.2.3")
    return {s.labels[:2] for s in samples if m.of_a_mind(s.metric)}


def test_a_mind_that_is_gone_has_no_series_though_its_plans_and_predictions_remain() -> None:
    """Its Plans wait for the garbage collector, its Approvals for withdrawal, and the ledger
    keeps its predictions for good: none of them is a Mind to watch any more."""
    blocked = step("A1", "blocked", reason=f"{OUTCOME_UNKNOWN}; check it")
    state = ClusterState(
        minds=[mind("kept")],
        plans=[plan("blocked", blocked, of="gone")],
        approvals=[approval(of="gone")],
    )
    gone = PredictionSummary(NS, "gone", {PredictionStatus.REFUTED: 2}, squared_error=1.0)
    assert _about(state, [gone]) == {(NS, "kept")}
    # The same objects with the Mind there: every one of them has series.
    state = ClusterState(
        minds=[mind("kept"), mind("gone")], plans=state.plans, approvals=state.approvals
    )
    gauges = {
        s.metric for s in state_samples(state, [gone], NOW, "1.2.3") if s.labels[1:2] == ("gone",)
    }
    assert {m.PLANS, m.STEPS_OUTCOME_UNKNOWN, m.ATTENTION_OPEN, m.PREDICTIONS, m.BRIER} <= gauges


def test_a_mind_whose_spec_does_not_parse_still_exists() -> None:
    unreadable = mind("odd", cycleIntervalSeconds="often")
    state = ClusterState(minds=[unreadable], plans=[plan("executing", of="odd")])
    assert values(m.PLANS, state) == {(NS, "odd", "executing"): 1}


def test_an_inactive_mind_keeps_its_series() -> None:
    """It exists, its cycle still completes (observing nothing), and its plans and requests
    still wait for people: nothing it exports has stopped meaning what it says."""
    paused = mind("paused", active=False)
    paused["status"] = {"lastCycleAt": "2026-12-03T11:59:00Z"}
    state = ClusterState(
        minds=[paused], plans=[plan("executing", of="paused")], approvals=[approval(of="paused")]
    )
    assert _about(state, []) == {(NS, "paused")}
    assert values(m.LAST_CYCLE, state) == {(NS, "paused"): NOW.timestamp() - 60}

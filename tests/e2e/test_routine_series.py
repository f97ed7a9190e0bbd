"""Routine is a series, change is a row, with the real controller on the local control plane: a
Mind whose goal stays healthy runs cycle after cycle, and the ledger holds one look in full and
one series counting the rest, not an execution a cycle; the series goes on across a controller
that stops and one killed between looking and recording, and counts each look once
(docs/ledger.md, Routine is a series)."""

from __future__ import annotations

import pytest

from minds.adapters.ledger import Ledger
from minds.devenv.controller import stop_controller
from minds.domain.series import SeriesKind, tell
from tests.e2e.executor_support import (
    cycles_completed,
    cycles_pass,
    deployment,
    mind,
    minds_cli,
    set_health,
)
from tests.e2e.test_repeats_cycle import GOAL
from tests.fixtures.cluster import Cluster, ControllerFactory
from tests.fixtures.waiting import eventually

MIND = "keeper"


def healthy_keeper(cluster: Cluster, namespace: str) -> None:
    deployment(cluster, namespace)
    set_health(cluster, namespace, healthy=True)
    mind(
        cluster,
        namespace,
        MIND,
        cycleIntervalSeconds=5,
        goals=GOAL,
        capabilityPolicy=[{"capability": "service.restart", "decision": "approve"}],
    )


def looks_in_full(ledger: Ledger, namespace: str) -> int:
    return sum(
        1
        for e in ledger.executions(namespace=namespace, mind=MIND, capability="service.status")
        if e.origin.cycle
    )


def counted(ledger: Ledger, namespace: str, kind: SeriesKind) -> int:
    found = ledger.series(namespace, MIND, kind=kind)
    return found[0].count if found else 0


@pytest.mark.usefixtures("session_controller")
def test_a_healthy_goal_is_one_series_not_an_execution_a_cycle(
    cluster: Cluster, namespace: str, e2e_ledger: Ledger, e2e_database_url: str
) -> None:
    healthy_keeper(cluster, namespace)
    eventually(
        lambda: counted(e2e_ledger, namespace, SeriesKind.OBSERVATION) >= 4,
        timeout=90,
        what="four looks at the healthy goal",
    )
    [looks] = e2e_ledger.series(namespace, MIND, kind=SeriesKind.OBSERVATION)
    assert looks.open
    assert looks.told == "observed running"
    assert looks_in_full(e2e_ledger, namespace) == 1  # the first look; the rest are counted
    cycles = e2e_ledger.events(namespace=namespace, mind=MIND, type="cycle_completed")
    assert len(cycles) == 1
    assert e2e_ledger.events(namespace=namespace, mind=MIND, type="tool_executed")[1:] == []

    shown = minds_cli(cluster, e2e_database_url, "timeline", MIND, "-n", namespace)
    assert shown.returncode == 0, shown.stderr
    [line] = [line for line in shown.stdout.splitlines() if "observation_series" in line]
    assert "observed running" in line, line
    assert line.endswith("(open)"), line

    # A look that finds something else is its own row, and closes the series.
    set_health(cluster, namespace, healthy=False)
    eventually(
        lambda: looks_in_full(e2e_ledger, namespace) >= 2, timeout=60, what="the changed look"
    )
    closed = [
        e
        for e in e2e_ledger.events(namespace=namespace, mind=MIND, type="series_closed")
        if e.payload["kind"] == "observation"
    ]
    assert [e.payload["id"] for e in closed][:1] == [looks.id]


@pytest.mark.usefixtures("alone")
def test_the_series_goes_on_across_a_restart_and_a_crash_and_counts_each_look_once(
    cluster: Cluster, namespace: str, e2e_ledger: Ledger, controller_factory: ControllerFactory
) -> None:
    healthy_keeper(cluster, namespace)
    first = controller_factory("first")
    cycles_pass(cluster, namespace, 3, MIND)
    assert stop_controller(first)
    before = counted(e2e_ledger, namespace, SeriesKind.OBSERVATION)
    assert before >= 3

    # Killed after its first look and before recording it: that look is lost, nothing else.
    crashing = controller_factory(
        "crashing",
        extra_env={"MINDS_FAILPOINTS": f"read-unrecorded:{namespace}/{MIND}"},
        wait=False,
    )
    eventually(lambda: not crashing.alive(), timeout=60, what="the controller killed itself")
    assert counted(e2e_ledger, namespace, SeriesKind.OBSERVATION) == before

    following = controller_factory("next")
    cycles_pass(cluster, namespace, 3, MIND)
    assert stop_controller(following)
    [looks] = e2e_ledger.series(namespace, MIND, kind=SeriesKind.OBSERVATION)
    assert looks.count >= before + 3, tell(looks)
    assert looks_in_full(e2e_ledger, namespace) == 1  # one series throughout
    # Every completed cycle looked once, and every look was counted once (a controller stopped
    # between a cycle's look and its end leaves one look more).
    assert 0 <= looks.count - cycles_completed(e2e_ledger, namespace, MIND) <= 1

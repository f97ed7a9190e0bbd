"""Which change of a goal's subject wakes a Mind's cycle early, and how a burst is debounced."""

from __future__ import annotations

import copy
from datetime import timedelta
from typing import Any

import pytest

from minds.domain.resources.mind import MindSpec
from minds.domain.wakeups import (
    Debounce,
    Pending,
    WakeReason,
    signal,
    subjects,
    what_changed,
)
from tests.fakes.clock import FakeClock


def running(replicas: int = 2) -> dict[str, Any]:
    return {
        "metadata": {
            "name": "atlas-worker",
            "generation": 3,
            "resourceVersion": "100",
            "annotations": {"deployment.kubernetes.io/revision": "2"},
        },
        "spec": {"replicas": replicas},
        "status": {
            "observedGeneration": 3,
            "replicas": replicas,
            "updatedReplicas": replicas,
            "readyReplicas": replicas,
            "availableReplicas": replicas,
            "conditions": [
                {
                    "type": "Available",
                    "status": "True",
                    "reason": "MinimumReplicasAvailable",
                    "lastUpdateTime": "2026-01-01T00:00:00Z",
                    "message": "Deployment has minimum availability.",
                },
                {
                    "type": "Progressing",
                    "status": "True",
                    "reason": "NewReplicaSetAvailable",
                    "lastUpdateTime": "2026-01-01T00:00:00Z",
                },
            ],
        },
    }


def changed(edit: Any) -> WakeReason | None:
    before = running()
    after = copy.deepcopy(before)
    edit(after)
    return what_changed(signal(before), signal(after))


# -- what matters ----------------------------------------------------------------------------


def _unready(body: dict[str, Any]) -> None:
    body["status"]["readyReplicas"] = 0
    body["status"]["availableReplicas"] = 0
    body["status"]["unavailableReplicas"] = 2


def _condition(body: dict[str, Any]) -> None:
    body["status"]["conditions"][0].update(status="False", reason="MinimumReplicasUnavailable")


def _scaled(body: dict[str, Any]) -> None:
    body["spec"]["replicas"] = 3


def _rolled(body: dict[str, Any]) -> None:
    body["metadata"]["generation"] = 4


def _observed(body: dict[str, Any]) -> None:
    body["status"]["observedGeneration"] = 2


def _daemon_unready(body: dict[str, Any]) -> None:
    body["status"]["numberReady"] = 1


@pytest.mark.parametrize(
    ("edit", "reason"),
    [
        (_unready, WakeReason.AVAILABILITY),
        (_daemon_unready, WakeReason.AVAILABILITY),
        (_condition, WakeReason.CONDITIONS),
        (_scaled, WakeReason.REPLICAS),
        (_rolled, WakeReason.GENERATION),
        (_observed, WakeReason.GENERATION),
    ],
)
def test_a_change_a_goal_is_judged_on_wakes(edit: Any, reason: WakeReason) -> None:
    assert changed(edit) is reason


def _bumped(body: dict[str, Any]) -> None:
    body["metadata"]["resourceVersion"] = "101"
    body["metadata"]["managedFields"] = [{"manager": "kubectl"}]


def _annotated(body: dict[str, Any]) -> None:
    body["metadata"]["annotations"]["team"] = "atlas"
    body["metadata"]["labels"] = {"minds.dev/fault": "crashloop"}


def _ticked(body: dict[str, Any]) -> None:
    for condition in body["status"]["conditions"]:
        condition["lastUpdateTime"] = "2026-01-01T00:05:00Z"
        condition["message"] = "ReplicaSet atlas-worker-7d9 is progressing."


def _reordered(body: dict[str, Any]) -> None:
    body["status"]["conditions"].reverse()


def _template(body: dict[str, Any]) -> None:
    # A template change the workload's controller has not taken up shows as a generation;
    # the template itself is not read.
    body["spec"]["template"] = {"metadata": {"labels": {"app": "atlas-worker"}}}


@pytest.mark.parametrize("edit", [_bumped, _annotated, _ticked, _reordered, _template])
def test_what_a_goal_is_not_judged_on_wakes_nobody(edit: Any) -> None:
    assert changed(edit) is None


def test_a_workload_that_appears_or_goes_wakes_and_one_never_there_does_not() -> None:
    assert what_changed(None, signal(running())) is WakeReason.APPEARED
    assert what_changed(signal(running()), None) is WakeReason.GONE
    assert what_changed(None, None) is None


def test_a_count_that_appears_at_zero_is_news() -> None:
    before = running()
    del before["status"]["readyReplicas"]
    after = copy.deepcopy(before)
    after["status"]["readyReplicas"] = 0
    assert what_changed(signal(before), signal(after)) is WakeReason.AVAILABILITY


def test_malformed_bodies_are_read_as_having_nothing() -> None:
    nothing = signal({})
    assert signal({"status": {"conditions": "broken", "readyReplicas": "2"}, "spec": []}) == (
        nothing
    )
    assert what_changed(nothing, signal({"status": {"conditions": ["x", {"type": "Ready"}]}}))


# -- what a Mind watches --------------------------------------------------------------------


def test_an_active_minds_goals_name_its_subjects_in_its_namespace_unless_told() -> None:
    spec = MindSpec.model_validate(
        {
            "goals": [
                {"name": "a", "subject": {"name": "atlas-worker"}},
                {
                    "name": "b",
                    "subject": {"kind": "StatefulSet", "name": "db", "namespace": "data"},
                },
                {"name": "c", "subject": {"kind": "DaemonSet", "name": "agent"}},
            ]
        }
    )
    assert subjects("shop", spec) == {
        ("deployments", "shop", "atlas-worker"),
        ("statefulsets", "data", "db"),
        ("daemonsets", "shop", "agent"),
    }
    inactive = spec.model_copy(update={"active": False})
    assert subjects("shop", inactive) == frozenset()


# -- the debounce ---------------------------------------------------------------------------


def burst(debounce: Debounce, clock: FakeClock, changes: int, over: timedelta) -> int:
    """``changes`` changes spread evenly over ``over``, time moving in 10 ms ticks and due
    wake-ups fired on the tick (as the controller's timers do); how many wake-ups the burst
    cost, its tail included."""
    start = clock()
    at = [start + over * i / changes for i in range(changes)]
    pending, woken = Pending(), 0
    while clock() < start + over + 2 * debounce.cooldown:
        while at and at[0] <= clock():
            at.pop(0)
            pending = debounce.changed(pending, clock())
        pending, wake = debounce.fire(pending, clock())
        woken += wake
        clock.advance(timedelta(milliseconds=10))
    return woken


def test_a_burst_of_twenty_changes_in_two_seconds_costs_at_most_two_cycles() -> None:
    assert burst(Debounce(), FakeClock(), 20, timedelta(seconds=2)) == 2


def test_a_single_change_costs_one_cycle() -> None:
    assert burst(Debounce(), FakeClock(), 1, timedelta(seconds=2)) == 1


def test_a_steady_stream_costs_one_cycle_per_cooldown() -> None:
    debounce = Debounce(cooldown=timedelta(seconds=2))
    clock = FakeClock()
    pending, woken = Pending(), 0
    for _ in range(1000):  # a change every 10 ms for 10 s
        pending = debounce.changed(pending, clock())
        pending, wake = debounce.fire(pending, clock())
        woken += wake
        clock.advance(timedelta(milliseconds=10))
    assert 5 <= woken <= 6


def test_the_first_change_wakes_after_the_settle_and_not_before() -> None:
    debounce = Debounce(settle=timedelta(milliseconds=250))
    clock = FakeClock()
    pending = debounce.changed(Pending(), clock())
    assert pending.due == clock() + timedelta(milliseconds=250)

    clock.advance(timedelta(milliseconds=249))
    pending, wake = debounce.fire(pending, clock())
    assert not wake
    # What arrives meanwhile goes with it.
    assert debounce.changed(pending, clock()) == pending

    clock.advance(timedelta(milliseconds=1))
    pending, wake = debounce.fire(pending, clock())
    assert wake
    assert pending == Pending(due=None, woken=clock())


def test_a_change_within_the_cooldown_waits_for_its_end_and_one_after_it_does_not() -> None:
    debounce = Debounce(settle=timedelta(milliseconds=250), cooldown=timedelta(seconds=2))
    clock = FakeClock()
    woken_at = clock()
    pending = Pending(woken=woken_at)

    clock.advance(timedelta(milliseconds=500))
    assert debounce.changed(pending, clock()).due == woken_at + timedelta(seconds=2)
    assert not debounce.forgettable(pending, clock())

    clock.advance(timedelta(seconds=3))
    assert debounce.changed(pending, clock()).due == clock() + timedelta(milliseconds=250)
    assert debounce.forgettable(pending, clock())


def test_nothing_due_fires_nothing() -> None:
    clock = FakeClock()
    assert Debounce().fire(Pending(), clock()) == (Pending(), False)

"""The goal watch: which Minds a workload's change wakes, when, and what it watches for them.
Timers are a list the test runs on a fake clock; the watches are what it was told to follow."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from datetime import timedelta
from typing import Any

from minds.controller.goal_watch import GoalWatch
from minds.domain.wakeups import WakeReason
from tests.fakes.clock import FakeClock


class Harness:
    def __init__(self) -> None:
        self.clock = FakeClock()
        self.timers: list[tuple[Any, Callable[[], None]]] = []
        self.woken: list[tuple[str, str]] = []
        self.counted: list[tuple[str, str, WakeReason]] = []
        self.following: set[tuple[str, str]] = set()
        self.watch = GoalWatch(
            wake=lambda namespace, key: self.woken.append((namespace, key)),
            woken=lambda namespace, mind, reason: self.counted.append((namespace, mind, reason)),
            clock=self.clock,
            later=lambda seconds, call: self.timers.append(
                (self.clock() + timedelta(seconds=seconds), call)
            ),
        )
        self.watch.attach(self._follow)

    def _follow(self, pairs: Iterable[tuple[str, str]]) -> None:
        self.following = set(pairs)

    def advance(self, seconds: float) -> None:
        """Move the clock in 10 ms ticks, running the timers that come due."""
        end = self.clock() + timedelta(seconds=seconds)
        while self.clock() < end:
            self.clock.advance(timedelta(milliseconds=10))
            due = [t for t in self.timers if t[0] <= self.clock()]
            self.timers = [t for t in self.timers if t[0] > self.clock()]
            for _at, call in due:
                call()


def mind(name: str, goals: list[dict[str, Any]], *, active: bool = True) -> dict[str, Any]:
    return {
        "metadata": {"namespace": "shop", "name": name},
        "spec": {"active": active, "goals": goals},
    }


ATLAS = {"name": "atlas-running", "subject": {"name": "atlas-worker"}}
DB = {"name": "db-running", "subject": {"kind": "StatefulSet", "name": "db", "namespace": "data"}}


def workload(ready: int = 2, name: str = "atlas-worker") -> dict[str, Any]:
    return {
        "metadata": {"name": name, "generation": 1, "resourceVersion": str(ready)},
        "spec": {"replicas": 2},
        "status": {"observedGeneration": 1, "replicas": 2, "readyReplicas": ready},
    }


def watching(*minds: dict[str, Any]) -> Harness:
    h = Harness()
    for body in minds:
        h.watch.mind(body)
    h.watch.seen("deployments", "shop", workload(), first=True)
    return h


def test_a_change_that_matters_wakes_the_minds_whose_goals_name_it_once_settled() -> None:
    h = watching(mind("keeper", [ATLAS]), mind("other", [ATLAS]), mind("db-keeper", [DB]))

    h.watch.seen("deployments", "shop", workload(ready=0), first=False)
    assert h.woken == []  # not before the settle
    h.advance(0.3)

    assert sorted(h.woken) == [("shop", "keeper"), ("shop", "other")]
    assert sorted(h.counted) == [
        ("shop", "keeper", WakeReason.AVAILABILITY),
        ("shop", "other", WakeReason.AVAILABILITY),
    ]


def test_a_change_that_does_not_matter_wakes_nobody() -> None:
    h = watching(mind("keeper", [ATLAS]))
    body = workload()
    body["metadata"]["resourceVersion"] = "99"
    body["metadata"]["annotations"] = {"note": "touched"}

    h.watch.seen("deployments", "shop", body, first=False)
    h.advance(5)

    assert h.woken == []
    assert h.timers == []


def test_the_first_listing_is_taken_in_without_waking_and_a_relisting_wakes() -> None:
    h = watching(mind("keeper", [ATLAS]))
    h.advance(5)
    assert h.woken == []

    # After the watch broke and listed again, a change it missed wakes.
    h.watch.seen("deployments", "shop", workload(ready=1), first=False)
    h.advance(0.3)
    assert h.woken == [("shop", "keeper")]


def test_a_burst_of_twenty_changes_in_two_seconds_costs_at_most_two_wake_ups() -> None:
    h = watching(mind("keeper", [ATLAS]))
    for i in range(20):
        h.watch.seen("deployments", "shop", workload(ready=i % 3), first=False)
        h.advance(0.1)
    h.advance(5)

    assert len(h.woken) == 2


def test_a_deleted_workload_wakes_its_minds() -> None:
    h = watching(mind("keeper", [ATLAS]))
    h.watch.gone("deployments", "shop", "atlas-worker")
    h.advance(0.3)
    assert h.counted == [("shop", "keeper", WakeReason.GONE)]


def test_only_the_namespaces_and_kinds_of_active_goals_are_watched() -> None:
    h = Harness()
    h.watch.mind(mind("keeper", [ATLAS, DB]))
    assert h.following == {("shop", "deployments"), ("data", "statefulsets")}

    h.watch.mind(mind("keeper", [ATLAS, DB], active=False))
    assert h.following == set()

    h.watch.mind(mind("keeper", [DB]))
    h.watch.mind_gone("shop", "keeper")
    assert h.following == set()


def test_a_goal_removed_stops_waking_its_mind() -> None:
    h = watching(mind("keeper", [ATLAS]))
    h.watch.mind(mind("keeper", [DB]))
    h.watch.seen("deployments", "shop", workload(ready=0), first=False)
    h.advance(1)
    assert h.woken == []


def test_a_mind_gone_before_its_wake_up_is_not_woken() -> None:
    h = watching(mind("keeper", [ATLAS]))
    h.watch.seen("deployments", "shop", workload(ready=0), first=False)
    h.watch.mind_gone("shop", "keeper")
    h.advance(1)
    assert h.woken == []


def test_a_mind_whose_spec_admission_would_refuse_watches_nothing() -> None:
    h = Harness()
    h.watch.mind({"metadata": {"namespace": "shop", "name": "odd"}, "spec": {"goals": "x"}})
    assert h.following == set()

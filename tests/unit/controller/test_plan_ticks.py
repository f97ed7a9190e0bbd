"""The plan's safety tick (minds.controller.plan_ticks): every 15 s, and free when nothing
changed. The last test counts what a round of safety ticks over 1,000 open plans costs with the
real executor over the fakes: API requests and ledger queries, never time."""

from __future__ import annotations

import asyncio
from collections import Counter
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from minds.adapters.kube.watched import WatchedResources, WatchStore
from minds.controller.plan_ticks import FULL, SAFETY, SOONEST, PlanTicks, Seen, unchanged
from minds.controller.queue import Queue as WorkQueueShell
from minds.controller.work import Plans
from minds.domain.planning.model import PlanStatus
from minds.domain.resources.kinds import APPROVAL, CAPABILITY_GRANT, MIND, PLAN
from minds.domain.workqueue import Work
from minds.engine.assembly import EnginePorts, assemble
from minds.engine.executor import Executor, TickResult
from tests.fakes.clock import FakeClock
from tests.unit.engine.harness import NAMESPACE, World

NOW = datetime(2026, 1, 1, tzinfo=UTC)


class Ticks:
    """The executor's tick, answering what the test says."""

    def __init__(self) -> None:
        self.calls = 0
        self.result = TickResult(0, None, PlanStatus.EXECUTING)

    def __call__(self, namespace: str, name: str) -> TickResult:
        self.calls += 1
        if isinstance(self.result, Exception):
            raise self.result
        return self.result


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock(NOW)


def ticks_over(tick: Ticks, versions: dict[str, str], clock: FakeClock) -> PlanTicks:
    return PlanTicks(tick, lambda ns, name: versions.get(name), clock)


def test_the_first_look_is_a_full_tick_and_then_only_what_changed_is(clock: FakeClock) -> None:
    tick, versions = Ticks(), {"p": "1"}
    plans = ticks_over(tick, versions, clock)
    assert plans("ns", "p") == SAFETY
    assert tick.calls == 1
    clock.advance(SAFETY)
    assert plans("ns", "p") == SAFETY
    assert tick.calls == 1  # same version, nothing due: nothing to look at
    versions["p"] = "2"  # someone wrote it
    plans("ns", "p")
    assert tick.calls == 2


def test_a_wake_up_makes_the_next_look_a_full_tick(clock: FakeClock) -> None:
    tick = Ticks()
    plans = ticks_over(tick, {"p": "1"}, clock)
    assert plans.quick("ns", "p") is None  # never looked at: only a full tick can tell
    plans("ns", "p")
    assert plans.quick("ns", "p") == SAFETY
    plans.woken("ns", "p")
    assert plans.quick("ns", "p") is None  # and it leaves the mark for the full tick
    plans("ns", "p")
    assert tick.calls == 2
    plans("ns", "p")
    assert tick.calls == 2  # the mark is used once


def test_a_full_tick_that_failed_is_tried_again_fully(clock: FakeClock) -> None:
    """A wake-up (a person's decision) met a failing tick (the ledger away): the retry must
    look fully, or the decision waits for the next full tick ten minutes later."""
    tick = Ticks()
    plans = ticks_over(tick, {"p": "1"}, clock)
    plans("ns", "p")
    plans.woken("ns", "p")
    tick.result = ConnectionError("the database went away")  # type: ignore[assignment]
    with pytest.raises(ConnectionError):
        plans("ns", "p")
    tick.result = TickResult(0, None, PlanStatus.EXECUTING)
    assert plans.quick("ns", "p") is None
    plans("ns", "p")
    assert tick.calls == 3


def test_the_time_the_status_asks_for_is_kept(clock: FakeClock) -> None:
    tick = Ticks()
    tick.result = TickResult(0, NOW + timedelta(seconds=40), PlanStatus.EXECUTING)
    plans = ticks_over(tick, {"p": "1"}, clock)
    assert plans("ns", "p") == SAFETY
    clock.advance(timedelta(seconds=30))
    assert plans("ns", "p") == timedelta(seconds=10)  # sooner than the next safety tick
    assert tick.calls == 1
    clock.advance(timedelta(seconds=10))
    plans("ns", "p")
    assert tick.calls == 2


def test_a_plan_asking_to_be_looked_at_at_once_still_lets_others_run_first(
    clock: FakeClock,
) -> None:
    tick = Ticks()
    tick.result = TickResult(64, NOW, PlanStatus.EXECUTING)
    assert ticks_over(tick, {"p": "1"}, clock)("ns", "p") == SOONEST


def test_a_full_tick_runs_at_least_every_ten_minutes(clock: FakeClock) -> None:
    """Some of what a plan waits for is in the ledger and wakes nobody (a free place under
    the Mind's attention cap): the old safety net's full look stays."""
    tick = Ticks()
    plans = ticks_over(tick, {"p": "1"}, clock)
    plans("ns", "p")
    clock.advance(FULL - timedelta(seconds=1))
    plans("ns", "p")
    assert tick.calls == 1
    clock.advance(timedelta(seconds=1))
    plans("ns", "p")
    assert tick.calls == 2


@pytest.mark.parametrize("phase", [None, PlanStatus.COMPLETED, PlanStatus.ABANDONED])
def test_a_finished_or_gone_plan_has_no_schedule(clock: FakeClock, phase: Any) -> None:
    tick = Ticks()
    tick.result = TickResult(0, None, phase)
    plans = ticks_over(tick, {"p": "1"}, clock)
    assert plans("ns", "p") is None
    assert plans("ns", "p") is None
    assert tick.calls == 2  # nothing remembered of it


def test_unchanged_needs_the_same_version_before_its_time() -> None:
    seen = Seen("7", NOW + SAFETY)
    assert unchanged(seen, "7", NOW)
    assert not unchanged(seen, "8", NOW)
    assert not unchanged(seen, "7", NOW + SAFETY)
    assert not unchanged(None, "7", NOW)


class Queue:
    """What ``Plans`` adds to the queue: a key is held once it has a schedule."""

    def __init__(self) -> None:
        self.held: set[tuple[Work, str, str]] = set()
        self.added: list[tuple[Work, str, str]] = []

    def add(self, work: Work, namespace: str, name: str) -> bool:
        self.held.add((work, namespace, name))
        self.added.append((work, namespace, name))
        return True

    def add_after(self, work: Work, namespace: str, name: str, delay: timedelta) -> bool:
        return self.add(work, namespace, name)

    def ensure(self, work: Work, namespace: str, name: str) -> bool:
        return (work, namespace, name) not in self.held and self.add(work, namespace, name)

    def wake(self, work: Work, namespace: str, name: str) -> bool:
        return (work, namespace, name) in self.held and self.add(work, namespace, name)

    def holds(self, work: Work, namespace: str, name: str) -> bool:
        return (work, namespace, name) in self.held

    def cancel(self, work: Work, namespace: str, name: str) -> None:
        self.held.discard((work, namespace, name))


def test_a_plan_without_a_schedule_is_not_woken_and_keeps_no_mark(clock: FakeClock) -> None:
    tick, queue = Ticks(), Queue()
    plans = Plans(queue, ticks_over(tick, {"p": "1"}, clock))
    plans.wake("ns", "p")  # a finished plan, or a dream: nothing to wake
    assert queue.added == []
    plans.run("ns", "p")
    plans.run("ns", "p")  # our own write coming back: it keeps to its schedule
    assert queue.added == [(Work.TICK, "ns", "p")]
    plans.ticks("ns", "p")
    plans.wake("ns", "p")
    plans.ticks("ns", "p")
    assert tick.calls == 2
    plans.stop("ns", "p")
    plans.wake("ns", "p")  # stopped: looks no more
    assert queue.added == [(Work.TICK, "ns", "p")] * 2


def test_a_wake_that_finds_the_tick_already_due_still_makes_it_a_full_tick(
    clock: FakeClock,
) -> None:
    """The real queue: a plan whose key is to run already (here its first run, just added)
    gets nothing from a wake but the mark; dropping the mark there left an Approval that
    expired while its plan's tick was due answered from memory, for ten minutes."""
    loop = asyncio.new_event_loop()
    try:
        tick = Ticks()
        plans = Plans(WorkQueueShell(loop, workers=1), ticks_over(tick, {"p": "1"}, clock))
        plans.run("ns", "p")
        plans.ticks("ns", "p")
        plans.wake("ns", "p")
        plans.ticks("ns", "p")
    finally:
        loop.close()
    assert tick.calls == 2


# -- what a round of safety ticks costs ------------------------------------------------------


class Counting:
    """Counts every call made to the object it stands for: API requests, ledger queries."""

    def __init__(self, inner: Any) -> None:
        self._inner = inner
        self.calls: Counter[str] = Counter()

    def __getattr__(self, name: str) -> Any:
        attr = getattr(self._inner, name)
        if not callable(attr):
            return attr

        def counted(*args: Any, **kwargs: Any) -> Any:
            self.calls[name] += 1
            return attr(*args, **kwargs)

        return counted


OPEN_PLANS = 1_000


def test_a_round_of_safety_ticks_over_1000_open_plans_costs_no_request_and_no_query() -> None:
    world = World()
    wait = {"key": "W1", "title": "wait an hour", "kind": "wait", "waitSeconds": 3600}
    names = [f"p{i:04d}" for i in range(OPEN_PLANS)]
    for name in names:
        world.plan(name, [wait])
    store = WatchStore(kind.plural for kind in (MIND, PLAN, APPROVAL, CAPABILITY_GRANT))
    for kind in (MIND, PLAN):
        for body in world.resources.list(kind, NAMESPACE):
            store.observe(kind.plural, body)
    store.primed()
    api, ledger, copy = Counting(world.resources), Counting(world.ledger), Counting(store)
    executor = executor_over(world, WatchedResources(copy, api), ledger)  # type: ignore[arg-type]
    plans = PlanTicks(
        executor.tick, lambda ns, name: store.version(PLAN.plural, ns, name), world.clock
    )

    def looked_at(namespace: str, name: str) -> object:
        """As the queue looks: from memory on its loop, and only if that cannot answer, fully."""
        return plans.quick(namespace, name) or plans(namespace, name)

    def round_of_ticks(tick: Callable[[str, str], object]) -> tuple[int, int, int, int]:
        """API requests, ledger queries, bodies decoded from the watch's copy, full ticks."""
        for counting in (api, ledger, copy):
            counting.calls.clear()
        before = plans.full_ticks
        for name in names:
            tick(NAMESPACE, name)
        return (
            sum(api.calls.values()),
            sum(ledger.calls.values()),
            copy.calls["get"] + copy.calls["in_namespace"],
            plans.full_ticks - before,
        )

    # After a start every plan is looked at fully; each starts its wait (a status write).
    requests, queries, decoded, full = round_of_ticks(looked_at)
    assert full == OPEN_PLANS
    assert requests >= OPEN_PLANS
    assert queries >= OPEN_PLANS
    assert decoded >= OPEN_PLANS
    assert all(world.steps(name) == {"W1": "waiting"} for name in names[:3])
    # What the safety tick saves: a full tick of a plan that waits reads its body and its
    # Mind's from the watch's copy (no request, no query, but decoding and validating both).
    assert round_of_ticks(executor.tick)[:3] == (0, 0, 2 * OPEN_PLANS)
    for _ in range(2):
        world.clock.advance(SAFETY)
        assert round_of_ticks(looked_at) == (0, 0, 0, 0)
    # A wake-up, or a write by someone else: that plan alone is looked at fully.
    plans.woken(NAMESPACE, names[0])
    changed = world.resources.get(PLAN, NAMESPACE, names[1])
    changed["metadata"]["resourceVersion"] = str(10**9)
    store.observe(PLAN.plural, changed)
    assert round_of_ticks(looked_at)[3] == 2


def executor_over(world: World, resources: Any, ledger: Any) -> Executor:
    return assemble(
        EnginePorts(
            resources=resources,
            ledger=ledger,
            events=world.events,
            drivers=world.driver,
            clock=world.clock,
            registry=world.registry,
            holder="bench",
        )
    ).executor

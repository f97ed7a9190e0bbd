"""The work queue's shell (minds.controller.queue) on a real event loop with handlers in
threads: every failure is tried again, a key never runs twice at once, news during a run is
not lost, and the dispatch table has a handler for every kind of work. The waits themselves
are proven over a fake clock in tests/unit/test_workqueue.py; here they are made short."""

from __future__ import annotations

import asyncio
import logging
import threading
import time
from collections import Counter
from collections.abc import Callable, Mapping
from datetime import timedelta
from types import SimpleNamespace
from typing import Any

import pytest

from minds.controller import work
from minds.controller.plan_ticks import PlanTicks
from minds.controller.queue import Job, Queue
from minds.domain.backoff import Backoff
from minds.domain.errors import NotFound, Refused
from minds.domain.workqueue import QueueState, Work, WorkQueue


class Told:
    """The queue's telemetry, kept."""

    def __init__(self) -> None:
        self.adds: Counter[str] = Counter()
        self.retries: list[tuple[str, str]] = []
        self.took: list[str] = []
        self.ran: list[str] = []
        self.depth: Mapping[str, int] = {}
        self.longest: Mapping[str, float] = {}

    def added(self, work: str) -> None:
        self.adds[work] += 1

    def retried(self, work: str, kind: str) -> None:
        self.retries.append((work, kind))

    def taken(self, work: str, waited: float) -> None:
        self.took.append(work)

    def worked(self, work: str, kind: str, seconds: float) -> None:
        self.ran.append(work)

    def queue_state(self, state: QueueState) -> None:
        self.depth, self.longest = state.depth, state.longest


class Handler:
    """Counts its runs, answers what the test says, and signals each run to the loop."""

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self.runs: Counter[tuple[str, str]] = Counter()
        self.raises: list[BaseException] = []
        self.again: timedelta | None = None
        self.hold = threading.Event()
        self.hold.set()
        self.running = 0
        self.most = 0
        self.overlapped = False
        self._active: set[tuple[str, str]] = set()
        self._lock = threading.Lock()
        self._loop = loop
        self.changed = asyncio.Event()

    def __call__(self, namespace: str, name: str) -> timedelta | None:
        key = (namespace, name)
        with self._lock:
            self.overlapped |= key in self._active
            self._active.add(key)
            self.running += 1
            self.most = max(self.most, self.running)
            self.runs[key] += 1
            error = self.raises.pop(0) if self.raises else None
        self._loop.call_soon_threadsafe(self.changed.set)
        try:
            self.hold.wait(5)
            if error is not None:
                raise error
            return self.again
        finally:
            with self._lock:
                self._active.discard(key)
                self.running -= 1
            self._loop.call_soon_threadsafe(self.changed.set)

    async def until(self, condition: Callable[[], bool], within: float = 5.0) -> None:
        async with asyncio.timeout(within):
            while not condition():
                self.changed.clear()
                await self.changed.wait()


def table(run: Callable[[str, str], timedelta | None], **refused: timedelta) -> dict[Work, Job]:
    return {w: Job(run, "Plan", refused=refused.get(w.value)) for w in Work}


async def started(
    handler: Handler, workers: int = 4, told: Told | None = None, **refused: timedelta
) -> Queue:
    fast = WorkQueue[Any](backoff=Backoff(base=0.01, cap=0.05, jitter=0.2))
    q = Queue(asyncio.get_running_loop(), workers=workers, telemetry=told, queue=fast)
    q.start(table(handler, **refused))
    return q


@pytest.fixture
async def handler() -> Handler:
    return Handler(asyncio.get_running_loop())


async def test_a_failing_handler_is_tried_again_until_it_succeeds(
    handler: Handler, caplog: pytest.LogCaptureFixture
) -> None:
    handler.raises = [ConnectionError("the database went away")] * 3
    told = Told()
    q = await started(handler, told=told)
    q.add(Work.ADMISSION, "team", "heal")
    await handler.until(lambda: handler.runs["team", "heal"] == 4)
    await asyncio.sleep(0.1)
    assert handler.runs["team", "heal"] == 4  # succeeded: no more tries
    assert told.retries == [("admission", "Plan")] * 3
    assert "Plan team/heal: admission failed (3 in a row); trying again in" in caplog.text
    assert not q.holds(Work.ADMISSION, "team", "heal")
    await q.close()


@pytest.mark.parametrize("error", [NotFound("gone"), Refused("its namespace is being deleted")])
async def test_gone_or_refused_work_is_dropped(handler: Handler, error: Exception) -> None:
    handler.raises = [error]
    q = await started(handler)
    q.add(Work.DECISION, "team", "heal")
    await handler.until(lambda: handler.runs["team", "heal"] == 1)
    await asyncio.sleep(0.1)
    assert handler.runs["team", "heal"] == 1
    assert not q.holds(Work.DECISION, "team", "heal")
    await q.close()


async def test_refused_work_of_a_kind_that_keeps_looking_is_looked_at_again_slowly(
    handler: Handler,
) -> None:
    handler.raises = [Refused("its namespace is being deleted")]
    q = await started(handler, tick=timedelta(milliseconds=50))
    q.add(Work.TICK, "team", "heal")
    await handler.until(lambda: handler.runs["team", "heal"] == 2)
    await q.close()


async def test_a_handler_says_when_to_look_again(handler: Handler) -> None:
    handler.again = timedelta(milliseconds=30)
    q = await started(handler)
    q.add(Work.GRANT, "team", "g")
    await handler.until(lambda: handler.runs["team", "g"] >= 3)
    handler.again = None
    await asyncio.sleep(0.1)
    assert not q.holds(Work.GRANT, "team", "g")
    await q.close()


async def test_news_during_a_run_runs_the_key_once_more_after_never_alongside(
    handler: Handler,
) -> None:
    """A change heard while the Mind's cycle is at work is not lost, and one key is never run
    by two workers at once (the first cycle's wake-up the old daemons had to keep)."""
    handler.hold.clear()
    q = await started(handler)
    q.add(Work.CYCLE, "shop", "keeper")
    await handler.until(lambda: handler.running == 1)
    for _ in range(5):  # from another thread, as the goals' watch does
        await asyncio.to_thread(q.wake, Work.CYCLE, "shop", "keeper")
    handler.hold.set()
    await handler.until(lambda: handler.runs["shop", "keeper"] == 2)
    await asyncio.sleep(0.1)
    assert handler.runs["shop", "keeper"] == 2
    assert not handler.overlapped
    await q.close()


async def test_a_wake_up_for_work_nobody_scheduled_is_dropped(handler: Handler) -> None:
    q = await started(handler)
    assert q.wake(Work.CYCLE, "shop", "other") is False
    await asyncio.sleep(0.05)
    assert handler.runs == Counter()
    await q.close()


async def test_no_more_than_the_workers_run_at_once(handler: Handler) -> None:
    handler.hold.clear()
    told = Told()
    q = await started(handler, workers=3, told=told)
    for i in range(10):
        q.add(Work.TICK, "shop", f"p{i}")
    await handler.until(lambda: handler.running == 3)
    await asyncio.sleep(0.05)
    assert handler.running == 3
    # The depth is told by kind of work, and how long the longest has been running.
    async with asyncio.timeout(5):
        # Told by the queue at most once a second: no event marks it.
        while not (told.depth.get("tick") == 7 and told.longest.get("tick", 0) > 0):  # noqa: ASYNC110
            await asyncio.sleep(0.05)
    handler.hold.set()
    await handler.until(lambda: sum(handler.runs.values()) == 10)
    assert handler.most == 3
    assert told.adds["tick"] == 10
    async with asyncio.timeout(5):
        # Told on the loop after each handler returned: no event marks it.
        while len(told.ran) < 10:  # noqa: ASYNC110
            await asyncio.sleep(0.01)
    assert told.took == ["tick"] * 10
    await q.close()


def test_the_dispatch_table_has_a_handler_for_every_kind_of_work() -> None:
    wiring: Any = SimpleNamespace()
    ticks = PlanTicks(lambda ns, n: None, lambda ns, n: None, lambda: None)  # type: ignore[arg-type,return-value]
    jobs = work.jobs(wiring, SimpleNamespace(), work.Plans(SimpleNamespace(), ticks))  # type: ignore[arg-type]
    assert set(jobs) == set(Work)


async def test_a_queue_refuses_a_table_with_a_kind_missing(handler: Handler) -> None:
    q = Queue(asyncio.get_running_loop(), workers=1)
    jobs = table(handler)
    del jobs[Work.RETENTION]
    with pytest.raises(ValueError, match="retention"):
        q.start(jobs)


async def test_keys_added_before_the_start_run_once_it_starts(handler: Handler) -> None:
    """The watch's first listing comes in before the handlers are wired."""
    q = Queue(asyncio.get_running_loop(), workers=2)
    q.add(Work.MIND, "shop", "keeper")
    await asyncio.sleep(0.02)
    assert handler.runs == Counter()
    q.start(table(handler))
    await handler.until(lambda: handler.runs["shop", "keeper"] == 1)
    await q.close()


def test_a_failure_is_logged_on_the_object(caplog: pytest.LogCaptureFixture) -> None:
    """The line operators (and tests/e2e/test_blips.py) look for."""

    async def go() -> None:
        loop = asyncio.get_running_loop()
        h = Handler(loop)
        h.raises = [RuntimeError("boom")]
        q = await started(h)
        q.add(Work.DECISION, "team", "ask-1")
        await h.until(lambda: h.runs["team", "ask-1"] == 2)
        await q.close()

    began = time.monotonic()
    with caplog.at_level(logging.ERROR):
        asyncio.run(go())
    assert time.monotonic() - began < 5
    assert "Plan team/ask-1: decision failed (1 in a row); trying again in" in caplog.text


def test_only_a_later_spec_change_of_a_mind_wakes_its_cycle() -> None:
    """A Mind seen for the first time (created, or at start) has its first cycle when it is
    Ready: waking it as well would run two first cycles."""
    seen = work.Generations()
    assert seen.changed("shop", "keeper", 1) is False
    assert seen.changed("shop", "keeper", 1) is False
    assert seen.changed("shop", "keeper", 2) is True
    assert seen.changed("shop", "other", 2) is False


async def test_work_answered_from_memory_takes_no_thread(handler: Handler) -> None:
    """A safety tick of a plan that did not change: the queue asks on its loop, and only a
    key that cannot be answered so is run in a worker thread."""
    asked: list[str] = []

    def quick(namespace: str, name: str) -> timedelta | None:
        asked.append(name)
        return timedelta(milliseconds=20) if name == "same" else None

    jobs = table(handler)
    jobs[Work.TICK] = Job(handler, "Plan", quick=quick)
    q = Queue(asyncio.get_running_loop(), workers=2)
    q.start(jobs)
    q.add(Work.TICK, "shop", "same")
    async with asyncio.timeout(5):
        while asked.count("same") < 3:  # noqa: ASYNC110
            await asyncio.sleep(0.01)
    q.add(Work.TICK, "shop", "changed")
    await handler.until(lambda: handler.runs["shop", "changed"] == 1)
    before = asked.count("same")
    async with asyncio.timeout(5):
        while asked.count("same") < before + 3:  # noqa: ASYNC110
            await asyncio.sleep(0.01)
    assert handler.runs["shop", "same"] == 0
    assert q.holds(Work.TICK, "shop", "same")
    await q.close()


async def test_a_handler_that_sees_its_own_object_gone_retries_when_another_is_missing(
    handler: Handler,
) -> None:
    """A plan's tick reads its Approval, its Mind, a workload: one of those missing for a
    moment is a failure to try again, never the end of the plan's schedule."""
    handler.raises = [NotFound("approval shop/ask-1")]
    fast = WorkQueue[Any](backoff=Backoff(base=0.01, cap=0.05, jitter=0.2))
    q = Queue(asyncio.get_running_loop(), workers=2, queue=fast)
    jobs = table(handler)
    jobs[Work.TICK] = Job(handler, "Plan", gone_ends=False)
    q.start(jobs)
    q.add(Work.TICK, "shop", "heal")
    await handler.until(lambda: handler.runs["shop", "heal"] == 2)
    await q.close()


async def test_a_queue_closed_while_it_answers_from_memory_always_stops() -> None:
    """A cancellation that arrives just as the dispatcher's wait ends must still stop it (on
    Python 3.11, ``asyncio.wait_for`` could swallow it and ``close`` waited forever: seen
    in about 1 of 75 closes of a queue answering every millisecond)."""
    loop = asyncio.get_running_loop()
    answered = 0

    def often(namespace: str, name: str) -> timedelta:
        nonlocal answered
        answered += 1
        return timedelta(milliseconds=1)

    for _ in range(300):
        q = Queue(loop, workers=2)
        q.start({work: Job(often, "Plan", quick=often) for work in Work})
        for n in range(5):
            q.add(Work.TICK, "shop", f"p{n}")
        enough = answered + 10  # a few rounds of answers, then the close
        async with asyncio.timeout(5):
            while answered < enough:  # noqa: ASYNC110
                await asyncio.sleep(0)
            await q.close()

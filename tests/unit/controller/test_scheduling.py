"""Plans' tasks and Approvals' timers: started from the watch, woken by news, never polling."""

from __future__ import annotations

import asyncio
import threading
from collections import Counter
from collections.abc import Callable
from datetime import UTC, datetime, timedelta

import pytest

from minds.controller.scheduling import FINISHED, Finished, Scheduler

FALLBACK = 3600.0  # far beyond any test: a plan that looks again did so because of a wake-up


class Plans:
    """A tick that counts calls and answers what the test says, signalling each call."""

    def __init__(self) -> None:
        self.ticks: Counter[tuple[str, str]] = Counter()
        self.answer: dict[tuple[str, str], datetime | Finished | None] = {}
        self.fail: set[tuple[str, str]] = set()
        self.changed = asyncio.Event()
        self._loop = asyncio.get_running_loop()
        self._lock = threading.Lock()

    def tick(self, namespace: str, name: str) -> datetime | Finished | None:
        key = (namespace, name)
        with self._lock:
            self.ticks[key] += 1
        self._loop.call_soon_threadsafe(self.changed.set)
        if key in self.fail:
            raise RuntimeError("tick failed")
        return self.answer.get(key)

    async def until(self, condition: Callable[[], bool], within: float = 5.0) -> None:
        async with asyncio.timeout(within):
            while not condition():
                self.changed.clear()
                await self.changed.wait()


@pytest.fixture
async def plans() -> Plans:
    return Plans()


async def no_task_left(s: Scheduler) -> None:
    """A task's end runs on the loop after its last tick: yield to the loop until it has."""
    # No event marks a task's end; yielding to the loop is how its end runs.
    async with asyncio.timeout(5):
        while s.running():  # noqa: ASYNC110
            await asyncio.sleep(0)


def scheduler(plans: Plans, **kw: float) -> Scheduler:
    return Scheduler(asyncio.get_running_loop(), plans.tick, FALLBACK, **kw)


async def test_a_new_plan_looks_at_once_and_then_only_when_woken(plans: Plans) -> None:
    s = scheduler(plans)
    s.run_plan("ns", "p")
    await plans.until(lambda: plans.ticks["ns", "p"] == 1)
    # Our own write coming back from the watch: the plan keeps to its schedule.
    s.run_plan("ns", "p")
    s.wake("ns", "other")  # nobody sleeps on it
    s.wake("ns", "p")
    await plans.until(lambda: plans.ticks["ns", "p"] == 2)
    await asyncio.sleep(0)  # let anything else queued on the loop run: it must not tick again
    assert plans.ticks["ns", "p"] == 2
    await s.close()


async def test_a_plan_looks_again_at_the_time_its_status_asks_for(plans: Plans) -> None:
    plans.answer["ns", "p"] = datetime.now(UTC) + timedelta(milliseconds=300)
    s = scheduler(plans)
    s.run_plan("ns", "p")
    await plans.until(lambda: plans.ticks["ns", "p"] >= 2)
    await s.close()


async def test_a_finished_plan_has_no_task_left(plans: Plans) -> None:
    plans.answer["ns", "p"] = FINISHED
    s = scheduler(plans)
    s.run_plan("ns", "p")
    await plans.until(lambda: plans.ticks["ns", "p"] == 1)
    await no_task_left(s)
    s.run_plan("ns", "p")  # the watch says it is open again (a new revision): a new task
    await plans.until(lambda: plans.ticks["ns", "p"] == 2)
    await s.close()


async def test_a_failing_tick_is_tried_again(plans: Plans) -> None:
    plans.fail.add(("ns", "p"))
    s = Scheduler(asyncio.get_running_loop(), plans.tick, FALLBACK, retry=0.05)
    s.run_plan("ns", "p")
    await plans.until(lambda: plans.ticks["ns", "p"] >= 3)
    assert s.running() == 1
    await s.close()


async def test_a_stopped_plan_ticks_no_more(plans: Plans) -> None:
    s = scheduler(plans)
    s.run_plan("ns", "p")
    await plans.until(lambda: plans.ticks["ns", "p"] == 1)
    s.stop_plan("ns", "p")
    await no_task_left(s)
    s.wake("ns", "p")
    await asyncio.sleep(0)
    assert plans.ticks["ns", "p"] == 1
    await s.close()


async def test_timers_fire_once_at_their_time_and_the_last_one_set_wins(plans: Plans) -> None:
    fired: list[str] = []
    done = asyncio.Event()
    loop = asyncio.get_running_loop()

    def call(what: str) -> Callable[[], None]:
        def run() -> None:
            fired.append(what)
            loop.call_soon_threadsafe(done.set)

        return run

    s = scheduler(plans)
    now = datetime.now(UTC)
    s.at("expiry", ("ns", "a"), now + timedelta(hours=1), call("replaced"))
    s.at("expiry", ("ns", "a"), now - timedelta(seconds=1), call("a"))  # overdue: fires at once
    s.at("expiry", ("ns", "b"), now - timedelta(seconds=1), call("cancelled"))
    s.cancel("expiry", ("ns", "b"))
    async with asyncio.timeout(5):
        await done.wait()
    await asyncio.sleep(0)
    assert fired == ["a"]
    assert s.timers() == 0
    await s.close()

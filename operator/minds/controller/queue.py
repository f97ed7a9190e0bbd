"""The controller's one work queue: every kind of work runs here, and every failure is retried.

The bookkeeping is ``minds.domain.workqueue`` (pure); this is its shell on the event loop. One
dispatcher task takes ready keys while fewer than ``workers`` handlers run, and runs each
handler in a worker thread of the tick pool (``minds.controller.workers``): a key that waits
(for a person, a window, its next cycle) holds neither a thread nor a task.

A handler is looked up by the key's kind of work in a table (``minds.controller.work``). It
returns when to look at the key again, or None; it raises to be tried again. NotFound ends the
work (the object is gone). ``Refused`` (a 403: a namespace being deleted) is no blip that a
backoff helps: each kind says whether it is tried again at a slow, fixed pace or dropped until
the next event. Anything else is retried with backoff, logged with the count in a row and
counted as a retry of its work and a reconcile error of its resource kind.

Callable from any thread: kopf's handlers (on the loop or in its pool) and the handlers
running here all add keys.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import random
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import timedelta
from typing import Protocol

from minds.domain.errors import NotFound, Refused
from minds.domain.workqueue import QueueState, Work, WorkQueue

log = logging.getLogger(__name__)

#: A kind of work, the namespace and the name of the object it is about.
WorkKey = tuple[Work, str, str]

#: A handler: when to look again (None: only when something adds the key again).
Handler = Callable[[str, str], timedelta | None]

#: How often the unfinished-work gauges are brought up to date while something runs.
GAUGE_SECONDS = 1.0


def _work_of(key: WorkKey) -> str:
    return key[0].value


def _stopped(task: asyncio.Task[None]) -> None:
    # Nothing would run any more: say so loudly rather than leave every object waiting.
    if not task.cancelled() and task.exception() is not None:
        log.critical("the work queue stopped", exc_info=task.exception())


@dataclass(frozen=True)
class Job:
    run: Handler
    #: The resource kind the work is about: its failures are reconcile errors of that kind.
    kind: str
    #: After a ``Refused``: look again this much later; None drops the work until an event.
    refused: timedelta | None = None
    #: Whether a NotFound means the key's own object is gone (the work ends). A handler that
    #: sees its own object gone by itself (a plan's tick, a cycle) reads other objects too,
    #: and one of those gone is a failure like any other: tried again.
    gone_ends: bool = True
    #: Answers from memory alone, on the event loop: when to look again if ``run`` need not
    #: run at all, None when it must. A safety tick of a plan that did not change then costs
    #: no thread.
    quick: Handler | None = None


class QueueTelemetry(Protocol):
    def added(self, work: str) -> None: ...

    def retried(self, work: str, kind: str) -> None: ...

    def taken(self, work: str, waited: float) -> None: ...

    def worked(self, work: str, kind: str, seconds: float) -> None: ...

    def queue_state(self, state: QueueState) -> None: ...


class Untold:
    """No metrics (a controller without a metrics endpoint, a test)."""

    def added(self, work: str) -> None:
        return None

    def retried(self, work: str, kind: str) -> None:
        return None

    def taken(self, work: str, waited: float) -> None:
        return None

    def worked(self, work: str, kind: str, seconds: float) -> None:
        return None

    def queue_state(self, state: QueueState) -> None:
        return None


class Queue:
    def __init__(
        self,
        loop: asyncio.AbstractEventLoop,
        *,
        workers: int,
        telemetry: QueueTelemetry | None = None,
        queue: WorkQueue[WorkKey] | None = None,
        clock: Callable[[], float] = time.monotonic,
        draw: Callable[[], float] = random.random,
    ) -> None:
        self._loop = loop
        self._jobs: dict[Work, Job] = {}
        self._workers = workers
        self._telemetry = telemetry or Untold()
        self._queue: WorkQueue[WorkKey] = queue if queue is not None else WorkQueue()
        self._clock = clock
        self._draw = draw
        self._lock = threading.Lock()
        self._changed = asyncio.Event()
        self._busy = 0
        self._tasks: set[asyncio.Task[None]] = set()
        self._dispatcher: asyncio.Task[None] | None = None
        self._told = float("-inf")
        self._untold = False

    # -- adding (any thread) ------------------------------------------------------------------

    def add(self, work: Work, namespace: str, name: str) -> bool:
        return self._change(lambda q, now: q.add((work, namespace, name), now), work)

    def add_after(self, work: Work, namespace: str, name: str, delay: timedelta) -> bool:
        seconds = delay.total_seconds()
        return self._change(lambda q, now: q.add_after((work, namespace, name), seconds, now), work)

    def ensure(self, work: Work, namespace: str, name: str) -> bool:
        return self._change(lambda q, now: q.ensure((work, namespace, name), now), work)

    def wake(self, work: Work, namespace: str, name: str) -> bool:
        return self._change(lambda q, now: q.wake((work, namespace, name), now), work)

    def cancel(self, work: Work, namespace: str, name: str) -> None:
        with self._lock:
            self._queue.cancel((work, namespace, name))

    def holds(self, work: Work, namespace: str, name: str) -> bool:
        with self._lock:
            return self._queue.holds((work, namespace, name))

    def _change(self, change: Callable[[WorkQueue[WorkKey], float], bool], work: Work) -> bool:
        with self._lock:
            changed = change(self._queue, self._clock())
        if changed:
            self._telemetry.added(work.value)
            self._notify()
        return changed

    def _notify(self) -> None:
        if not self._loop.is_closed():
            self._loop.call_soon_threadsafe(self._changed.set)

    # -- running (the event loop) -------------------------------------------------------------

    def start(self, jobs: Mapping[Work, Job]) -> None:
        """Run keys from now on, each by its kind's job; every kind must have one (keys may
        have been added before: the watch's first listing comes in before this)."""
        missing = set(Work) - set(jobs)
        if missing:
            raise ValueError(f"no handler for {sorted(missing)}")
        self._jobs = dict(jobs)
        self._dispatcher = self._loop.create_task(self._dispatch(), name="work queue")
        self._dispatcher.add_done_callback(_stopped)

    async def close(self) -> None:
        tasks = [*self._tasks, *([self._dispatcher] if self._dispatcher else [])]
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)

    async def _dispatch(self) -> None:
        while True:
            self._changed.clear()
            now = self._clock()
            with self._lock:
                due = self._queue.promote(now)
                taken: list[tuple[WorkKey, float]] = []
                while self._busy < self._workers:
                    got = self._queue.get(now)
                    if got is None:
                        break
                    taken.append(got)
                    self._busy += 1
            for key, waited in taken:
                self._telemetry.taken(key[0].value, waited)
                if not self._answered(key):
                    task = self._loop.create_task(
                        self._work(key), name="work {}:{}/{}".format(*key)
                    )
                    self._tasks.add(task)
                    task.add_done_callback(self._tasks.discard)
            timeout = None if due is None else max(0.0, due - now)
            # The gauges are told at most once a GAUGE_SECONDS (a thousand safety ticks a
            # minute would otherwise set them a thousand times), and once more after the last
            # change, so an idle queue shows what is true.
            if now - self._told >= GAUGE_SECONDS:
                with self._lock:
                    state = self._queue.state(now, _work_of)
                self._telemetry.queue_state(state)
                self._told, self._untold = now, bool(self._busy)
            else:
                self._untold = True
            if self._untold:
                wait = max(0.0, self._told + GAUGE_SECONDS - now)
                timeout = wait if timeout is None else min(timeout, wait)
            # Not wait_for: on 3.11 it can swallow a cancellation that arrives as its wait
            # ends, and the dispatcher would then never stop (close() waited forever).
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(timeout):
                    await self._changed.wait()

    def _answered(self, key: WorkKey) -> bool:
        work, namespace, name = key
        job = self._jobs[work]
        again = job.quick(namespace, name) if job.quick is not None else None
        if again is None:
            return False
        with self._lock:
            self._queue.add_after(key, again.total_seconds(), self._clock())
            seconds = self._queue.done(key, self._clock())
            self._busy -= 1
        self._telemetry.worked(work.value, job.kind, seconds)
        self._changed.set()  # its new time may be sooner than what the dispatcher waits for
        return True

    async def _work(self, key: WorkKey) -> None:
        work, namespace, name = key
        job = self._jobs[work]
        try:
            again = await asyncio.to_thread(job.run, namespace, name)
        except NotFound as exc:
            if not job.gone_ends:
                self._failed(key, job)
            else:
                log.info("%s %s/%s: %s ends: %s", job.kind, namespace, name, work.value, exc)
                self._settled(key, None)
        except Refused as exc:
            log.warning("%s %s/%s: %s: %s", job.kind, namespace, name, work.value, exc)
            self._settled(key, job.refused)
        except Exception:
            self._failed(key, job)
        else:
            self._settled(key, again)
        finally:
            with self._lock:
                seconds = self._queue.done(key, self._clock())
                self._busy -= 1
            self._telemetry.worked(work.value, job.kind, seconds)
            self._changed.set()

    def _failed(self, key: WorkKey, job: Job) -> None:
        """Called while the exception is handled: its traceback is logged."""
        work, namespace, name = key
        with self._lock:
            failures, delay = self._queue.failed(key, self._clock(), self._draw())
        self._telemetry.retried(work.value, job.kind)
        log.exception(
            "%s %s/%s: %s failed (%d in a row); trying again in %.1f s",
            job.kind,
            namespace,
            name,
            work.value,
            failures,
            delay,
        )

    def _settled(self, key: WorkKey, again: timedelta | None) -> None:
        with self._lock:
            self._queue.forget(key)
            if again is not None:
                self._queue.add_after(key, again.total_seconds(), self._clock())

"""What runs when, kept in memory and rebuilt from the watch at start.

Open plans each get a task on the event loop that ticks the plan in a worker thread and sleeps
until the time its status asks for (or until woken); open Approvals get a one-shot timer at
their ``expiresAt``. Both are started from watch events, so the initial listing rebuilds them
after a restart, and nothing here is state: losing it costs promptness, never correctness.

kopf's daemons and timers would do the same, but kopf puts a finalizer on every object that has
one (a write when it starts and another when it ends, on every plan and every Approval) so
that it can stop them before deletion. A plan's tick already stops at a deletion timestamp and
an expiry timer of a deleted Approval finds nothing to do, so those writes would buy nothing.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import threading
from collections.abc import Callable
from datetime import UTC, datetime

from minds.domain.errors import Refused

log = logging.getLogger(__name__)

Key = tuple[str, str]

#: After a tick raised, the plan is looked at again this much later.
RETRY_SECONDS = 10.0


class Finished:
    """Returned by a tick when the plan is done with: its task ends."""


FINISHED = Finished()

#: A plan's tick: when to look again (None: only when woken or at the fallback), or
#: ``FINISHED`` when the plan needs no task any more.
Tick = Callable[[str, str], datetime | Finished | None]


class Scheduler:
    def __init__(
        self,
        loop: asyncio.AbstractEventLoop,
        tick: Tick,
        fallback: float,
        retry: float = RETRY_SECONDS,
    ) -> None:
        self._loop = loop
        self._tick = tick
        self._fallback = fallback
        self._retry = retry
        self._lock = threading.Lock()
        self._plans: dict[Key, asyncio.Task[None]] = {}
        self._woken: dict[Key, asyncio.Event] = {}
        self._timers: dict[tuple[str, str, str], asyncio.TimerHandle] = {}

    # -- plans -------------------------------------------------------------------------

    def run_plan(self, namespace: str, name: str) -> None:
        """Make sure the plan has a task (a new one looks at once; a running one is left to its
        schedule: our own writes coming back from the watch are no reason to look again).
        Callable from any thread."""
        self._loop.call_soon_threadsafe(self._ensure, (namespace, name))

    def wake(self, namespace: str, name: str) -> None:
        """Have the plan's task look now, if it has one. Callable from any thread."""
        self._loop.call_soon_threadsafe(self._wake, (namespace, name))

    def stop_plan(self, namespace: str, name: str) -> None:
        self._loop.call_soon_threadsafe(self._cancel, (namespace, name))

    def running(self) -> int:
        return len(self._plans)

    def _ensure(self, key: Key) -> None:
        if key in self._plans:
            return
        self._woken[key] = asyncio.Event()
        self._plans[key] = self._loop.create_task(self._run(key), name=f"plan {key[0]}/{key[1]}")

    def _wake(self, key: Key) -> None:
        event = self._woken.get(key)
        if event is not None:
            event.set()

    def _cancel(self, key: Key) -> None:
        task = self._plans.get(key)
        if task is not None:
            task.cancel()

    async def _run(self, key: Key) -> None:
        woken = self._woken[key]
        try:
            while True:
                woken.clear()
                try:
                    due = await asyncio.to_thread(self._tick, *key)
                except Refused as exc:  # its namespace is being deleted, say: no trace needed
                    log.warning("plan %s/%s: %s", *key, exc)
                    due = None
                    delay = self._retry
                except Exception:  # logged; the tick re-reads everything, so trying again is safe
                    log.exception("plan %s/%s: tick failed", *key)
                    due = None
                    delay = self._retry
                else:
                    if isinstance(due, Finished):
                        return
                    delay = self._fallback
                    if due is not None:
                        until = (due - datetime.now(UTC)).total_seconds()
                        delay = max(0.2, min(self._fallback, until))
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(woken.wait(), timeout=delay)
        finally:
            self._plans.pop(key, None)
            self._woken.pop(key, None)

    # -- one-shot timers ---------------------------------------------------------------

    def at(self, kind: str, key: Key, when: datetime, call: Callable[[], None]) -> None:
        """Run ``call`` in a worker thread at ``when`` (replacing any timer of the same kind and
        key). Callable from any thread."""
        self._loop.call_soon_threadsafe(self._set_timer, (kind, *key), when, call)

    def cancel(self, kind: str, key: Key) -> None:
        self._loop.call_soon_threadsafe(self._drop_timer, (kind, *key))

    def timers(self) -> int:
        return len(self._timers)

    def _set_timer(
        self, tkey: tuple[str, str, str], when: datetime, call: Callable[[], None]
    ) -> None:
        self._drop_timer(tkey)
        delay = max(0.0, (when - datetime.now(UTC)).total_seconds())

        def fire() -> None:
            self._timers.pop(tkey, None)
            self._loop.create_task(self._call(tkey, call))

        self._timers[tkey] = self._loop.call_later(delay, fire)

    def _drop_timer(self, tkey: tuple[str, str, str]) -> None:
        handle = self._timers.pop(tkey, None)
        if handle is not None:
            handle.cancel()

    async def _call(self, tkey: tuple[str, str, str], call: Callable[[], None]) -> None:
        try:
            await asyncio.to_thread(call)
        except Exception:
            log.exception("timer %s failed", "/".join(tkey))

    # -- shutting down -----------------------------------------------------------------

    async def close(self) -> None:
        for handle in self._timers.values():
            handle.cancel()
        self._timers.clear()
        tasks = list(self._plans.values())
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)

"""Early wake-ups for the minds' cycle daemons (plans have their own, in ``scheduling``).

A Mind's daemon runs a cycle, sleeps for the Mind's interval, and is woken early when its spec
changes. Losing this object (a restart) loses only promptness.

Daemons sleep on the event loop, not in a worker thread: a sleeping plan must never hold one
of the threads that approvals and admissions need (with threads, enough waiting plans would
starve every other handler). Handlers run in threads and wake daemons thread-safely.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading


class Wakeups:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._events: dict[tuple[str, str], asyncio.Event] = {}
        self._loop: asyncio.AbstractEventLoop | None = None

    def _event(self, namespace: str, name: str) -> asyncio.Event:
        with self._lock:
            return self._events.setdefault((namespace, name), asyncio.Event())

    def listen(self, namespace: str, name: str) -> None:
        """From now on a wake-up for this name is kept until the next ``sleep``: a daemon calls
        this before its first cycle, so that a change heard during that cycle is not lost."""
        with self._lock:
            self._loop = asyncio.get_running_loop()
        self._event(namespace, name)

    def wake(self, namespace: str, name: str) -> None:
        """Callable from any thread."""
        with self._lock:
            event = self._events.get((namespace, name))
            loop = self._loop
        if event is None or loop is None:
            return  # nobody sleeps on it now; its daemon will look at the next tick anyway
        loop.call_soon_threadsafe(event.set)

    async def sleep(self, namespace: str, name: str, seconds: float) -> None:
        """Sleep up to ``seconds``; return early when woken."""
        with self._lock:
            self._loop = asyncio.get_running_loop()
        event = self._event(namespace, name)
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(event.wait(), timeout=max(0.0, seconds))
        event.clear()

    def forget(self, namespace: str, name: str) -> None:
        with self._lock:
            self._events.pop((namespace, name), None)

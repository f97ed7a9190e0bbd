"""Early wake-ups for plan daemons.

Plan state lives in the Plan's status, never here: a daemon ticks, sleeps until the next run
time the status asks for (at most the fallback interval), and can be woken early when an
Approval is decided or a grant appears. Losing this object (a restart) loses only promptness.
"""

from __future__ import annotations

import threading
from collections.abc import Callable


class Wakeups:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._events: dict[tuple[str, str], threading.Event] = {}

    def _event(self, namespace: str, name: str) -> threading.Event:
        with self._lock:
            return self._events.setdefault((namespace, name), threading.Event())

    def wake(self, namespace: str, name: str) -> None:
        self._event(namespace, name).set()

    def sleep(self, namespace: str, name: str, seconds: float, stopped: Callable[[], bool]) -> None:
        """Sleep up to ``seconds``; return early when woken or when the daemon is stopped."""
        event = self._event(namespace, name)
        remaining = seconds
        while remaining > 0 and not stopped():
            step = min(remaining, 1.0)
            if event.wait(step):
                break
            remaining -= step
        event.clear()

    def forget(self, namespace: str, name: str) -> None:
        with self._lock:
            self._events.pop((namespace, name), None)

"""Work a watch event started, tried again until it succeeds.

kopf never retries an ``on.event`` handler: after an exception it logs and waits for the next
event on that object, which may never come (a Plan nobody edits again, a decision already
made). Plan admission and Approval decisions run here instead: a failure is logged on the
object's own kopf logger (so it counts as a reconcile error of its kind) and the same work is
tried again after an exponential, jittered backoff (``minds.domain.backoff``), per object: a
new event that succeeds first cancels the pending try, and one object holds at most one
pending try per kind of work (a second failure replaces the first timer). The work re-reads
what it needs each time, so trying again is always safe.
"""

from __future__ import annotations

import logging
import random
import threading
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Protocol

from minds.domain.backoff import Backoff
from minds.domain.errors import NotFound, Refused

Key = tuple[str, str]


class Timers(Protocol):
    """One-shot timers by kind and key (the controller's ``Scheduler``)."""

    def at(self, kind: str, key: Key, when: datetime, call: Callable[[], None]) -> None: ...

    def cancel(self, kind: str, key: Key) -> None: ...


Log = logging.Logger | logging.LoggerAdapter[logging.Logger]


class Retries:
    def __init__(
        self,
        timers: Timers,
        backoff: Backoff | None = None,
        draw: Callable[[], float] = random.random,
        clock: Callable[[], datetime] = lambda: datetime.now(UTC),
        retried: Callable[[str], None] = lambda work: None,
    ) -> None:
        self._timers = timers
        self._retried = retried
        self._backoff = backoff or Backoff()
        self._draw = draw
        self._clock = clock
        self._lock = threading.Lock()
        self._failures: dict[tuple[str, str, str], int] = {}

    def run(self, work: str, key: Key, attempt: Callable[[], None], logger: Log) -> None:
        """Run ``attempt`` now, in the caller's thread; if it fails, try it again later.

        Gone (NotFound) ends the work. Refused (a 403: a namespace being deleted, the status
        guard) is no blip, so it is not tried again: the next event on the object is."""
        timer = f"retry {work}"
        try:
            attempt()
        except (NotFound, Refused) as exc:
            if isinstance(exc, Refused):
                logger.warning("%s: %s", work, exc)
            self._succeeded(timer, work, key)
        except Exception:
            with self._lock:
                failures = self._failures[(work, *key)] = self._failures.get((work, *key), 0) + 1
            delay = self._backoff.delay(failures, self._draw())
            self._retried(work)
            logger.exception(
                "%s failed (%d in a row); trying again in %.1f s", work, failures, delay
            )
            self._timers.at(
                timer,
                key,
                self._clock() + timedelta(seconds=delay),
                lambda: self.run(work, key, attempt, logger),
            )
        else:
            self._succeeded(timer, work, key)

    def pending(self) -> int:
        """Objects whose work failed last time and waits to be tried again."""
        with self._lock:
            return len(self._failures)

    def _succeeded(self, timer: str, work: str, key: Key) -> None:
        with self._lock:
            failed = self._failures.pop((work, *key), None)
        if failed is not None:
            self._timers.cancel(timer, key)

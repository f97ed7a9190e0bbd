"""A plan's tick, and the safety tick in front of it that costs nothing when nothing changed.

Every open plan is looked at every ``SAFETY`` (the seed's 15 s) as well as when something
wakes it (its spec, a write by someone else, an Approval, its Mind) and at the time its status
asks for. The look is first an in-memory comparison: the plan's resourceVersion in the
watch's copy against the one the last full tick left, and the time that tick asked to be
looked at again against the clock. Only when either differs, or a wake-up arrived, does the
full tick run (the executor's, which may read the ledger and write the status). A full tick
also runs at least every ``FULL`` (what the safety net was before): some of what a plan waits
for (a free place under its Mind's attention cap, a budget) is in the ledger and wakes
nobody.

Nothing here is state: after a restart every plan gets a full tick first.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta

from minds.domain.execution.machine import FINAL_PLAN
from minds.engine.executor import TickResult

SAFETY = timedelta(seconds=15)
FULL = timedelta(minutes=10)
#: A plan asking to be looked at at once (a tick that hit its transition limit) still lets
#: others run first.
SOONEST = timedelta(milliseconds=200)

_DONE = frozenset(FINAL_PLAN)

Key = tuple[str, str]


@dataclass(frozen=True)
class Seen:
    """What the last full tick of a plan left: the version it wrote or read last, and when it
    is to be looked at fully again."""

    version: str | None
    due: datetime


def unchanged(seen: Seen | None, version: str | None, now: datetime) -> bool:
    """Would a full tick find nothing new? Only a plan seen at this version, before its time."""
    return seen is not None and seen.version == version and now < seen.due


class PlanTicks:
    def __init__(
        self,
        tick: Callable[[str, str], TickResult],
        version: Callable[[str, str], str | None],
        clock: Callable[[], datetime],
        *,
        safety: timedelta = SAFETY,
        full: timedelta = FULL,
    ) -> None:
        self._tick = tick
        self._version = version
        self._clock = clock
        self._safety = safety
        self._full = full
        self._lock = threading.Lock()
        self._seen: dict[Key, Seen] = {}
        self._woken: set[Key] = set()
        #: Full ticks run: what the safety tick saves is counted against it.
        self.full_ticks = 0

    def woken(self, namespace: str, name: str) -> None:
        """Something that may matter happened: the next look is a full tick. Marked before the
        key is added, so that a run starting in between sees it."""
        with self._lock:
            self._woken.add((namespace, name))

    def unwoken(self, namespace: str, name: str) -> None:
        """The plan has no schedule (finished, a dream): the mark would never be read."""
        with self._lock:
            self._woken.discard((namespace, name))

    def quick(self, namespace: str, name: str) -> timedelta | None:
        """When to look again if nothing changed since the last full tick; None when a full
        tick is due. Reads memory only: the queue asks it on its event loop."""
        key = (namespace, name)
        now = self._clock()
        with self._lock:
            if key in self._woken:
                return None
            seen = self._seen.get(key)
        if seen is None or not unchanged(seen, self._version(*key), now):
            return None
        return self._next(seen.due, now)

    def __call__(self, namespace: str, name: str) -> timedelta | None:
        key = (namespace, name)
        now = self._clock()
        with self._lock:
            forced = key in self._woken
            self._woken.discard(key)
            seen = self._seen.get(key)
        if not forced and seen is not None and unchanged(seen, self._version(*key), now):
            return self._next(seen.due, now)
        with self._lock:
            self.full_ticks += 1
        try:
            result = self._tick(namespace, name)
        except BaseException:
            # The queue tries it again: fully, since whatever woke it has not been looked at.
            with self._lock:
                self._seen.pop(key, None)
            raise
        if result.phase is None or result.phase in _DONE:
            with self._lock:
                self._seen.pop(key, None)
            return None  # gone, unreadable, being deleted, or done: no schedule
        now = self._clock()
        due = now + self._full
        if result.wake_at is not None:
            due = min(due, result.wake_at)
        with self._lock:
            # The version after the tick's own writes: their echo is no reason to look again.
            self._seen[key] = Seen(self._version(*key), due)
        return self._next(due, now)

    def _next(self, due: datetime, now: datetime) -> timedelta:
        return max(SOONEST, min(self._safety, due - now))

    def forget(self, namespace: str, name: str) -> None:
        with self._lock:
            self._seen.pop((namespace, name), None)
            self._woken.discard((namespace, name))

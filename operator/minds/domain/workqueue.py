"""The bookkeeping of the controller's one work queue: what waits, what runs, what failed.

client-go's ``util/workqueue`` is the model. An item is a key, never a payload: the handler
reads what it needs when it runs, so ten adds of one key while it waits are one run. A key is
never run by two workers at once: an add while it runs marks it dirty, and it runs once more
after (the add may carry news the running handler read too early to see). ``add_after`` keeps
the earliest due time per key. A failure is tried again after the longer of the key's own
exponential backoff (``minds.domain.backoff``) and the overall token bucket, so that a
database blip failing every object at once is not retried as one stampede; success forgets
the key's failures.

One difference from client-go, on purpose: a key taken to run drops its pending ``add_after``.
Every handler re-reads everything and says itself when to look again, so the run satisfies the
earlier request, and a Mind woken early does not run again at the time its old interval ended.

Pure: the caller holds the lock, passes the time (monotonic seconds) and the random draw.
"""

from __future__ import annotations

import heapq
import itertools
from collections import deque
from collections.abc import Callable, Hashable, Iterator, Mapping
from dataclasses import dataclass, field, replace
from enum import StrEnum
from typing import Generic, TypeVar

from minds.domain.backoff import Backoff


class Work(StrEnum):
    """What the controller does, one kind of key each; the ``work`` label of its metrics."""

    CYCLE = "cycle"
    HEALTH = "health"
    MIND = "mind"
    REVIEW = "review"
    ADMISSION = "admission"
    CONCLUSION = "conclusion"
    TICK = "tick"
    DECISION = "decision"
    SHOW = "show"
    EXPIRY = "expiry"
    WITHDRAWAL = "withdrawal"
    GRANT = "grant"
    RETENTION = "retention"
    CHECKPOINT = "checkpoint"


@dataclass(frozen=True)
class TokenBucket:
    """The overall limit on retries: ``rate`` a second, bursts of ``burst``. A take with no
    token left reserves the next one and says how long until it is there."""

    rate: float = 10.0
    burst: float = 100.0
    tokens: float = 100.0
    at: float | None = None

    def __post_init__(self) -> None:
        if self.rate <= 0 or self.burst < 1:
            raise ValueError("a token bucket needs rate > 0 and burst >= 1")

    def take(self, now: float) -> tuple[TokenBucket, float]:
        elapsed = 0.0 if self.at is None else max(0.0, now - self.at)
        tokens = min(self.burst, self.tokens + elapsed * self.rate) - 1
        wait = 0.0 if tokens >= 0 else -tokens / self.rate
        return replace(self, tokens=tokens, at=now), wait


K = TypeVar("K", bound=Hashable)


@dataclass(frozen=True)
class QueueState:
    """What the queue holds now, by kind of work: ready keys, and of the running ones the
    seconds they have run in all and the longest."""

    depth: Mapping[str, int]
    unfinished: Mapping[str, float]
    longest: Mapping[str, float]


@dataclass
class WorkQueue(Generic[K]):
    backoff: Backoff = field(default_factory=Backoff)
    bucket: TokenBucket = field(default_factory=TokenBucket)
    #: Keys ready to run, in the order they became ready.
    _ready: deque[K] = field(default_factory=deque)
    #: Keys that are to run (ready, or running and to run again): client-go's dirty set.
    _dirty: set[K] = field(default_factory=set)
    #: Keys being run, with when each started.
    _running: dict[K, float] = field(default_factory=dict)
    #: When each ready key became ready: the queue latency of its run.
    _since: dict[K, float] = field(default_factory=dict)
    _due: dict[K, float] = field(default_factory=dict)
    #: (due, order, key); an entry whose due time is no longer ``_due[key]`` is stale.
    _heap: list[tuple[float, int, K]] = field(default_factory=list)
    _order: Iterator[int] = field(default_factory=itertools.count)
    _failures: dict[K, int] = field(default_factory=dict)

    # -- adding -------------------------------------------------------------------------------

    def add(self, key: K, now: float) -> bool:
        """True when this add made a difference (the key was not already to run)."""
        if key in self._dirty:
            return False
        self._dirty.add(key)
        if key not in self._running:
            self._ready.append(key)
            self._since[key] = now
        return True

    def add_after(self, key: K, delay: float, now: float) -> bool:
        if delay <= 0:
            return self.add(key, now)
        if key in self._dirty and key not in self._running:
            return False  # it runs before this would be due, and its run drops the request
        due = now + delay
        if self._due.get(key, due + 1) <= due:
            return False
        self._due[key] = due
        heapq.heappush(self._heap, (due, next(self._order), key))
        return True

    def ensure(self, key: K, now: float) -> bool:
        """Add the key unless the queue already holds it in any way (ready, running or due):
        a key with a schedule of its own keeps to it."""
        if self.holds(key):
            return False
        return self.add(key, now)

    def wake(self, key: K, now: float) -> bool:
        """Run a key the queue holds now; one it does not hold has no schedule to cut short."""
        if not self.holds(key):
            return False
        return self.add(key, now)

    def cancel(self, key: K) -> None:
        """Drop a key that waits; one that runs finishes its run (and runs no more for any add
        made before this)."""
        self._due.pop(key, None)
        if key in self._dirty:
            self._dirty.discard(key)
            if key not in self._running:
                self._ready.remove(key)
                self._since.pop(key, None)

    def promote(self, now: float) -> float | None:
        """Make every key whose time has come ready; when the next one is due (None: none)."""
        while self._heap:
            due, _, key = self._heap[0]
            if self._due.get(key) != due:
                heapq.heappop(self._heap)  # replaced by an earlier time, or cancelled
                continue
            if due > now:
                return due
            heapq.heappop(self._heap)
            del self._due[key]
            self.add(key, now)
        return None

    # -- running ------------------------------------------------------------------------------

    def get(self, now: float) -> tuple[K, float] | None:
        """The next ready key, now running, and how long it waited; None when none is ready."""
        if not self._ready:
            return None
        key = self._ready.popleft()
        self._dirty.discard(key)
        self._due.pop(key, None)
        self._running[key] = now
        return key, now - self._since.pop(key, now)

    def done(self, key: K, now: float) -> float:
        """The run ended; how long it took. A key added while it ran is ready again."""
        started = self._running.pop(key, now)
        if key in self._dirty:
            self._ready.append(key)
            self._since[key] = now
        return now - started

    def failed(self, key: K, now: float, draw: float) -> tuple[int, float]:
        """The run failed: try the key again after the longer of its own backoff and the
        bucket's wait. How many failures in a row, and the delay."""
        failures = self._failures[key] = self._failures.get(key, 0) + 1
        self.bucket, wait = self.bucket.take(now)
        delay = max(self.backoff.delay(failures, draw), wait)
        self.add_after(key, delay, now)
        return failures, delay

    def forget(self, key: K) -> None:
        """The run succeeded (or the work ended): the next failure starts the backoff over."""
        self._failures.pop(key, None)

    # -- reading ------------------------------------------------------------------------------

    def holds(self, key: K) -> bool:
        return key in self._dirty or key in self._running or key in self._due

    def failures(self, key: K) -> int:
        return self._failures.get(key, 0)

    def ready(self) -> list[K]:
        return list(self._ready)

    def running(self) -> dict[K, float]:
        """Each running key with when it started."""
        return dict(self._running)

    def state(self, now: float, kind: Callable[[K], str]) -> QueueState:
        depth: dict[str, int] = {}
        for key in self._ready:
            depth[kind(key)] = depth.get(kind(key), 0) + 1
        unfinished: dict[str, float] = {}
        longest: dict[str, float] = {}
        for key, started in self._running.items():
            ran, label = now - started, kind(key)
            unfinished[label] = unfinished.get(label, 0.0) + ran
            longest[label] = max(longest.get(label, 0.0), ran)
        return QueueState(depth, unfinished, longest)

    def waiting(self) -> int:
        """Keys due later (a schedule, a backoff)."""
        return len(self._due)

    def __len__(self) -> int:
        """The depth: keys ready to run."""
        return len(self._ready)

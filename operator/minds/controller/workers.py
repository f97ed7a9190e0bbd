"""The controller's worker model, defined once (the bench reads it from here).

Two pools, so that neither can starve the other:

- kopf's pool runs its sync handlers, which only add keys to the work queue (and the deletions
  and releases that stay kopf's own);
- the tick pool runs the work queue's handlers: plan ticks, mind cycles, admissions,
  decisions, grants. The queue runs at most ``tick_threads`` at once and a key that waits (for
  a person, a window, a lease, its next cycle) holds no thread at all, so every admitted plan
  makes progress at once as long as no more than ``tick_threads`` are working at the same
  instant.

asyncio's default pool would be min(32, cores + 4) threads: six on a two-core node, which is
how only six of twenty plans once ran at a time.
"""

from __future__ import annotations

import asyncio
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass


@dataclass(frozen=True)
class WorkerModel:
    handler_threads: int = 16
    tick_threads: int = 64
    #: Ledger connections kept open, and how many more a burst may open. A thread holds one
    #: for a transaction, or for a session lock (a cycle, a writing action) of which at most
    #: half the kept connections may be held at once, so far fewer than the threads suffice;
    #: too few, and a burst (a start with many plans to look at) waits out the pool's timeout
    #: instead. Those beyond the kept ones are closed when returned, so the kept ones cover a
    #: busy steady state (a round of twenty plans) and the overflow only bursts.
    ledger_connections: int = 24
    ledger_overflow: int = 16

    @property
    def api_connections(self) -> int:
        """Connections to the API server kept open: one for every thread that may call it at
        once, so that none pays a TLS handshake for a connection the pool then discards."""
        return self.handler_threads + self.tick_threads

    def install(self, loop: asyncio.AbstractEventLoop) -> ThreadPoolExecutor:
        """Make the tick pool the loop's default executor (what ``asyncio.to_thread`` uses)."""
        pool = ThreadPoolExecutor(max_workers=self.tick_threads, thread_name_prefix="minds-tick")
        loop.set_default_executor(pool)
        return pool


WORKERS = WorkerModel()

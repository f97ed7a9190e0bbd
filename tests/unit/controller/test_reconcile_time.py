"""Every reconcile is timed by the kind it is about: the work queue's runs by their job's kind,
and the few kopf handlers that do their work themselves by the kind they are registered for."""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Iterator
from datetime import timedelta
from types import SimpleNamespace
from typing import Any

import kopf
import pytest
from prometheus_client import CollectorRegistry

import minds.controller  # noqa: F401  (registers the handlers)
from minds.adapters.metrics import ProcessMetrics
from minds.controller.handlers import RECONCILES, reconciles
from minds.controller.queue import Job, Queue
from minds.domain.backoff import Backoff
from minds.domain.resources.kinds import CAPABILITY_GRANT, MIND, PLAN
from minds.domain.workqueue import Work, WorkQueue


def _resource_handlers() -> Iterator[Any]:
    """kopf's handlers of our kinds (not start-up and clean-up, which reconcile nothing)."""
    registry = kopf.get_default_registry()
    for registered in (registry._changing, registry._watching, registry._indexing):
        for handler in registered.get_all_handlers():
            if handler.fn.__module__.startswith("minds.controller"):
                yield handler


def test_a_kopf_handler_that_acts_itself_is_timed_and_one_that_only_adds_is_not() -> None:
    """The handlers that only add to the queue (or feed the watch's store) are coroutines that
    never await; those that act are functions kopf runs in a thread. Each of those is a
    reconcile, timed by its kind: a new one without the mark fails here."""
    acting = {}
    for handler in _resource_handlers():
        mark = getattr(handler.fn, RECONCILES, None)
        if inspect.iscoroutinefunction(handler.fn):
            assert mark is None, handler.id
        else:
            assert mark is not None, f"{handler.id} acts but its runs are not timed"
            acting[handler.id] = mark
    assert acting == {
        "mind_delete": MIND.kind,
        "grant_delete": CAPABILITY_GRANT.kind,
        "plan_release": PLAN.kind,
    }


def _memo(process: ProcessMetrics | None) -> Any:
    metrics = None if process is None else SimpleNamespace(process=process)
    return SimpleNamespace(wiring=SimpleNamespace(metrics=metrics))


def _count(registry: CollectorRegistry, kind: str) -> float | None:
    return registry.get_sample_value("minds_reconcile_duration_seconds_count", {"kind": kind})


def test_a_marked_handler_is_timed_when_it_fails_too() -> None:
    """kopf retries a handler that raised: each try was a reconcile that took its time."""
    registry = CollectorRegistry()
    process = ProcessMetrics(registry)
    calls: list[str] = []

    @reconciles(PLAN)
    def release(name: str, memo: Any, **_: Any) -> None:
        calls.append(name)
        if len(calls) == 1:
            raise kopf.TemporaryError("the ledger did not answer")

    with pytest.raises(kopf.TemporaryError):
        release(name="p", memo=_memo(process))
    release(name="p", memo=_memo(process))
    assert calls == ["p", "p"]
    assert _count(registry, "Plan") == 2
    assert _count(registry, "Mind") == 0
    assert release.__name__ == "release"  # kopf's id for it stays what it was
    release(name="p", memo=_memo(None))  # a controller without metrics runs it all the same


class Timed(ProcessMetrics):
    """The controller's metrics, on a registry of the test's own, saying when a run is told."""

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self.registry = CollectorRegistry()
        super().__init__(self.registry)
        self.runs = 0
        self.told = asyncio.Event()
        self._loop = loop

    def worked(self, work: str, kind: str, seconds: float) -> None:
        super().worked(work, kind, seconds)
        self.runs += 1
        self._loop.call_soon_threadsafe(self.told.set)


async def test_the_queue_times_each_run_by_its_jobs_kind_failed_runs_too() -> None:
    loop = asyncio.get_running_loop()
    metrics = Timed(loop)
    runs: list[str] = []

    def decide(namespace: str, name: str) -> timedelta | None:
        runs.append(name)
        if len(runs) == 1:
            raise RuntimeError("a blip")
        return None

    def untouched(namespace: str, name: str) -> timedelta | None:
        raise AssertionError("no other work runs")

    jobs = {w: Job(untouched, "Plan") for w in Work}
    jobs[Work.DECISION] = Job(decide, "Approval")
    fast = WorkQueue[Any](backoff=Backoff(base=0.01, cap=0.02, jitter=0.1))
    queue = Queue(loop, workers=1, telemetry=metrics, queue=fast)
    queue.start(jobs)
    queue.add(Work.DECISION, "ops", "a1")
    async with asyncio.timeout(5):
        while metrics.runs < 2:
            metrics.told.clear()
            await metrics.told.wait()
    await queue.close()
    assert runs == ["a1", "a1"]
    assert _count(metrics.registry, "Approval") == 2
    assert _count(metrics.registry, "Plan") == 0
    work = {"work": "decision"}
    assert (
        metrics.registry.get_sample_value("minds_workqueue_work_duration_seconds_count", work) == 2
    )

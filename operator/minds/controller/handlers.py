"""kopf handlers: thin by design. Each adds a key to the work queue and returns; what the key
starts is in ``minds.controller.work``, when it runs is the queue's (``minds.controller.queue``).

Business rules live in ``minds.domain``; writes happen in ``minds.engine`` through ports.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import time
from collections.abc import Callable
from typing import Any

import kopf

from minds.controller import work
from minds.controller.persistence import SpecEssenceStorage
from minds.controller.plan_ticks import PlanTicks
from minds.controller.queue import Queue
from minds.controller.settings import ControllerConfig
from minds.controller.wiring import Wiring, build, utc_now, watch_goals
from minds.controller.workers import WORKERS
from minds.domain.resources.common import API_GROUP, API_VERSION
from minds.domain.resources.kinds import APPROVAL, CAPABILITY_GRANT, MIND, PLAN, Kind
from minds.domain.resources.plan import RELEASE_ANNOTATION
from minds.domain.workqueue import Work

log = logging.getLogger(__name__)

PREFIX = API_GROUP
FINALIZER = f"{API_GROUP}/ledger"

#: Kinds whose handlers here are raw-event handlers only: kopf needs no diff base for them.
LEVEL_TRIGGERED = frozenset({PLAN.kind, APPROVAL.kind})


@kopf.on.startup()
async def configure(settings: kopf.OperatorSettings, memo: kopf.Memo, **_: Any) -> None:
    # kopf keeps its own bookkeeping in annotations under our prefix (only on the Minds and
    # grants, whose handlers are edge-triggered); status belongs to us alone.
    settings.persistence.progress_storage = kopf.AnnotationsProgressStorage(prefix=PREFIX)
    settings.persistence.diffbase_storage = SpecEssenceStorage(
        prefix=PREFIX, key="last-handled-configuration", level_triggered=LEVEL_TRIGGERED
    )
    settings.persistence.finalizer = FINALIZER
    # Our own Events tell the story; kopf's per-handler chatter would bury them.
    settings.posting.level = logging.WARNING
    settings.execution.max_workers = WORKERS.handler_threads
    WORKERS.install(asyncio.get_running_loop())
    config = ControllerConfig.from_env()
    wiring = await asyncio.to_thread(build, config)
    memo.wiring = wiring
    loop = asyncio.get_running_loop()
    # Every kind of work goes through one queue; the handlers below only add to it.
    telemetry = wiring.metrics.process if wiring.metrics is not None else None
    queue = Queue(loop, workers=WORKERS.tick_threads, telemetry=telemetry)
    ticks = PlanTicks(
        wiring.executor.tick, lambda ns, name: wiring.store.version(PLAN.plural, ns, name), utc_now
    )
    memo.queue = queue
    memo.plans = work.Plans(queue, ticks)
    # Before any watch starts: the Minds' feed tells it which goals to watch.
    memo.goals = watch_goals(wiring, config, queue)
    work.start(
        queue,
        work.jobs(wiring, queue, memo.plans, config.checkpoint_interval),
        checkpoints=wiring.checkpoints is not None,
    )


@kopf.on.cleanup()
async def close(memo: kopf.Memo, **_: Any) -> None:
    queue: Queue | None = getattr(memo, "queue", None)
    if queue is not None:
        await queue.close()
    wiring: Wiring | None = getattr(memo, "wiring", None)
    if wiring is not None:
        wiring.close()


#: The mark of a kopf handler that does its work itself: the kind its runs are reconciles of.
RECONCILES = "minds_reconciles"

SyncHandler = Callable[..., None]


def reconciles(kind: Kind) -> Callable[[SyncHandler], SyncHandler]:
    """A kopf handler that does its work itself, not through the queue: its runs are
    reconciles of ``kind`` and are timed as the queue's are, failures included."""

    def timed(handler: SyncHandler) -> SyncHandler:
        @functools.wraps(handler)  # kopf knows a handler by its name: it must stay the same
        def run(*args: Any, **kwargs: Any) -> None:
            started = time.monotonic()
            try:
                handler(*args, **kwargs)
            finally:
                metrics = kwargs["memo"].wiring.metrics
                if metrics is not None:
                    metrics.process.reconciled(kind.kind, time.monotonic() - started)

        setattr(run, RECONCILES, kind.kind)
        return run

    return timed


# kopf decides nothing about when work runs: each handler adds a key to the queue and returns.
# Those that only add are coroutines that never await: kopf runs a coroutine on its loop and a
# function in a thread of its pool, and a hop to a thread and back per event buys nothing here.
# A Mind's and a grant's handlers are edge-triggered (kopf keeps their diff base); Plans and
# Approvals are reconciled level-triggered from raw watch events: admission and decisions
# compare what is there with what the status says and write only when they differ, so kopf's
# bookkeeping (an annotation PATCH per change) would cost a write per event and buy nothing.
# The initial listing replays every object at start, which rebuilds every schedule.


@kopf.on.resume(API_GROUP, API_VERSION, MIND.plural)
@kopf.on.create(API_GROUP, API_VERSION, MIND.plural)
@kopf.on.update(API_GROUP, API_VERSION, MIND.plural, field="spec")
async def mind_reconcile(namespace: str | None, name: str, memo: kopf.Memo, **_: Any) -> None:
    assert namespace is not None, "Minds are namespaced"
    memo.queue.add(Work.MIND, namespace, name)


@kopf.on.delete(API_GROUP, API_VERSION, MIND.plural)
@reconciles(MIND)
def mind_delete(body: kopf.Body, memo: kopf.Memo, **_: Any) -> None:
    # kopf's finalizer holds the Mind until this succeeds, and kopf retries it: the ledger
    # records the end of a Mind whose body is gone once this returns.
    memo.wiring.minds.forget(dict(body))


def _present(type: str, body: kopf.Body, **_: Any) -> bool:
    return type != "DELETED" and not body.get("metadata", {}).get("deletionTimestamp")


@kopf.on.event(API_GROUP, API_VERSION, PLAN.plural, when=_present)
async def plan_admit(
    type: str | None, namespace: str | None, name: str, memo: kopf.Memo, **_: Any
) -> None:
    assert namespace is not None, "Plans are namespaced"
    queue: Queue = memo.queue
    queue.add(Work.ADMISSION, namespace, name)
    if type is None:  # the initial listing: a plan that finished while no controller ran
        queue.add(Work.CONCLUSION, namespace, name)


@kopf.on.event(API_GROUP, API_VERSION, APPROVAL.plural, when=_present)
async def approval_reconcile(namespace: str | None, name: str, memo: kopf.Memo, **_: Any) -> None:
    assert namespace is not None, "Approvals are namespaced"
    memo.queue.add(Work.DECISION, namespace, name)


def _deleting(type: str, body: kopf.Body, **_: Any) -> bool:
    return type == "DELETED" or bool(body.get("metadata", {}).get("deletionTimestamp"))


# No finalizer holds a Plan's deletion hostage to the controller being up. Missing the event (a
# controller down at the time) costs only promptness: at start every Approval is reconciled
# again, finds its owner gone and is withdrawn just the same.
@kopf.on.event(API_GROUP, API_VERSION, PLAN.plural, when=_deleting)
async def plan_deleted(namespace: str | None, body: kopf.Body, memo: kopf.Memo, **_: Any) -> None:
    """A deleted Plan asks nobody anything any more: its open Approvals are withdrawn as soon
    as the deletion starts (kopf's finalizer may hold the object a while longer)."""
    if namespace is None:
        return
    meta = body["metadata"]
    memo.plans.stop(namespace, meta["name"])
    memo.queue.add(Work.WITHDRAWAL, namespace, work.withdrawal_name(meta["name"], meta["uid"]))


@kopf.on.resume(API_GROUP, API_VERSION, CAPABILITY_GRANT.plural)
@kopf.on.create(API_GROUP, API_VERSION, CAPABILITY_GRANT.plural)
@kopf.on.update(API_GROUP, API_VERSION, CAPABILITY_GRANT.plural)
async def grant_reconcile(
    namespace: str | None, name: str, spec: kopf.Spec, memo: kopf.Memo, **_: Any
) -> None:
    assert namespace is not None, "CapabilityGrants are namespaced"
    queue: Queue = memo.queue
    queue.add(Work.GRANT, namespace, name)
    mind = str(spec.get("mind") or "")
    if mind and "/" not in mind:  # a grant for a mind of another namespace is checked there
        queue.add(Work.REVIEW, namespace, mind)


@kopf.on.delete(API_GROUP, API_VERSION, CAPABILITY_GRANT.plural)
@reconciles(CAPABILITY_GRANT)
def grant_delete(body: kopf.Body, memo: kopf.Memo, **_: Any) -> None:
    memo.wiring.grants.forget(dict(body))


# A raw-event handler, not a field handler: kopf keeps its own bookkeeping in annotations under
# our prefix and leaves every ``minds.dev/`` annotation out of the diffs it hands to field
# handlers, so a change of ``minds.dev/release`` would never be seen there.
@kopf.on.event(API_GROUP, API_VERSION, PLAN.plural, annotations={RELEASE_ANNOTATION: kopf.PRESENT})
@reconciles(PLAN)
def plan_release(
    type: str,
    namespace: str | None,
    name: str,
    annotations: kopf.Annotations,
    patch: kopf.Patch,
    memo: kopf.Memo,
    **_: Any,
) -> None:
    """``kubectl minds release PLAN STEP`` writes the annotation; the controller acts on it
    (the engine parses it whole and refuses what it cannot trust) and removes it."""
    value = annotations.get(RELEASE_ANNOTATION)
    if not value or namespace is None or type == "DELETED":
        return
    memo.wiring.executor.release(namespace, name, value)
    patch.metadata.annotations[RELEASE_ANNOTATION] = None
    memo.plans.wake(namespace, name)

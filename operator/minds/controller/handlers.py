"""kopf handlers: thin by design. Each reads what kopf hands it, calls the engine, and returns.

Business rules live in ``minds.domain``; writes happen in ``minds.engine`` through ports.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from datetime import UTC, datetime
from functools import partial
from typing import Any

import kopf

from minds.controller.goal_watch import cycle_key
from minds.controller.persistence import SpecEssenceStorage
from minds.controller.retrying import Retries
from minds.controller.scheduling import FINISHED, Finished, Scheduler
from minds.controller.settings import ControllerConfig
from minds.controller.watch import wake_asking_plan
from minds.controller.wiring import Wiring, build, watch_goals
from minds.controller.workers import WORKERS
from minds.domain.errors import Refused
from minds.domain.execution.machine import FINAL_PLAN, OPEN_PLAN
from minds.domain.metrics.catalogue import ADMISSION_WORK, DECISION_WORK, EXPIRY_WORK
from minds.domain.plan_retention import CONCLUSION, MIN_LOOK, next_look
from minds.domain.resources.common import API_GROUP, API_VERSION
from minds.domain.resources.kinds import APPROVAL, CAPABILITY_GRANT, MIND, PLAN
from minds.domain.resources.plan import RELEASE_ANNOTATION

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
    # Before any watch starts: the Minds' feed tells it which goals to watch.
    memo.goals = watch_goals(wiring, config, asyncio.get_running_loop())
    memo.scheduler = Scheduler(
        asyncio.get_running_loop(), partial(_plan_tick, wiring), PLAN_TICK_SECONDS
    )
    memo.retries = Retries(
        memo.scheduler, retried=wiring.metrics.process.retried if wiring.metrics else _not_counted
    )
    memo.retention = asyncio.create_task(_retain_plans(wiring))


def _not_counted(work: str) -> None:
    return None


@kopf.on.cleanup()
async def close(memo: kopf.Memo, **_: Any) -> None:
    scheduler: Scheduler | None = getattr(memo, "scheduler", None)
    if scheduler is not None:
        await scheduler.close()
    task: asyncio.Task[None] | None = getattr(memo, "retention", None)
    if task is not None:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
    wiring: Wiring | None = getattr(memo, "wiring", None)
    if wiring is not None:
        wiring.close()


async def _retain_plans(wiring: Wiring) -> None:
    """One timer for every finished plan: sleep until the earliest is due, then remove what is.
    The first look waits a minute: the store fills from the watch after start-up, and the plans
    that finished while the controller was down conclude first (a sweep only ever removes what
    it sees, so an early look would only remove less)."""
    delay = MIN_LOOK
    while True:
        await asyncio.sleep(delay.total_seconds())
        try:
            due = await asyncio.to_thread(
                lambda: wiring.retention.sweep(wiring.store.objects(PLAN))
            )
        except Exception:  # a failed sweep is logged and tried again at the next one
            log.exception("removing finished plans failed")
            due = None
        delay = next_look(due, datetime.now(UTC))


@kopf.on.resume(API_GROUP, API_VERSION, MIND.plural)
@kopf.on.create(API_GROUP, API_VERSION, MIND.plural)
@kopf.on.update(API_GROUP, API_VERSION, MIND.plural, field="spec")
def mind_reconcile(namespace: str | None, name: str, memo: kopf.Memo, **_: Any) -> None:
    assert namespace is not None, "Minds are namespaced"
    wiring: Wiring = memo.wiring
    wiring.minds.reconcile(namespace, name)
    # Policy or commitments may have changed: what its open plans still may do is reviewed.
    wiring.executor.review(namespace, name)
    # A spec change starts a cycle now rather than at the next interval, and its plans look
    # again at once (a Mind made active again, a budget raised) instead of at their next tick.
    wiring.wakeups.wake(namespace, cycle_key(name))
    for plan in wiring.store.in_namespace(PLAN.plural, namespace):
        if (plan.get("spec") or {}).get("mind") == name:
            memo.scheduler.wake(namespace, plan["metadata"]["name"])


@kopf.on.delete(API_GROUP, API_VERSION, MIND.plural)
def mind_delete(body: kopf.Body, memo: kopf.Memo, **_: Any) -> None:
    memo.wiring.minds.forget(dict(body))


def _present(type: str, body: kopf.Body, **_: Any) -> bool:
    return type != "DELETED" and not body.get("metadata", {}).get("deletionTimestamp")


# Plans and Approvals are reconciled level-triggered from raw watch events: admission and
# approval reconciling compare what is there (generations, phases) with what the status says and
# write only when they differ, so kopf's edge-triggering bookkeeping (an annotation PATCH per
# change) would cost a write per event and buy nothing. The initial listing replays every object
# at start, which also rebuilds the plans' tasks and the Approvals' expiry timers.
@kopf.on.event(API_GROUP, API_VERSION, PLAN.plural, when=_present)
def plan_admit(
    type: str | None,
    namespace: str | None,
    name: str,
    spec: kopf.Spec,
    memo: kopf.Memo,
    logger: kopf.Logger,
    **_: Any,
) -> None:
    assert namespace is not None, "Plans are namespaced"
    dream = spec.get("origin") == "dream"
    listing = type is None
    retries: Retries = memo.retries
    retries.run(
        ADMISSION_WORK,
        (namespace, name),
        partial(_admit, memo.wiring, memo.scheduler, namespace, name, dream, listing),
        logger,
    )


def _admit(
    wiring: Wiring,
    scheduler: Scheduler,
    namespace: str,
    name: str,
    dream: bool,
    listing: bool,
) -> None:
    phase = wiring.plans.admit(namespace, name).status.phase
    if not dream and phase in OPEN_PLAN:
        scheduler.run_plan(namespace, name)
    elif listing and phase in _FINISHED:
        # The initial listing: a plan that finished while no controller ran is concluded now;
        # one already concluded costs a ledger read, never an API request.
        wiring.executor.conclude_missed(namespace, name)


#: Plans that run get a task; a plan that finished with a conclusion the ledger keeps is
#: concluded at start if it never was; a task ends at a final phase (as the watch hands it).
_FINISHED = frozenset(phase for phase, event in CONCLUSION.items() if event is not None)
_DONE = frozenset(phase.value for phase in FINAL_PLAN)

#: The safety net, not the clock: a plan sleeps until the next-run time its status asks for
#: (a wait, a verify or monitor window, a lease) or until something wakes it (its spec, a write
#: by someone else, an Approval, its Mind). A tick reads only the watch store, so this costs no
#: API request.
PLAN_TICK_SECONDS = 600.0


def _plan_tick(wiring: Wiring, namespace: str, name: str) -> datetime | Finished | None:
    result = wiring.executor.tick(namespace, name)
    if result.phase is None or result.phase.value in _DONE:
        return FINISHED  # gone, unreadable, being deleted, or done: its task ends
    return result.wake_at


_UNDECIDED = ("Pending", "Approved", None)


# The Approval handlers validate and record a decision and wake the plan that asked; they never
# act. The plan's executor carries out what was approved, under its claim on the step. Expiry is
# a matter of the clock, not of an event: each open Approval has a timer at its `expiresAt`.
@kopf.on.event(API_GROUP, API_VERSION, APPROVAL.plural, when=_present)
def approval_reconcile(
    namespace: str | None, name: str, memo: kopf.Memo, logger: kopf.Logger, **_: Any
) -> None:
    assert namespace is not None, "Approvals are namespaced"
    retries: Retries = memo.retries
    retries.run(DECISION_WORK, (namespace, name), partial(_decide, memo, namespace, name), logger)


def _decide(memo: kopf.Memo, namespace: str, name: str) -> None:
    scheduler: Scheduler = memo.scheduler
    # The asking plan was woken by the watch already (see watch.ON_NEWS): it records and acts
    # on the decision itself, and whichever of the two records it first, the other finds it.
    after, show_at = memo.wiring.approvals.decided(namespace, name)
    if show_at is not None:
        scheduler.at("show", (namespace, name), show_at, partial(_show, memo, namespace, name))
    else:
        scheduler.cancel("show", (namespace, name))
    if (after.get("status") or {}).get("phase") not in _UNDECIDED:
        scheduler.cancel("expiry", (namespace, name))
        return
    try:
        expires = datetime.fromisoformat(str(after["spec"]["expiresAt"]).replace("Z", "+00:00"))
    except (KeyError, ValueError):
        return  # admission refuses such an Approval; there is nothing to time
    scheduler.at("expiry", (namespace, name), expires, partial(_expire, memo, namespace, name))


def _show(memo: kopf.Memo, namespace: str, name: str) -> None:
    """A fresh approval the executor has not acted on in time is shown Approved."""
    retries: Retries = memo.retries
    show = partial(memo.wiring.approvals.reconcile, namespace, name)
    retries.run(DECISION_WORK, (namespace, name), show, log)


def _expire(memo: kopf.Memo, namespace: str, name: str) -> None:
    retries: Retries = memo.retries
    retries.run(EXPIRY_WORK, (namespace, name), partial(_expire_now, memo, namespace, name), log)


def _expire_now(memo: kopf.Memo, namespace: str, name: str) -> None:
    after = memo.wiring.approvals.reconcile(namespace, name)
    if (after.get("status") or {}).get("phase") != "Pending":
        wake_asking_plan(memo, after)


def _deleting(type: str, body: kopf.Body, **_: Any) -> bool:
    return type == "DELETED" or bool(body.get("metadata", {}).get("deletionTimestamp"))


# A raw-event handler: no finalizer holds a Plan's deletion hostage to the controller being up.
# Missing the event (a controller down at the time) costs only promptness: at start every
# Approval is reconciled again, finds its owner gone and is withdrawn just the same.
@kopf.on.event(API_GROUP, API_VERSION, PLAN.plural, when=_deleting)
def plan_deleted(namespace: str | None, body: kopf.Body, memo: kopf.Memo, **_: Any) -> None:
    """A deleted Plan asks nobody anything any more: its open Approvals are withdrawn as soon
    as the deletion starts (kopf's finalizer may hold the object a while longer)."""
    if namespace is None:
        return
    memo.scheduler.stop_plan(namespace, body["metadata"]["name"])
    memo.wiring.approvals.abandon_plan(
        namespace, body["metadata"]["uid"], f"its plan {body['metadata']['name']} was deleted"
    )


@kopf.on.resume(API_GROUP, API_VERSION, CAPABILITY_GRANT.plural)
@kopf.on.create(API_GROUP, API_VERSION, CAPABILITY_GRANT.plural)
@kopf.on.update(API_GROUP, API_VERSION, CAPABILITY_GRANT.plural)
def grant_reconcile(
    namespace: str | None, name: str, spec: kopf.Spec, memo: kopf.Memo, **_: Any
) -> None:
    assert namespace is not None, "CapabilityGrants are namespaced"
    memo.wiring.grants.reconcile(namespace, name)
    mind = str(spec.get("mind") or "")
    if mind and "/" not in mind:  # a grant for a mind of another namespace is checked there
        memo.wiring.executor.review(namespace, mind)


def _live(status: kopf.Status, **_: Any) -> bool:
    return status.get("phase") in (None, "Pending", "Active")


@kopf.timer(API_GROUP, API_VERSION, CAPABILITY_GRANT.plural, interval=10, when=_live)
def grant_tick(namespace: str | None, name: str, memo: kopf.Memo, **_: Any) -> None:
    assert namespace is not None
    memo.wiring.grants.reconcile(namespace, name)


@kopf.on.delete(API_GROUP, API_VERSION, CAPABILITY_GRANT.plural)
def grant_delete(body: kopf.Body, memo: kopf.Memo, **_: Any) -> None:
    memo.wiring.grants.forget(dict(body))


# A raw-event handler, not a field handler: kopf keeps its own bookkeeping in annotations under
# our prefix and leaves every ``minds.dev/`` annotation out of the diffs it hands to field
# handlers, so a change of ``minds.dev/release`` would never be seen there.
@kopf.on.event(API_GROUP, API_VERSION, PLAN.plural, annotations={RELEASE_ANNOTATION: kopf.PRESENT})
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
    memo.scheduler.wake(namespace, name)


def _ready_mind(status: kopf.Status, **_: Any) -> bool:
    ready = [c for c in status.get("conditions") or [] if c.get("type") == "Ready"]
    return bool(ready) and ready[0].get("status") == "True"


@kopf.daemon(API_GROUP, API_VERSION, MIND.plural, when=_ready_mind, cancellation_timeout=10)
async def mind_daemon(
    namespace: str | None,
    name: str,
    spec: kopf.Spec,
    stopped: kopf.DaemonStopped,
    memo: kopf.Memo,
    logger: kopf.Logger,
    **_: Any,
) -> None:
    """The mind's cycle, every ``cycleIntervalSeconds`` (sooner after a spec change, or a
    change of a goal's subject: see ``goal_watch``)."""
    assert namespace is not None
    wiring: Wiring = memo.wiring
    key = cycle_key(name)
    wiring.wakeups.listen(namespace, key)
    try:
        while not stopped:
            try:
                await asyncio.to_thread(wiring.cycle.run, namespace, name)
            except Refused as exc:  # its namespace is being deleted, say: no trace needed
                log.warning("cycle of %s/%s: %s", namespace, name, exc)
            except Exception:  # a failed cycle is logged and tried again next interval
                # On the Mind's own logger, so it is counted as a reconcile error of a Mind.
                logger.exception("cycle of %s/%s failed", namespace, name)
            interval = float(spec.get("cycleIntervalSeconds") or 60)
            await wiring.wakeups.sleep(namespace, key, interval)
    finally:
        wiring.wakeups.forget(namespace, key)

"""kopf handlers: thin by design. Each reads what kopf hands it, calls the engine, and returns.

Business rules live in ``minds.domain``; writes happen in ``minds.engine`` through ports.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from datetime import UTC, datetime
from typing import Any

import kopf

from minds.controller.settings import ControllerConfig
from minds.controller.wiring import Wiring, build
from minds.domain.errors import NotFound
from minds.domain.resources.common import API_GROUP, API_VERSION
from minds.domain.resources.kinds import APPROVAL, CAPABILITY_GRANT, MIND, PLAN
from minds.domain.resources.plan import RELEASE_ANNOTATION

PREFIX = API_GROUP
FINALIZER = f"{API_GROUP}/ledger"


@kopf.on.startup()
def configure(settings: kopf.OperatorSettings, memo: kopf.Memo, **_: Any) -> None:
    # kopf keeps its bookkeeping in annotations under our prefix; status belongs to us alone.
    settings.persistence.progress_storage = kopf.AnnotationsProgressStorage(prefix=PREFIX)
    settings.persistence.diffbase_storage = kopf.AnnotationsDiffBaseStorage(
        prefix=PREFIX, key="last-handled-configuration"
    )
    settings.persistence.finalizer = FINALIZER
    # Our own Events tell the story; kopf's per-handler chatter would bury them.
    settings.posting.level = logging.WARNING
    # Handlers and ticks run in these threads; daemons sleep on the event loop, not here.
    settings.execution.max_workers = 16
    memo.wiring = build(ControllerConfig.from_env())


@kopf.on.cleanup()
def close(memo: kopf.Memo, **_: Any) -> None:
    wiring: Wiring | None = getattr(memo, "wiring", None)
    if wiring is not None:
        wiring.close()


@kopf.on.resume(API_GROUP, API_VERSION, MIND.plural)
@kopf.on.create(API_GROUP, API_VERSION, MIND.plural)
@kopf.on.update(API_GROUP, API_VERSION, MIND.plural, field="spec")
def mind_reconcile(namespace: str | None, name: str, memo: kopf.Memo, **_: Any) -> None:
    assert namespace is not None, "Minds are namespaced"
    memo.wiring.minds.reconcile(namespace, name)
    # A spec change starts a cycle now rather than at the next interval.
    memo.wiring.wakeups.wake(namespace, f"mind:{name}")


@kopf.on.delete(API_GROUP, API_VERSION, MIND.plural)
def mind_delete(body: kopf.Body, memo: kopf.Memo, **_: Any) -> None:
    memo.wiring.minds.forget(dict(body))


@kopf.on.resume(API_GROUP, API_VERSION, PLAN.plural)
@kopf.on.create(API_GROUP, API_VERSION, PLAN.plural)
@kopf.on.update(API_GROUP, API_VERSION, PLAN.plural, field="spec")
def plan_admit(namespace: str | None, name: str, memo: kopf.Memo, **_: Any) -> None:
    assert namespace is not None, "Plans are namespaced"
    memo.wiring.plans.admit(namespace, name)
    memo.wiring.wakeups.wake(namespace, name)


def _undecided(status: kopf.Status, **_: Any) -> bool:
    return status.get("phase") in (None, "Pending", "Approved")


# The Approval handlers validate and record a decision and wake the plan that asked; they never
# act. The plan's executor carries out what was approved, under its claim on the step.
@kopf.on.resume(API_GROUP, API_VERSION, APPROVAL.plural)
@kopf.on.create(API_GROUP, API_VERSION, APPROVAL.plural)
@kopf.on.update(API_GROUP, API_VERSION, APPROVAL.plural, field="spec")
def approval_reconcile(
    namespace: str | None, name: str, spec: kopf.Spec, memo: kopf.Memo, **_: Any
) -> None:
    assert namespace is not None, "Approvals are namespaced"
    with contextlib.suppress(NotFound):
        memo.wiring.approvals.reconcile(namespace, name)
    _wake_asking_plan(memo, namespace, spec)


def _wake_asking_plan(memo: kopf.Memo, namespace: str, spec: kopf.Spec) -> None:
    plan = (spec.get("origin") or {}).get("plan")
    if plan:
        memo.wiring.wakeups.wake(namespace, plan)


# Expiry is a matter of the clock, not of an event: look at open Approvals periodically.
@kopf.timer(API_GROUP, API_VERSION, APPROVAL.plural, interval=5, when=_undecided)
def approval_tick(
    namespace: str | None, name: str, spec: kopf.Spec, memo: kopf.Memo, **_: Any
) -> None:
    assert namespace is not None
    with contextlib.suppress(NotFound):
        after = memo.wiring.approvals.reconcile(namespace, name)
        if (after.get("status") or {}).get("phase") != "Pending":
            _wake_asking_plan(memo, namespace, spec)


def _deleting(type: str, body: kopf.Body, **_: Any) -> bool:
    return type == "DELETED" or bool(body.get("metadata", {}).get("deletionTimestamp"))


# A raw-event handler: no finalizer holds a Plan's deletion hostage to the controller being up.
# Missing the event (a controller down at the time) costs only promptness: the Approval timer
# finds the owner gone and withdraws it just the same.
@kopf.on.event(API_GROUP, API_VERSION, PLAN.plural, when=_deleting)
def plan_deleted(namespace: str | None, body: kopf.Body, memo: kopf.Memo, **_: Any) -> None:
    """A deleted Plan asks nobody anything any more: its open Approvals are withdrawn as soon
    as the deletion starts (kopf's finalizer may hold the object a while longer)."""
    if namespace is None:
        return
    memo.wiring.approvals.abandon_plan(
        namespace, body["metadata"]["uid"], f"its plan {body['metadata']['name']} was deleted"
    )


@kopf.on.resume(API_GROUP, API_VERSION, CAPABILITY_GRANT.plural)
@kopf.on.create(API_GROUP, API_VERSION, CAPABILITY_GRANT.plural)
@kopf.on.update(API_GROUP, API_VERSION, CAPABILITY_GRANT.plural)
def grant_reconcile(namespace: str | None, name: str, memo: kopf.Memo, **_: Any) -> None:
    assert namespace is not None, "CapabilityGrants are namespaced"
    memo.wiring.grants.reconcile(namespace, name)


def _live(status: kopf.Status, **_: Any) -> bool:
    return status.get("phase") in (None, "Pending", "Active")


@kopf.timer(API_GROUP, API_VERSION, CAPABILITY_GRANT.plural, interval=10, when=_live)
def grant_tick(namespace: str | None, name: str, memo: kopf.Memo, **_: Any) -> None:
    assert namespace is not None
    memo.wiring.grants.reconcile(namespace, name)


@kopf.on.delete(API_GROUP, API_VERSION, CAPABILITY_GRANT.plural)
def grant_delete(body: kopf.Body, memo: kopf.Memo, **_: Any) -> None:
    memo.wiring.grants.forget(dict(body))


#: The fallback: an open plan is looked at at least this often even if nothing wakes it.
PLAN_TICK_SECONDS = 15.0


def _open_plan(status: kopf.Status, spec: kopf.Spec, **_: Any) -> bool:
    return spec.get("origin") != "dream" and status.get("phase") in (
        "validated",
        "waiting",
        "executing",
        "awaiting_approval",
        "blocked",
        "completed",
        "failed",
        # A replan interrupted by a crash is finished by whoever looks next.
        "replanning",
    )


@kopf.daemon(API_GROUP, API_VERSION, PLAN.plural, when=_open_plan, cancellation_timeout=10)
async def plan_daemon(
    namespace: str | None, name: str, stopped: kopf.DaemonStopped, memo: kopf.Memo, **_: Any
) -> None:
    """Advance one plan: tick (in a worker thread), then sleep on the event loop until the
    status asks to look again or something wakes it. A tick re-reads everything, so stopping
    here at any point loses nothing."""
    assert namespace is not None
    wiring: Wiring = memo.wiring
    try:
        while not stopped:
            result = await asyncio.to_thread(wiring.executor.tick, namespace, name)
            if result.phase is not None and result.phase.value in (
                "completed",
                "failed",
                "superseded",
                "abandoned",
                "draft",
            ):
                return
            delay = PLAN_TICK_SECONDS
            if result.wake_at is not None:
                until = (result.wake_at - datetime.now(UTC)).total_seconds()
                delay = max(0.2, min(PLAN_TICK_SECONDS, until))
            await wiring.wakeups.sleep(namespace, name, delay)
    finally:
        wiring.wakeups.forget(namespace, name)


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
    and removes it."""
    value = annotations.get(RELEASE_ANNOTATION)
    if not value or namespace is None or type == "DELETED":
        return
    step, _sep, by = value.partition(":")
    memo.wiring.executor.release(namespace, name, step, by or "an operator")
    patch.metadata.annotations[RELEASE_ANNOTATION] = None
    memo.wiring.wakeups.wake(namespace, name)


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
    **_: Any,
) -> None:
    """The mind's cycle, every ``cycleIntervalSeconds`` (sooner after a spec change)."""
    assert namespace is not None
    wiring: Wiring = memo.wiring
    key = f"mind:{name}"
    try:
        while not stopped:
            try:
                await asyncio.to_thread(wiring.cycle.run, namespace, name)
            except Exception:  # a failed cycle is logged and tried again next interval
                logging.getLogger(__name__).exception("cycle of %s/%s failed", namespace, name)
            interval = float(spec.get("cycleIntervalSeconds") or 60)
            await wiring.wakeups.sleep(namespace, key, interval)
    finally:
        wiring.wakeups.forget(namespace, key)

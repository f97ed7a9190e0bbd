"""kopf handlers: thin by design. Each reads what kopf hands it, calls the engine, and returns.

Business rules live in ``minds.domain``; writes happen in ``minds.engine`` through ports.
"""

from __future__ import annotations

import logging
from typing import Any

import kopf

from minds.controller.settings import ControllerConfig
from minds.controller.wiring import Wiring, build
from minds.domain.resources.common import API_GROUP, API_VERSION
from minds.domain.resources.kinds import APPROVAL, CAPABILITY_GRANT, MIND, PLAN

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
    settings.execution.max_workers = 8
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


@kopf.on.delete(API_GROUP, API_VERSION, MIND.plural)
def mind_delete(body: kopf.Body, memo: kopf.Memo, **_: Any) -> None:
    memo.wiring.minds.forget(dict(body))


@kopf.on.resume(API_GROUP, API_VERSION, PLAN.plural)
@kopf.on.create(API_GROUP, API_VERSION, PLAN.plural)
@kopf.on.update(API_GROUP, API_VERSION, PLAN.plural, field="spec")
def plan_admit(namespace: str | None, name: str, memo: kopf.Memo, **_: Any) -> None:
    assert namespace is not None, "Plans are namespaced"
    memo.wiring.plans.admit(namespace, name)


def _undecided(status: kopf.Status, **_: Any) -> bool:
    return status.get("phase") in (None, "Pending", "Approved")


@kopf.on.resume(API_GROUP, API_VERSION, APPROVAL.plural)
@kopf.on.create(API_GROUP, API_VERSION, APPROVAL.plural)
@kopf.on.update(API_GROUP, API_VERSION, APPROVAL.plural, field="spec")
def approval_reconcile(namespace: str | None, name: str, memo: kopf.Memo, **_: Any) -> None:
    assert namespace is not None, "Approvals are namespaced"
    memo.wiring.approvals.reconcile(namespace, name)


# Expiry is a matter of the clock, not of an event: look at open Approvals periodically.
@kopf.timer(API_GROUP, API_VERSION, APPROVAL.plural, interval=5, when=_undecided)
def approval_tick(namespace: str | None, name: str, memo: kopf.Memo, **_: Any) -> None:
    assert namespace is not None
    memo.wiring.approvals.reconcile(namespace, name)


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

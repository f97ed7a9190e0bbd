"""Feed the controller's ``WatchStore`` from the watches kopf already runs.

The feed is a kopf index: kopf calls indexing functions for every object it lists or watches
*before* any other handler, daemon or timer of the operator runs, so nothing the engine asks at
start-up is answered from a half-filled store. Deletions do not reach indexing functions; a raw
event handler forgets the object instead.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import kopf

from minds.domain.mind_rules import spec_accepted
from minds.domain.resources.kinds import APPROVAL, CAPABILITY_GRANT, MIND, PLAN, Kind
from minds.domain.workqueue import Work

#: The kinds the engine reads from the watch; everything else is read from the API server.
WATCHED: tuple[Kind, ...] = (MIND, PLAN, APPROVAL, CAPABILITY_GRANT)


def accepted_mind(body: Mapping[str, Any]) -> bool:
    """A Mind whose spec was accepted has a cycle and a health check, Ready or not: a Mind not
    Ready for want of a ledger or a cycle is made Ready again by them."""
    return spec_accepted((body.get("status") or {}).get("conditions") or [])


def _wake_plan(memo: kopf.Memo, body: Mapping[str, Any]) -> None:
    meta = body.get("metadata") or {}
    memo.plans.wake(meta["namespace"], meta["name"])


def wake_asking_plan(memo: kopf.Memo, body: Mapping[str, Any]) -> None:
    # A person's decision reaches the plan that asked before any handler runs: its executor
    # checks the decision itself (from spec and the ledger) before acting.
    plan = ((body.get("spec") or {}).get("origin") or {}).get("plan")
    if plan:
        memo.plans.wake(body["metadata"]["namespace"], plan)


#: What a change made by someone else (another controller, a person) sets going at once. Our
#: own writes come back from the watch as no news and wake nobody.
ON_NEWS: dict[str, Callable[[kopf.Memo, Mapping[str, Any]], None]] = {
    PLAN.plural: _wake_plan,
    APPROVAL.plural: wake_asking_plan,
}


def _register(kind: Kind) -> None:
    # Both are coroutines that never await: kopf runs a coroutine in its loop, a function in
    # a thread of its pool, and a hop to a thread and back for every event of every kind
    # costs more than keeping a body or forgetting one (a dict under a lock held briefly).
    async def observe(body: kopf.Body, memo: kopf.Memo, **_: Any) -> None:
        # Nothing goes into kopf's index itself: the store is the read side, and the index
        # brings kopf's guarantee that it is filled before anything else runs.
        news = memo.wiring.store.observe(kind.plural, body)
        if kind is MIND:
            # Even when it is no news to the store: a body a 409 re-read put there first is
            # still news to the goals.
            memo.goals.mind(body)
            if accepted_mind(body):
                # An accepted Mind has a cycle and a health check; each keeps to its schedule.
                meta = body["metadata"]
                memo.queue.ensure(Work.CYCLE, meta["namespace"], meta["name"])
                memo.queue.ensure(Work.HEALTH, meta["namespace"], meta["name"])
        react = ON_NEWS.get(kind.plural)
        if news and react is not None:
            react(memo, body)

    async def follow(type: str | None, body: kopf.Body, memo: kopf.Memo, **_: Any) -> None:
        # kopf runs no handler before every indexed listing is in: the store is full now.
        memo.wiring.store.primed()
        if type == "DELETED":
            meta = body.get("metadata") or {}
            memo.wiring.store.forget(kind.plural, meta["namespace"], meta["name"], meta.get("uid"))
            if kind is MIND:
                memo.goals.mind_gone(meta["namespace"], meta["name"])

    kopf.index(kind.group, kind.version, kind.plural, id=f"watch_{kind.plural}")(observe)
    kopf.on.event(kind.group, kind.version, kind.plural, id=f"follow_{kind.plural}")(follow)


for _kind in WATCHED:
    _register(_kind)

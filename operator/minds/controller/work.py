"""What each kind of work does: the queue's dispatch table, one handler per ``Work``.

Each handler reads what it needs when it runs (from the watch's copy, the ledger), so running
it again is always safe; it returns when to look again, or None. kopf's handlers only add
keys (``minds.controller.handlers``); the watch wakes plans (``minds.controller.watch``); the
goals' watch wakes cycles (``minds.controller.goal_watch``).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta
from functools import partial
from typing import Protocol

from minds.controller.plan_ticks import PlanTicks
from minds.controller.queue import Job, Queue
from minds.controller.settings import DEFAULT_CHECKPOINT_INTERVAL
from minds.controller.watch import accepted_mind
from minds.controller.wiring import Wiring, utc_now
from minds.domain.errors import Refused
from minds.domain.execution.machine import OPEN_PLAN
from minds.domain.plan_retention import CONCLUSION, MIN_LOOK, next_look
from minds.domain.resources.grant import GrantPhase
from minds.domain.resources.kinds import APPROVAL, CAPABILITY_GRANT, MIND, PLAN
from minds.domain.workqueue import Work

log = logging.getLogger(__name__)

#: A grant is looked at this often while it can still change by time alone (kopf's timer
#: did the same).
GRANT_SECONDS = timedelta(seconds=10)
#: The pace at which work refused by the API server (403: its namespace is being deleted) is
#: looked at again, when it is not dropped: what the plan's own tick did before.
REFUSED_SECONDS = timedelta(seconds=10)
#: The one key of the retention sweep: it looks at every finished plan at once.
RETENTION_KEY = ("", "plans")
#: The one key of the ledger's checkpoint: every chain's head at once.
CHECKPOINT_KEY = ("", "ledger")

#: What the checkpoint's runs are counted as (it is about no resource).
LEDGER_KIND = "Ledger"

_LIVE_GRANTS = frozenset({GrantPhase.PENDING, GrantPhase.ACTIVE})
_UNDECIDED = ("Pending", "Approved", None)
#: Plans that finished with a conclusion the ledger keeps: concluded at start if they never
#: were.
_FINISHED = frozenset(phase for phase, event in CONCLUSION.items() if event is not None)


class Adds(Protocol):
    """What the handlers add to the queue."""

    def add(self, work: Work, namespace: str, name: str) -> bool: ...

    def add_after(self, work: Work, namespace: str, name: str, delay: timedelta) -> bool: ...

    def ensure(self, work: Work, namespace: str, name: str) -> bool: ...

    def wake(self, work: Work, namespace: str, name: str) -> bool: ...

    def holds(self, work: Work, namespace: str, name: str) -> bool: ...

    def cancel(self, work: Work, namespace: str, name: str) -> None: ...


def withdrawal_name(plan: str, uid: str) -> str:
    """A deleted Plan is known by its uid as well: its name may be a new Plan's already."""
    return f"{plan}/{uid}"


@dataclass
class Plans:
    """Wakes plans: the mark that makes the next look a full tick, then the key."""

    queue: Adds
    ticks: PlanTicks

    def wake(self, namespace: str, name: str) -> None:
        self.ticks.woken(namespace, name)
        # A wake that adds nothing may find the key about to run already (a first wake, the
        # plan's own schedule): its run must still be a full tick, so the mark stays. Only a
        # plan with no schedule at all would never read it.
        if not self.queue.wake(Work.TICK, namespace, name) and not self.queue.holds(
            Work.TICK, namespace, name
        ):
            self.ticks.unwoken(namespace, name)

    def run(self, namespace: str, name: str) -> None:
        """An open plan gets a schedule; one that has one keeps to it (our own writes coming
        back from the watch are no reason to look again)."""
        self.queue.ensure(Work.TICK, namespace, name)

    def stop(self, namespace: str, name: str) -> None:
        self.queue.cancel(Work.TICK, namespace, name)
        self.ticks.forget(namespace, name)


# -- the handlers ---------------------------------------------------------------------------


def _cycle(wiring: Wiring, namespace: str, name: str) -> timedelta | None:
    body = wiring.store.get(MIND.plural, namespace, name)
    if body is None or not accepted_mind(body):
        return None  # gone, or its spec refused: it gets a schedule again when it is accepted
    try:
        wiring.cycle.run(namespace, name)
    except Refused as exc:  # its namespace is being deleted, say: the next interval looks again
        log.warning("cycle of %s/%s: %s", namespace, name, exc)
    return timedelta(seconds=float((body.get("spec") or {}).get("cycleIntervalSeconds") or 60))


def _health(wiring: Wiring, queue: Adds, namespace: str, name: str) -> timedelta | None:
    checked = wiring.minds.check(namespace, name)
    if checked is None:
        return None  # gone, or its spec refused: it gets a schedule again when it is accepted
    if checked.recovered:
        # The cycle failed while the ledger was away and waits out its backoff: it is what
        # makes the Mind Ready again, so it runs now.
        queue.wake(Work.CYCLE, namespace, name)
    return checked.again


class Generations:
    """The generation of each Mind this controller last reconciled: a Mind seen for the first
    time (created, or at start) has its first cycle when it is Ready, so only a later spec
    change is a reason to wake its cycle and plans."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._seen: dict[tuple[str, str], object] = {}

    def changed(self, namespace: str, name: str, generation: object) -> bool:
        with self._lock:
            before = self._seen.get((namespace, name), generation)
            self._seen[(namespace, name)] = generation
        return before != generation


def _mind(
    wiring: Wiring, queue: Adds, plans: Plans, seen: Generations, namespace: str, name: str
) -> None:
    wiring.minds.reconcile(namespace, name)
    # Policy or commitments may have changed: what its open plans still may do is reviewed.
    wiring.executor.review(namespace, name)
    body = wiring.store.get(MIND.plural, namespace, name) or {}
    if not seen.changed(namespace, name, (body.get("metadata") or {}).get("generation")):
        return
    # A spec change starts a cycle now rather than at the next interval, and its plans look
    # again at once (a Mind made active again, a budget raised) instead of at their next tick.
    queue.wake(Work.CYCLE, namespace, name)
    for plan in wiring.store.in_namespace(PLAN.plural, namespace):
        if (plan.get("spec") or {}).get("mind") == name:
            plans.wake(namespace, plan["metadata"]["name"])


def _review(wiring: Wiring, namespace: str, mind: str) -> None:
    wiring.executor.review(namespace, mind)


def _admission(wiring: Wiring, plans: Plans, namespace: str, name: str) -> None:
    phase = wiring.plans.admit(namespace, name).status.phase
    body = wiring.store.get(PLAN.plural, namespace, name) or {}
    if (body.get("spec") or {}).get("origin") != "dream" and phase in OPEN_PLAN:
        plans.run(namespace, name)


def _conclusion(wiring: Wiring, namespace: str, name: str) -> None:
    """At start: a plan that finished while no controller ran is concluded now; one already
    concluded costs a ledger read, never an API request."""
    body = wiring.store.get(PLAN.plural, namespace, name)
    phase = ((body or {}).get("status") or {}).get("phase")
    if phase in {p.value for p in _FINISHED}:
        wiring.executor.conclude_missed(namespace, name)


def _decision(wiring: Wiring, queue: Adds, namespace: str, name: str) -> None:
    # The asking plan was woken by the watch already (see watch.ON_NEWS): it records and acts
    # on the decision itself, and whichever of the two records it first, the other finds it.
    after, show_at = wiring.approvals.decided(namespace, name)
    if show_at is not None:
        queue.add_after(Work.SHOW, namespace, name, _until(show_at))
    else:
        queue.cancel(Work.SHOW, namespace, name)
    if (after.get("status") or {}).get("phase") not in _UNDECIDED:
        queue.cancel(Work.EXPIRY, namespace, name)
        return
    try:
        expires = datetime.fromisoformat(str(after["spec"]["expiresAt"]).replace("Z", "+00:00"))
    except (KeyError, ValueError):
        return  # admission refuses such an Approval; there is nothing to time
    queue.add_after(Work.EXPIRY, namespace, name, _until(expires))


def _until(when: datetime) -> timedelta:
    return when - utc_now()


def _show(wiring: Wiring, namespace: str, name: str) -> None:
    """A fresh approval the executor has not acted on in time is shown Approved."""
    wiring.approvals.reconcile(namespace, name)


def _expiry(wiring: Wiring, plans: Plans, namespace: str, name: str) -> None:
    after = wiring.approvals.reconcile(namespace, name)
    if (after.get("status") or {}).get("phase") != "Pending":
        plan = ((after.get("spec") or {}).get("origin") or {}).get("plan")
        if plan:
            plans.wake(namespace, plan)


def _withdrawal(wiring: Wiring, namespace: str, name: str) -> None:
    """A deleted Plan asks nobody anything any more: its open Approvals are withdrawn."""
    plan, uid = name.split("/", 1)
    wiring.approvals.abandon_plan(namespace, uid, f"its plan {plan} was deleted")


def _grant(wiring: Wiring, namespace: str, name: str) -> timedelta | None:
    phase = wiring.grants.reconcile(namespace, name)
    return GRANT_SECONDS if phase in _LIVE_GRANTS else None


def _retention(wiring: Wiring, _namespace: str, _name: str) -> timedelta:
    """One sweep for every finished plan: the next when the earliest is due."""
    due = wiring.retention.sweep(wiring.store.objects(PLAN))
    return next_look(due, utc_now())


def _checkpoint(wiring: Wiring, every: timedelta, _namespace: str, _name: str) -> timedelta:
    """Keep the chains' heads outside the database if they moved; again after ``every``."""
    if wiring.checkpoints is not None:
        wiring.checkpoints.run()
    return every


def jobs(
    wiring: Wiring,
    queue: Adds,
    plans: Plans,
    checkpoint_every: timedelta = DEFAULT_CHECKPOINT_INTERVAL,
) -> dict[Work, Job]:
    """The dispatch table. ``refused`` keeps what each did before the queue: work a watch
    event started was dropped until the next event, a plan's tick looked again 10 s later."""
    return {
        Work.CYCLE: Job(partial(_cycle, wiring), MIND.kind, gone_ends=False),
        Work.HEALTH: Job(partial(_health, wiring, queue), MIND.kind, gone_ends=False),
        Work.MIND: Job(partial(_mind, wiring, queue, plans, Generations()), MIND.kind),
        Work.REVIEW: Job(partial(_review, wiring), MIND.kind),
        Work.ADMISSION: Job(partial(_admission, wiring, plans), PLAN.kind),
        Work.CONCLUSION: Job(partial(_conclusion, wiring), PLAN.kind),
        Work.TICK: Job(
            plans.ticks,
            PLAN.kind,
            refused=REFUSED_SECONDS,
            quick=plans.ticks.quick,
            gone_ends=False,
        ),
        Work.DECISION: Job(partial(_decision, wiring, queue), APPROVAL.kind),
        Work.SHOW: Job(partial(_show, wiring), APPROVAL.kind),
        Work.EXPIRY: Job(partial(_expiry, wiring, plans), APPROVAL.kind),
        Work.WITHDRAWAL: Job(partial(_withdrawal, wiring), APPROVAL.kind, gone_ends=False),
        Work.GRANT: Job(partial(_grant, wiring), CAPABILITY_GRANT.kind, refused=REFUSED_SECONDS),
        Work.RETENTION: Job(
            partial(_retention, wiring), PLAN.kind, refused=REFUSED_SECONDS, gone_ends=False
        ),
        Work.CHECKPOINT: Job(
            partial(_checkpoint, wiring, checkpoint_every), LEDGER_KIND, gone_ends=False
        ),
    }


def start(queue: Queue, table: Mapping[Work, Job], checkpoints: bool = False) -> None:
    """The retention sweep's first look waits a minute: the store fills from the watch after
    start-up, and the plans that finished while the controller was down conclude first (a
    sweep only ever removes what it sees, so an early look would only remove less). The
    ledger's first checkpoint is at once: it shows where the chains are as this controller
    starts appending."""
    queue.add_after(Work.RETENTION, *RETENTION_KEY, MIN_LOOK)
    if checkpoints:
        queue.add(Work.CHECKPOINT, *CHECKPOINT_KEY)
    queue.start(table)

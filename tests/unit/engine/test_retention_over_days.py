"""Retention run as the controller runs it, over simulated days: plans finish around the clock
under Minds with different TTLs, the remover sweeps and sleeps as ``next_look`` says, and we
count what it did. The real service over the fakes of its ports (proven equal to the API server
and Postgres by the contract suite), with a clock the test moves."""

from __future__ import annotations

import random
from dataclasses import dataclass
from datetime import datetime, timedelta

from minds.domain.ledger import EventRecord, SubjectRef
from minds.domain.plan_retention import MAX_LOOK, MIN_LOOK, next_look, plan_event_key
from minds.domain.resources.kinds import MIND, PLAN
from minds.engine.retention import REMOVED, PlanRetention
from tests.fakes.clock import FakeClock
from tests.fakes.ledger import FakeLedger
from tests.fakes.resources import FakeResources

NAMESPACE = "shop"
DAYS = 10
#: Mind -> planTtlSecondsAfterFinished (None: the default, a week).
TTLS: dict[str, int | None] = {"brisk": 60, "hourly": 3600, "daily": 86400, "weekly": None}


@dataclass
class Finished:
    name: str
    mind: str
    at: datetime
    concluded: bool
    uid: str = ""


def _stamp(at: datetime) -> str:
    return at.isoformat().replace("+00:00", "Z")


def _finish(resources: FakeResources, ledger: FakeLedger, plan: Finished) -> None:
    """A plan that ran from a minute before ``at`` to ``at``; its conclusion recorded or not."""
    created = resources.create(
        PLAN,
        NAMESPACE,
        {
            "metadata": {
                "name": plan.name,
                "creationTimestamp": _stamp(plan.at - timedelta(minutes=1)),
            },
            "spec": {"mind": plan.mind, "objective": "keep atlas-worker running"},
        },
    )
    plan.uid = created["metadata"]["uid"]
    step = {
        "key": "S1",
        "status": "completed",
        "startedAt": _stamp(plan.at - timedelta(seconds=30)),
        "finishedAt": _stamp(plan.at),
    }
    resources.replace_status(PLAN, created, {"phase": "completed", "steps": [step]})
    if plan.concluded:
        ledger.append_event(
            EventRecord(
                mind=plan.mind,
                namespace=NAMESPACE,
                type="plan_completed",
                subject=SubjectRef(kind="Plan", name=plan.name, uid=plan.uid),
                occurred_at=plan.at,
                idempotency_key=plan_event_key(plan.uid, "plan_completed"),
            )
        )


def _ttl(mind: str) -> timedelta:
    return timedelta(seconds=TTLS[mind] or 7 * 86400)


def test_over_ten_days_every_plan_leaves_once_never_early_at_most_an_hour_late() -> None:
    clock = FakeClock()
    start = clock.now
    resources, ledger = FakeResources(), FakeLedger()
    for mind, ttl in TTLS.items():
        spec = {} if ttl is None else {"planTtlSecondsAfterFinished": ttl}
        resources.create(MIND, NAMESPACE, {"metadata": {"name": mind}, "spec": spec})
    rng = random.Random(7)
    # About one plan every twenty minutes, day and night; one in ten never got its conclusion
    # recorded (its controller stopped first), which no removal may outrun.
    pending = sorted(
        (
            Finished(
                f"p{i:04d}",
                rng.choice(sorted(TTLS)),
                start + timedelta(seconds=rng.uniform(0, DAYS * 86400)),
                concluded=rng.random() > 0.1,
            )
            for i in range(DAYS * 72)
        ),
        key=lambda p: p.at,
    )
    plans = list(pending)
    retention = PlanRetention(resources=resources, ledger=ledger, clock=clock)
    sweeps = 0
    while clock.now < start + timedelta(days=DAYS + 8):
        while pending and pending[0].at <= clock.now:
            _finish(resources, ledger, pending.pop(0))
        due = retention.sweep(resources.list(PLAN, NAMESPACE))
        sweeps += 1
        clock.advance(next_look(due, clock.now))
    # When each plan left: the removal's ledger row is written at the clock's time, just
    # before the delete; the plans still listed are the ones that never left.
    removals = ledger.events(type=REMOVED)
    removed_at = {e.subject.name: e.occurred_at for e in removals}
    assert len(removed_at) == len(removals)  # each once
    left = {p["metadata"]["name"] for p in resources.list(PLAN, NAMESPACE)}
    assert not left & set(removed_at)

    for plan in plans:
        if not plan.concluded:
            assert plan.name not in removed_at, f"{plan.name} left before its conclusion"
            continue
        expired = plan.at + _ttl(plan.mind)
        gone = removed_at.get(plan.name)
        assert gone is not None, f"{plan.name} (due {expired}) was never removed"
        assert expired <= gone <= expired + MAX_LOOK, (plan.name, expired, gone)
    # The remover sleeps until the next plan is due: never more than one look per minute,
    # and at most one look per expiry besides the hourly ones.
    hours = (DAYS + 8) * 24
    assert sweeps <= (DAYS + 8) * 86400 / MIN_LOOK.total_seconds()
    assert sweeps <= len(removed_at) + hours + 1


def test_a_look_waits_for_the_next_expiry_within_a_minute_and_an_hour() -> None:
    now = FakeClock().now
    assert next_look(None, now) == MAX_LOOK
    assert next_look(now + timedelta(seconds=5), now) == MIN_LOOK
    assert next_look(now + timedelta(minutes=20), now) == timedelta(minutes=20)
    assert next_look(now + timedelta(days=3), now) == MAX_LOOK
    assert next_look(now - timedelta(minutes=1), now) == MIN_LOOK  # overdue: look again soon

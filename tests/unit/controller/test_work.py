"""What each kind of work does and when it asks to be looked at again
(minds.controller.work), over stand-ins for the engine's services and the queue."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from types import SimpleNamespace
from typing import Any

import pytest

from minds.adapters.kube.watched import WatchStore
from minds.controller import work
from minds.controller.plan_ticks import PlanTicks
from minds.domain.errors import Refused
from minds.domain.planning.model import PlanStatus
from minds.domain.resources.grant import GrantPhase
from minds.domain.resources.kinds import APPROVAL, CAPABILITY_GRANT, MIND, PLAN
from minds.domain.workqueue import Work
from tests.unit.controller.test_plan_ticks import Queue


def mind(
    ready: str, interval: int | None = 30, generation: int = 1, reason: str | None = None
) -> dict[str, Any]:
    spec = {"cycleIntervalSeconds": interval} if interval else {}
    reason = reason or ("Accepted" if ready == "True" else "InvalidSpec")
    return {
        "metadata": {"namespace": "shop", "name": "keeper", "generation": generation},
        "spec": spec,
        "status": {"conditions": [{"type": "Ready", "status": ready, "reason": reason}]},
    }


class Calls:
    """Records every call made to it, answering ``answer``."""

    def __init__(self, answer: Any = None, error: Exception | None = None) -> None:
        self.calls: list[tuple[Any, ...]] = []
        self.answer, self.error = answer, error

    def __call__(self, *args: Any) -> Any:
        self.calls.append(args)
        if self.error is not None:
            raise self.error
        return self.answer


def table(**services: Any) -> tuple[dict[Work, Any], Queue, WatchStore]:
    store = WatchStore(kind.plural for kind in (MIND, PLAN, APPROVAL, CAPABILITY_GRANT))
    wiring: Any = SimpleNamespace(store=store, **services)
    queue = Queue()
    ticks = PlanTicks(Calls(), lambda ns, name: None, lambda: datetime.now(UTC))  # type: ignore[arg-type]
    jobs = work.jobs(wiring, queue, work.Plans(queue, ticks))
    return {kind: job.run for kind, job in jobs.items()}, queue, store


def test_a_ready_mind_cycles_and_looks_again_after_its_interval() -> None:
    cycle = SimpleNamespace(run=Calls())
    run, _, store = table(cycle=cycle)
    store.observe(MIND.plural, mind("True"))
    assert run[Work.CYCLE]("shop", "keeper") == timedelta(seconds=30)
    assert cycle.run.calls == [("shop", "keeper")]


@pytest.mark.parametrize("reason", ["LedgerUnavailable", "CycleStalled"])
def test_a_mind_not_ready_for_its_ledger_or_its_cycle_still_cycles(reason: str) -> None:
    """The cycle that completes is what makes it Ready again."""
    cycle = SimpleNamespace(run=Calls())
    run, _, store = table(cycle=cycle)
    store.observe(MIND.plural, mind("False", reason=reason))
    assert run[Work.CYCLE]("shop", "keeper") == timedelta(seconds=30)
    assert cycle.run.calls == [("shop", "keeper")]


def test_the_health_check_looks_again_when_it_says_and_wakes_the_cycle_when_the_ledger_is_back(
) -> None:  # fmt: skip
    answer = SimpleNamespace(again=timedelta(seconds=5), recovered=False)
    minds = SimpleNamespace(check=Calls(answer))
    run, queue, _ = table(minds=minds)
    queue.held.add((Work.CYCLE, "shop", "keeper"))
    assert run[Work.HEALTH]("shop", "keeper") == timedelta(seconds=5)
    assert queue.added == []
    answer.recovered = True
    run[Work.HEALTH]("shop", "keeper")
    assert queue.added == [(Work.CYCLE, "shop", "keeper")]
    minds.check.answer = None  # gone, or its spec refused
    assert run[Work.HEALTH]("shop", "keeper") is None


@pytest.mark.parametrize("body", [None, mind("False")])
def test_a_mind_gone_or_not_accepted_has_no_cycle(body: dict[str, Any] | None) -> None:
    cycle = SimpleNamespace(run=Calls())
    run, _, store = table(cycle=cycle)
    if body is not None:
        store.observe(MIND.plural, body)
    assert run[Work.CYCLE]("shop", "keeper") is None
    assert cycle.run.calls == []


def test_a_refused_cycle_is_tried_at_its_next_interval() -> None:
    cycle = SimpleNamespace(run=Calls(error=Refused("its namespace is being deleted")))
    run, _, store = table(cycle=cycle)
    store.observe(MIND.plural, mind("True", interval=None))
    assert run[Work.CYCLE]("shop", "keeper") == timedelta(seconds=60)


def test_a_spec_change_wakes_the_cycle_and_the_plans_of_that_mind_only() -> None:
    minds = SimpleNamespace(reconcile=Calls())
    executor = SimpleNamespace(review=Calls())
    run, queue, store = table(minds=minds, executor=executor)
    store.observe(MIND.plural, mind("True"))
    for name, of in (("heal", "keeper"), ("other", "someone")):
        store.observe(
            PLAN.plural, {"metadata": {"namespace": "shop", "name": name}, "spec": {"mind": of}}
        )
        queue.held.add((Work.TICK, "shop", name))
    queue.held.add((Work.CYCLE, "shop", "keeper"))
    run[Work.MIND]("shop", "keeper")  # first seen: created, or at start
    assert queue.added == []
    store.observe(MIND.plural, mind("True", generation=2))
    run[Work.MIND]("shop", "keeper")
    assert queue.added == [(Work.CYCLE, "shop", "keeper"), (Work.TICK, "shop", "heal")]
    assert minds.reconcile.calls == executor.review.calls == [("shop", "keeper")] * 2


def test_a_decision_times_the_show_and_the_expiry() -> None:
    soon = datetime.now(UTC) + timedelta(minutes=5)
    pending = {"spec": {"expiresAt": soon.isoformat()}, "status": {"phase": "Pending"}}
    approvals = SimpleNamespace(decided=Calls((pending, soon)))
    run, queue, _ = table(approvals=approvals)
    run[Work.DECISION]("shop", "ask-1")
    assert queue.added == [(Work.SHOW, "shop", "ask-1"), (Work.EXPIRY, "shop", "ask-1")]
    # Decided: nothing to show later, nothing to expire.
    approvals.decided.answer = ({"spec": {}, "status": {"phase": "Denied"}}, None)
    run[Work.DECISION]("shop", "ask-1")
    assert queue.held == set()


def test_an_expired_approval_wakes_the_plan_that_asked() -> None:
    expired = {"spec": {"origin": {"plan": "heal"}}, "status": {"phase": "Expired"}}
    run, queue, _ = table(approvals=SimpleNamespace(reconcile=Calls(expired)))
    queue.held.add((Work.TICK, "shop", "heal"))
    run[Work.EXPIRY]("shop", "ask-1")
    assert queue.added == [(Work.TICK, "shop", "heal")]


def test_a_deleted_plan_is_withdrawn_by_its_uid() -> None:
    approvals = SimpleNamespace(abandon_plan=Calls(0))
    run, _, _ = table(approvals=approvals)
    run[Work.WITHDRAWAL]("shop", work.withdrawal_name("heal", "u-1"))
    assert approvals.abandon_plan.calls == [("shop", "u-1", "its plan heal was deleted")]


@pytest.mark.parametrize(
    ("phase", "again"),
    [
        (GrantPhase.PENDING, work.GRANT_SECONDS),
        (GrantPhase.ACTIVE, work.GRANT_SECONDS),
        (GrantPhase.EXPIRED, None),
        (GrantPhase.REVOKED, None),
    ],
)
def test_a_grant_is_looked_at_while_it_can_change_by_time_alone(
    phase: GrantPhase, again: timedelta | None
) -> None:
    run, _, _ = table(grants=SimpleNamespace(reconcile=Calls(phase)))
    assert run[Work.GRANT]("shop", "g") == again


def test_an_open_plan_gets_a_schedule_and_a_dream_does_not() -> None:
    admitted = SimpleNamespace(status=SimpleNamespace(phase=PlanStatus.VALIDATED))
    run, queue, store = table(plans=SimpleNamespace(admit=Calls(admitted)))
    for name, origin in (("heal", "operator"), ("dream", "dream")):
        body = {"metadata": {"namespace": "shop", "name": name}, "spec": {"origin": origin}}
        store.observe(PLAN.plural, body)
        run[Work.ADMISSION]("shop", name)
    assert queue.added == [(Work.TICK, "shop", "heal")]

"""The cycle's corrections over simulated days (fake clock, the fakes of the ledger): an entry
left in the Mind's spec acts once, however many cycles follow and whatever happens to the
intention afterwards."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest

from minds.domain.intentions import IntentionStatus
from minds.domain.resources.kinds import PLAN
from minds.domain.resources.mind import MindSpec
from minds.domain.volition.decisions import VolitionDecision
from minds.domain.volition.wants import Want, WantStatus
from minds.engine.correction_service import CorrectionService
from tests.fakes.clock import FakeClock
from tests.fakes.ledger import FakeLedger
from tests.fakes.resources import FakeResources
from tests.unit.volition.builders import MIND, NS, T0, a_want, an_intention

CYCLE = timedelta(minutes=1)
DAYS = 3
BODY = {"metadata": {"namespace": NS, "name": MIND, "uid": "mind-uid"}}


class Ledger(FakeLedger):
    """The fake ledger with the wants table the cycle keeps."""

    def __init__(self) -> None:
        super().__init__()
        self.wants_: dict[str, Want] = {}

    def wants(self, namespace: str, mind: str) -> list[dict[str, Any]]:
        return [w.to_k8s() for w in self.wants_.values()]


def spec(action: str) -> MindSpec:
    entry = {"intention": "int-1", "action": action, "by": "alice", "reason": "checked by hand"}
    return MindSpec.model_validate({"intentionCorrections": [entry]})


def run_days(
    ledger: Ledger,
    mind: MindSpec,
    *,
    every_hour: Any = None,
    resources: FakeResources | None = None,
) -> tuple[int, list[str]]:
    """Cycles every minute for DAYS; ``every_hour`` disturbs the intention. The decisions
    recorded, and the plans whose Approvals were withdrawn."""
    clock = FakeClock(T0)
    decisions: list[VolitionDecision] = []
    withdrawn: list[str] = []
    service = CorrectionService(ledger, resources or FakeResources())

    def record(ds: tuple[VolitionDecision, ...]) -> int:
        decisions.extend(ds)
        return len(ds)

    def store(want: Want) -> None:
        ledger.wants_[want.id] = want

    for minute in range(DAYS * 24 * 60):
        service.apply(
            BODY,
            mind,
            clock(),
            record=record,
            store_want=store,
            withdraw=lambda ns, plan, why: withdrawn.append(plan),
        )
        if every_hour is not None and minute % 60 == 59:
            every_hour(clock())
        clock.advance(CYCLE)
    return len(decisions), withdrawn


def test_a_resume_left_in_the_spec_resumes_once_over_days() -> None:
    ledger = Ledger()
    ledger.form_intention(an_intention())
    ledger.transition_intention("int-1", IntentionStatus.BLOCKED, "awaiting approval", T0)

    def blocked_again(now: Any) -> None:
        ledger.transition_intention("int-1", IntentionStatus.BLOCKED, f"blocked at {now}", now)

    decisions, _ = run_days(ledger, spec("resume"), every_hour=blocked_again)
    assert decisions == 1
    intention = ledger.intention("int-1")
    assert intention is not None
    assert intention.status is IntentionStatus.BLOCKED
    assert [e.type for e in ledger.rows].count("intention_corrected") == 1


def test_an_abandon_suppresses_the_want_and_withdraws_once() -> None:
    ledger = Ledger()
    ledger.form_intention(an_intention(plan="heal-r1"))
    want = a_want()
    ledger.wants_[want.id] = want
    decisions, withdrawn = run_days(ledger, spec("abandon"))
    # The reconsideration (named) and the want's suppression, once each.
    assert decisions == 2
    assert withdrawn == ["heal-r1"]
    assert ledger.wants_[want.id].status is WantStatus.SUPPRESSED
    intention = ledger.intention("int-1")
    assert intention is not None
    assert intention.status is IntentionStatus.ABANDONED
    assert intention.reason == "alice said abandon: checked by hand"


def test_a_correction_of_another_minds_intention_changes_nothing() -> None:
    ledger = Ledger()
    ledger.form_intention(an_intention(mind="another"))
    decisions, _ = run_days(ledger, spec("abandon"))
    assert decisions == 0
    intention = ledger.intention("int-1")
    assert intention is not None
    assert intention.status is IntentionStatus.ACTIVE
    [row] = [e for e in ledger.rows if e.type == "intention_corrected"]
    assert row.payload["applied"] is False


def test_a_cancelled_plan_suppresses_the_wants_of_its_intention_once() -> None:
    ledger = Ledger()
    ledger.form_intention(an_intention(plan="heal-r1"))
    want = a_want()
    ledger.wants_[want.id] = want
    resources = FakeResources()
    cancelled = {"by": "alice", "reason": "handled by hand"}
    resources.create(
        PLAN,
        NS,
        {
            "metadata": {"name": "heal-r1"},
            "spec": {"mind": MIND, "intention": "int-1", "cancellation": cancelled},
        },
    )
    # Until the executor has stopped the plan (and abandoned its intention), nothing changes.
    assert run_days(ledger, MindSpec(), resources=resources)[0] == 0
    assert ledger.wants_[want.id].status is WantStatus.ACTIVE

    ledger.transition_intention("int-1", IntentionStatus.ABANDONED, "cancelled by alice", T0)
    decisions, withdrawn = run_days(ledger, MindSpec(), resources=resources)
    assert decisions == 1
    assert withdrawn == []
    suppressed = ledger.wants_[want.id]
    assert suppressed.status is WantStatus.SUPPRESSED
    assert [e.type for e in ledger.rows].count("plan_cancel_applied") == 1


def test_a_failure_half_way_leaves_the_correction_to_the_next_cycle() -> None:
    """The decisions fail to record after the intention moved: nothing of the correction
    stays (the intention still blocked, no mark, nothing withdrawn), and the next cycle
    applies it whole, once."""
    ledger = Ledger()
    ledger.form_intention(an_intention(plan="heal-r1"))
    ledger.transition_intention("int-1", IntentionStatus.BLOCKED, "awaiting approval", T0)
    service = CorrectionService(ledger, FakeResources())
    recorded: list[VolitionDecision] = []
    withdrawn: list[str] = []

    def broken(ds: tuple[VolitionDecision, ...]) -> int:
        raise ConnectionError("the database went away")

    def record(ds: tuple[VolitionDecision, ...]) -> int:
        recorded.extend(ds)
        return len(ds)

    def apply(record: Any) -> int:
        return service.apply(
            BODY,
            spec("abandon"),
            T0,
            record=record,
            store_want=lambda want: ledger.wants_.__setitem__(want.id, want),
            withdraw=lambda ns, plan, why: withdrawn.append(plan),
        )

    with pytest.raises(ConnectionError):
        apply(broken)
    intention = ledger.intention("int-1")
    assert intention is not None
    assert intention.status is IntentionStatus.BLOCKED
    assert "intention_corrected" not in [e.type for e in ledger.rows]
    assert withdrawn == []

    assert apply(record) == len(recorded) > 0
    assert apply(record) == 0
    intention = ledger.intention("int-1")
    assert intention is not None
    assert intention.status is IntentionStatus.ABANDONED
    assert [e.type for e in ledger.rows].count("intention_corrected") == 1
    assert withdrawn == ["heal-r1"]

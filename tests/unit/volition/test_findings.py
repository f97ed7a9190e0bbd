"""Findings re-enter the cycle: a completed investigation's `summarise_findings` observation is
taken in once, with its source, by the rule and by the cycle over simulated days."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from minds.domain.intentions import IntentionKind, IntentionStatus
from minds.domain.ledger import EventRecord, SubjectRef, idempotency_key
from minds.domain.resources.kinds import MIND as MIND_KIND
from minds.domain.resources.kinds import PLAN
from minds.domain.volition.findings import FINDINGS, TAKEN_IN, take_in
from minds.domain.volition.findings import WINDOW as FINDINGS_WINDOW
from minds.engine.cycle import MindCycle
from tests.fakes.clock import FakeClock
from tests.fakes.ledger import FakeLedger
from tests.fakes.resources import FakeResources
from tests.unit.volition.builders import ATLAS, MIND, NS, T0, an_intention

ME = SubjectRef(kind=MIND_KIND.kind, name=MIND, uid="mind-uid")
FOUND = "read the logs: OOMKilled twice in an hour"


def recorded(step: str = "S3", plan: str = "look-r1", intention: str = "int-1") -> EventRecord:
    return EventRecord(
        mind=MIND,
        namespace=NS,
        type="observation_recorded",
        subject=SubjectRef(kind=PLAN.kind, name=plan, uid=f"{plan}-uid"),
        payload={"intention": intention, "step": step, "observation": FOUND},
        occurred_at=T0,
        idempotency_key=idempotency_key("plan", f"{plan}-uid", "observation_recorded", step),
    )


def investigation(status: IntentionStatus = IntentionStatus.FULFILLED, **kw: Any) -> Any:
    intention = an_intention(kind=IntentionKind.INVESTIGATION, objective="look at atlas", **kw)
    return intention.model_copy(update={"status": status})


def test_a_completed_investigations_findings_are_an_observation_with_their_source() -> None:
    got = take_in([recorded()], [], {"int-1": investigation()}, T0, mind=ME)
    [seen] = got.observations
    assert seen.subject == ATLAS
    assert seen.capability == FINDINGS
    assert seen.fields == {
        "plan": "look-r1",
        "step": "S3",
        "intention": "int-1",
        "findings": FOUND,
        "results": [],
    }
    [marker] = got.markers
    assert marker.type == TAKEN_IN
    assert marker.subject == ME
    assert marker.payload["plan"] == "look-r1"


def test_findings_already_taken_in_are_not_taken_in_again() -> None:
    first = take_in([recorded()], [], {"int-1": investigation()}, T0, mind=ME)
    again = take_in([recorded()], first.markers, {"int-1": investigation()}, T0, mind=ME)
    assert again.observations == ()
    assert again.markers == ()


def test_the_same_finding_twice_in_one_reading_is_taken_in_once() -> None:
    got = take_in([recorded(), recorded()], [], {"int-1": investigation()}, T0, mind=ME)
    assert len(got.observations) == 1


def test_findings_wait_until_the_investigation_completed() -> None:
    for status in (IntentionStatus.ACTIVE, IntentionStatus.BLOCKED, IntentionStatus.ABANDONED):
        got = take_in([recorded()], [], {"int-1": investigation(status)}, T0, mind=ME)
        assert got.observations == (), status


def test_only_investigations_bring_findings_back() -> None:
    action = an_intention().model_copy(update={"status": IntentionStatus.FULFILLED})
    assert take_in([recorded()], [], {"int-1": action}, T0, mind=ME).observations == ()
    assert take_in([recorded()], [], {}, T0, mind=ME).observations == ()


def test_an_investigation_without_subject_is_told_by_its_plan() -> None:
    got = take_in([recorded()], [], {"int-1": investigation(subject=None)}, T0, mind=ME)
    assert [o.subject for o in got.observations] == ["plan:look-r1"]


def cycle(ledger: FakeLedger) -> MindCycle:
    # Only the ledger is read when findings are taken in.
    none: Any = None
    return MindCycle(
        resources=FakeResources(),
        ledger=ledger,
        capabilities=none,
        planning=none,
        approvals=none,
        clock=FakeClock(T0),
        registry=none,
    )


def test_the_cycle_takes_findings_in_once_over_days() -> None:
    ledger = FakeLedger()
    ledger.form_intention(investigation(IntentionStatus.ACTIVE))
    ledger.append_event(recorded())
    mind = cycle(ledger)
    clock = FakeClock(T0)
    taken = []
    for minute in range(3 * 24 * 60):
        if minute == 30:  # the plan completes half an hour in
            ledger.transition_intention("int-1", IntentionStatus.FULFILLED, "completed", clock())
        taken += mind._take_in_findings(NS, MIND, "mind-uid", clock())
        clock.advance(timedelta(minutes=1))
    [seen] = taken
    assert seen.fields["plan"] == "look-r1"
    assert ledger.types().count(TAKEN_IN) == 1
    [marker] = [r for r in ledger.rows if r.type == TAKEN_IN]
    assert marker.occurred_at == T0 + timedelta(minutes=30)


def test_a_cycle_reads_findings_of_the_last_day_only() -> None:
    # The reading is bounded so a cycle's cost does not grow with the mind's history.
    ledger = FakeLedger()
    ledger.form_intention(investigation(IntentionStatus.ACTIVE))
    ledger.append_event(recorded())
    ledger.transition_intention("int-1", IntentionStatus.FULFILLED, "completed", T0)
    mind = cycle(ledger)
    late = T0 + FINDINGS_WINDOW + timedelta(minutes=1)
    assert mind._take_in_findings(NS, MIND, "mind-uid", late) == []
    assert [o.fields["plan"] for o in mind._take_in_findings(NS, MIND, "mind-uid", T0)] == [
        "look-r1"
    ]

"""A finding moves the mind: what an investigation's status reading said of its workload
strengthens or makes the want to restore it (unhealthy), or answers the question (healthy), and
sets the workload's belief. Each rule has a test that fails without it."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest

from minds.domain.planning.model import Observation as StepObservation
from minds.domain.planning.model import Plan, StepState, StepStatus
from minds.domain.volition.assumptions import observed_evidence, supporting_belief
from minds.domain.volition.decisions import DecisionKind
from minds.domain.volition.findings import finding_results
from minds.domain.volition.wants import (
    BASE_STRENGTH,
    FINDING_GAIN,
    FINDINGS,
    Observation,
    WantOrigin,
    WantStatus,
    decayed_strength,
    healthy,
    held,
    want_id,
)
from tests.unit.volition.builders import (
    ATLAS,
    MIND,
    NS,
    T0,
    a_prediction,
    a_spec,
    a_want,
    derive,
    seen,
)

STATUS_PARAMETERS = {"namespace": "ops", "kind": "Deployment", "name": "atlas-worker"}


def a_finding(
    state: str | None, at: Any = T0 - timedelta(minutes=1), subject: str = ATLAS
) -> Observation:
    """What the cycle takes in from a completed investigation whose D1 read the status."""
    results: list[Any] = [
        {
            "step": "D1",
            "capability": "service.status",
            "parameters": STATUS_PARAMETERS,
            "fields": None if state is None else {"state": state, "ready": state == "running"},
        },
        {"step": "D2", "capability": "logs.query", "parameters": {}, "fields": {"lineCount": 3}},
    ]
    return Observation(
        subject=subject,
        capability=FINDINGS,
        fields={
            "plan": "look-r1",
            "step": "S1",
            "intention": "int-look",
            "findings": f"read status: atlas-worker is {state}",
            "results": results,
        },
        at=at,
    )


def a_question(**overrides: Any) -> Any:
    """An active request want about atlas-worker: it asks to look, it proposes no means."""
    subject = "request:queue"
    return a_want(
        **{
            "id": want_id(NS, MIND, subject, WantOrigin.REQUEST),
            "subject": subject,
            "origin": WantOrigin.REQUEST,
            "goal": None,
            "means": None,
            "evidence_at": None,
            **overrides,
        }
    )


NO_GOALS = a_spec(goals=[])


# -- what a finding says ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("state", "says"),
    [
        ("running", True),
        ("degraded", False),
        ("absent", False),
        ("progressing", None),
        (None, None),
    ],
)
def test_a_finding_tells_health_by_its_status_reading(state: str | None, says: bool | None) -> None:
    assert healthy(a_finding(state)) is says


def test_a_status_reading_tells_health_by_its_state() -> None:
    assert healthy(seen("running", T0)) is True
    assert healthy(seen("degraded", T0)) is False
    assert healthy(Observation(subject=ATLAS, capability="logs.query", fields={}, at=T0)) is None


def test_a_findings_results_are_its_readings_without_free_text() -> None:
    plan = Plan.model_validate(
        {
            "intention": "int-look",
            "objective": "look at atlas-worker",
            "origin": "template",
            "strategy": "diagnose",
            "steps": [
                {
                    "key": "D1",
                    "title": "read status",
                    "kind": "capability",
                    "capability": "service.status",
                    "parameters": STATUS_PARAMETERS,
                },
                {
                    "key": "D2",
                    "title": "read logs",
                    "kind": "capability",
                    "capability": "logs.query",
                    "parameters": STATUS_PARAMETERS,
                },
                {
                    "key": "S1",
                    "title": "summarise",
                    "kind": "internal",
                    "dependsOn": ["D1", "D2"],
                    "internalAction": "summarise_findings",
                },
            ],
        }
    )
    states = {
        "D1": StepState(
            key="D1",
            status=StepStatus.COMPLETED,
            observation=StepObservation(summary="degraded", fields={"state": "degraded"}),
        ),
        "D2": StepState(
            key="D2",
            status=StepStatus.COMPLETED,
            observation=StepObservation(summary="3 lines", fields={"lineCount": 3, "text": "x"}),
        ),
    }
    results = finding_results(plan, plan.steps[2], states)
    assert results == [
        {
            "step": "D1",
            "capability": "service.status",
            "parameters": STATUS_PARAMETERS,
            "fields": {"state": "degraded"},
        },
        {
            "step": "D2",
            "capability": "logs.query",
            "parameters": STATUS_PARAMETERS,
            "fields": {"lineCount": 3},  # the log text stays in the summary, masked
        },
    ]


# -- unhealthy: the want to restore --------------------------------------------------------------


def test_an_unhealthy_finding_makes_the_want_to_restore_the_workload() -> None:
    derived = derive(NO_GOALS, [a_finding("degraded")])
    [want] = derived.wants
    assert want.origin is WantOrigin.FINDING
    assert (want.subject, want.target) == (ATLAS, ATLAS)
    assert want.means is not None
    assert want.means.capability == "service.restart"
    assert dict(want.means.parameters) == STATUS_PARAMETERS
    assert want.strength == pytest.approx(BASE_STRENGTH[WantOrigin.FINDING])
    assert [t.name for t in want.terms] == ["finding:look-r1/S1"]
    [decision] = derived.decisions
    assert (decision.kind, decision.outcome) == (DecisionKind.DERIVATION, "derived")
    assert decision.inputs["finding"] == {"plan": "look-r1", "step": "S1", "intention": "int-look"}


def test_an_unhealthy_finding_strengthens_an_active_want_to_restore_it() -> None:
    restoring = a_want(strength=0.5, evidence_at=T0 - timedelta(minutes=5))
    derived = derive(NO_GOALS, [a_finding("degraded")], existing=[restoring])
    [want] = derived.wants
    assert want.id == restoring.id  # no second want about the same workload
    assert want.strength == pytest.approx(decayed_strength(restoring, T0) + FINDING_GAIN)
    assert [t.name for t in want.terms] == ["decayed", "finding:look-r1/S1"]
    [decision] = derived.decisions
    assert (decision.kind, decision.outcome) == (DecisionKind.REINFORCEMENT, "reinforced")
    assert "look-r1/S1" in decision.reason


def test_an_unhealthy_finding_makes_no_restart_wanted_just_after_one_was_refuted() -> None:
    """A restart of atlas-worker was just seen not to heal it: the finding of the investigation
    that followed does not want it restarted again; the rejection is recorded, naming the
    refuted prediction."""
    refuted = a_prediction(resolved_at=T0 - timedelta(minutes=3))
    derived = derive(NO_GOALS, [a_finding("degraded")], predictions=[refuted])
    assert [w.origin for w in derived.wants if w.origin is WantOrigin.FINDING] == []
    [rejection] = [d for d in derived.decisions if d.inputs.get("refutedPrediction")]
    assert (rejection.kind, rejection.outcome) == (DecisionKind.DERIVATION, "rejected")
    assert refuted.id in rejection.reason
    # Once the refutation is older than the evidence horizon, a finding may want it again.
    stale = a_prediction(resolved_at=T0 - timedelta(hours=7))
    [want] = derive(NO_GOALS, [a_finding("degraded")], predictions=[stale]).wants
    assert want.origin is WantOrigin.FINDING


def test_a_finding_that_tells_nothing_moves_nothing() -> None:
    for state in (None, "progressing"):
        assert derive(NO_GOALS, [a_finding(state)], existing=[a_question()]).wants == ()


def test_a_finding_older_than_the_evidence_horizon_moves_nothing() -> None:
    old = a_finding("degraded", at=T0 - timedelta(hours=7))
    assert derive(NO_GOALS, [old]).wants == ()


def test_a_restore_want_from_a_finding_is_satisfied_when_the_workload_is_seen_running() -> None:
    first = derive(NO_GOALS, [a_finding("degraded")])
    [want] = first.wants
    later = derive(
        a_spec(), [seen("running", T0 + timedelta(minutes=1))], [want], T0 + timedelta(minutes=1)
    )
    [after] = later.wants
    assert after.status is WantStatus.SATISFIED


# -- healthy: the question is answered ----------------------------------------------------------


def test_a_healthy_finding_answers_the_wants_that_asked_to_look() -> None:
    question = a_question()
    derived = derive(NO_GOALS, [a_finding("running")], existing=[question])
    [want] = derived.wants
    assert want.status is WantStatus.SATISFIED
    assert held(want)  # held so: no new investigation while the question stands
    assert want.fulfilled_by == "int-look"
    [decision] = derived.decisions
    assert decision.kind is DecisionKind.SATISFACTION
    assert "answered by the finding of look-r1/S1" in decision.reason


def test_a_healthy_finding_makes_no_want_to_restore_and_leaves_acting_wants_alone() -> None:
    restoring = a_want()
    assert derive(NO_GOALS, [a_finding("running")], existing=[restoring]).wants == ()


def test_an_answered_question_stays_answered_while_it_stands() -> None:
    spec = a_spec(
        goals=[],
        requests=[{"name": "queue", "text": "is it ok?", "subject": {"name": "atlas-worker"}}],
    )
    answered = derive(spec, [a_finding("running")], existing=[a_question()])
    [want] = answered.wants
    for minute in range(1, 600, 7):
        later = derive(spec, [], existing=[want], now=T0 + timedelta(minutes=minute))
        assert all(w.status is not WantStatus.ACTIVE for w in later.wants)


# -- beliefs ---------------------------------------------------------------------------------


@pytest.mark.parametrize(("state", "supports"), [("degraded", True), ("running", False)])
def test_a_finding_sets_the_belief_about_its_workload(state: str, supports: bool) -> None:
    [evidence] = observed_evidence([a_finding(state)])
    assert evidence.statement == supporting_belief(ATLAS)
    assert evidence.supports is supports
    assert evidence.key == "finding:look-r1/S1"  # one piece of evidence per finding
    assert "look-r1/S1" in evidence.note


def test_evidence_is_weighed_in_the_order_it_was_seen() -> None:
    """A finding read before this cycle's own observation does not have the last word."""
    fresh = seen("running", T0)
    older = a_finding("degraded", at=T0 - timedelta(minutes=3))
    weighed = observed_evidence([fresh, older])
    assert [e.supports for e in weighed] == [True, False]

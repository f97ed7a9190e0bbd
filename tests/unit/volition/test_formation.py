"""Formation: the formed intention, each reason not to form, approval constraints, no plan."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from minds.domain.intentions import IntentionKind, IntentionRecord, IntentionStatus
from minds.domain.planning.views import Means
from minds.domain.resources.mind import MindSpec
from minds.domain.volition.conflicts import resolve_conflicts
from minds.domain.volition.decisions import DecisionKind, total
from minds.domain.volition.formation import (
    DEFAULT_CAPACITY,
    FORMATION_THRESHOLD,
    Formation,
    NotFormed,
    abandon_without_plan,
    form,
)
from minds.domain.volition.wants import SUPPRESSION_PERIOD, Want, WantStatus
from tests.unit.volition.builders import (
    ATLAS,
    MIND,
    NS,
    RESTART_ATLAS,
    T0,
    a_spec,
    a_want,
    an_avoid,
    an_intention,
)

R = NotFormed


def formed(
    want: Want | None = None,
    spec: MindSpec | None = None,
    existing: list[IntentionRecord] | None = None,
    capacity: int = DEFAULT_CAPACITY,
    **kwargs: Any,
) -> Formation:
    return form(want or a_want(), spec or a_spec(), existing or [], capacity, T0, **kwargs)


def test_a_strong_enough_want_forms_an_action_intention() -> None:
    result = formed()
    assert result.formed
    assert result.reason is None
    intention = result.intention
    assert intention is not None
    assert intention.kind is IntentionKind.ACTION
    assert intention.status is IntentionStatus.ACTIVE
    assert (intention.namespace, intention.mind, intention.subject) == (NS, MIND, ATLAS)
    assert intention.means_capability == "service.restart"
    assert intention.means_parameters == RESTART_ATLAS.parameters
    assert intention.objective.startswith("service.restart on ops/atlas-worker")
    assert not intention.requires_approval
    assert result.decision.kind is DecisionKind.FORMATION
    assert result.decision.outcome == "formed"
    assert result.decision.subjects == {"want": a_want().id, "intention": intention.id}


def test_every_term_is_recorded_and_makes_the_score() -> None:
    result = formed()
    names = [t.name for t in result.terms]
    assert names == [
        "strength",
        "urgency",
        "goal:atlas-running",
        "expected_utility",
        "risk:high",
        "cost",
        "privacy",
        "autonomy",
    ]
    # 0.6 + 0.15 + 0.16 + 0.16 - 0.5 x 0.6 - 0.1 x 10/300
    assert result.score == pytest.approx(total(result.terms)) == pytest.approx(0.76667, abs=1e-4)
    assert result.decision.scores["score"] == result.score
    promised = formed(a_want(commitment="restart-atlas"))
    assert "commitment:restart-atlas" in [t.name for t in promised.terms]
    assert promised.score == pytest.approx(result.score + 0.2)


def test_a_want_without_means_forms_an_investigation_of_its_subject() -> None:
    result = formed(a_want(means=None, subject="request:why", target=ATLAS, goal=None))
    assert result.intention is not None
    assert result.intention.kind is IntentionKind.INVESTIGATION
    assert result.intention.subject == ATLAS
    assert result.intention.means_capability is None
    assert result.intention.objective.startswith("investigate ops/atlas-worker")


def test_duplicate_when_a_live_intention_is_about_the_same_subject() -> None:
    result = formed(existing=[an_intention()])
    assert result.reason is R.DUPLICATE
    assert result.intention is None
    finished = an_intention(status=IntentionStatus.FULFILLED)
    assert formed(existing=[finished]).formed


def test_forbidden_by_an_absolute_refrain_commitment() -> None:
    spec = a_spec(
        commitments=[
            {"name": "no", "mode": "refrain", "capability": "service.restart", "target": "atlas-*"}
        ]
    )
    result = formed(spec=spec)
    assert result.reason is R.FORBIDDEN_BY_COMMITMENT
    assert "commitments[0] (no)" in result.explanation


def test_a_refrain_unless_approval_turns_the_action_into_a_request_for_approval() -> None:
    spec = a_spec(
        commitments=[
            {
                "name": "ask-first",
                "mode": "refrain",
                "capability": "service.restart",
                "target": "atlas-*",
                "unlessApproval": True,
            }
        ],
        capabilityPolicy=[{"capability": "service.restart", "decision": "allow"}],
    )
    result = formed(spec=spec)
    assert result.requires_approval
    assert "ask-first" in str(result.decision.inputs["approvalReasons"])
    # asking a person costs the mind its autonomy term
    assert result.terms[-1].value == 0.0


@pytest.mark.parametrize(
    ("spec", "want", "reason"),
    [
        ({"lockedCapabilities": ["service.restart"]}, {}, R.UNAVAILABLE),
        ({}, {"means": {"capability": "service.reboot", "parameters": {}}}, R.UNAVAILABLE),
        ({}, {"means": {"capability": "service.restart", "parameters": {}}}, R.UNAVAILABLE),
        (
            {"capabilityPolicy": [{"capability": "service.restart", "decision": "deny"}]},
            {},
            R.DENIED,
        ),
    ],
    ids=["locked", "unregistered", "bad-parameters", "policy-deny"],
)
def test_unavailable_and_denied_means(
    spec: dict[str, Any], want: dict[str, Any], reason: NotFormed
) -> None:
    assert formed(a_want(**want), a_spec(**spec)).reason is reason


def test_deferred_while_a_conflict_defers_the_want() -> None:
    want, avoid = a_want(strength=0.4), an_avoid(0.7)
    conflicts = resolve_conflicts([want, avoid], a_spec(), [], T0, namespace=NS, mind=MIND)
    assert formed(want, conflicts=conflicts.conflicts).reason is R.DEFERRED
    unrelated = a_want(id="want-other", strength=0.4)
    assert formed(unrelated, conflicts=conflicts.conflicts).reason is not R.DEFERRED


def test_a_narrow_win_in_a_conflict_requires_approval() -> None:
    want, avoid = a_want(strength=0.6), an_avoid(0.7)
    conflicts = resolve_conflicts([want, avoid], a_spec(), [], T0, namespace=NS, mind=MIND)
    result = formed(want, conflicts=conflicts.conflicts)
    assert result.formed
    assert result.requires_approval


def test_below_threshold() -> None:
    result = formed(a_want(strength=0.2))
    assert result.reason is R.BELOW_THRESHOLD
    assert result.score < FORMATION_THRESHOLD == 0.5


def test_risk_is_scaled_by_caution() -> None:
    want = a_want(strength=0.45)
    assert formed(want, a_spec(caution=0.0)).formed
    assert formed(want, a_spec(caution=1.0)).reason is R.BELOW_THRESHOLD


def test_privacy_and_autonomy_terms() -> None:
    logs = Means(capability="logs.query", parameters={"namespace": "ops", "name": "atlas-worker"})
    allowed = a_spec(capabilityPolicy=[{"capability": "logs.query", "decision": "allow"}])
    terms = {t.name: t.value for t in formed(a_want(means=logs), allowed).terms}
    assert terms["privacy"] == pytest.approx(-0.2)
    assert terms["autonomy"] == pytest.approx(0.1)


def test_capacity_counts_live_top_level_intentions() -> None:
    others = [an_intention(id=f"int-{i}", subject=f"ops/w{i}") for i in range(3)]
    assert formed(existing=others, capacity=3).reason is R.CAPACITY
    subordinate = [*others[:2], others[2].model_copy(update={"parent_id": "int-0"})]
    assert formed(existing=subordinate, capacity=3).formed
    assert formed(existing=others, capacity=4).formed


def test_exactly_one_reason_the_first_that_holds() -> None:
    spec = a_spec(lockedCapabilities=["service.restart"])
    weak = a_want(strength=0.0)
    assert formed(weak, spec, existing=[an_intention()]).reason is R.DUPLICATE
    assert formed(weak, spec).reason is R.UNAVAILABLE
    assert formed(weak).reason is R.BELOW_THRESHOLD


@pytest.mark.parametrize(
    "want",
    [an_avoid(), a_want(status=WantStatus.SUPPRESSED), a_want(status=WantStatus.SATISFIED)],
    ids=["avoid", "suppressed", "satisfied"],
)
def test_only_an_active_approach_want_can_form(want: Want) -> None:
    with pytest.raises(ValueError, match="active approach"):
        formed(want)


def test_a_fresh_intention_with_no_possible_plan_is_abandoned_and_its_want_suppressed() -> None:
    want = a_want()
    result = formed(want)
    assert result.intention is not None
    later = T0 + timedelta(seconds=5)
    abandoned = abandon_without_plan(result.intention, want, "no strategy applies", later)
    assert abandoned.intention.status is IntentionStatus.ABANDONED
    assert abandoned.intention.reason == "no possible plan: no strategy applies"
    assert abandoned.intention.version == result.intention.version + 1
    assert abandoned.want.status is WantStatus.SUPPRESSED
    assert abandoned.want.suppressed_until == later + SUPPRESSION_PERIOD
    decision, suppression = abandoned.decisions
    assert (decision.kind, decision.outcome) == (DecisionKind.FORMATION, "no_possible_plan")
    assert decision.subjects == {"want": want.id, "intention": result.intention.id}
    assert suppression.kind is DecisionKind.SUPPRESSION


def test_a_repeated_refusal_on_the_same_grounds_has_the_same_key() -> None:
    weak = a_want(strength=0.2)
    assert formed(weak).decision.key == formed(weak).decision.key
    reinforced = weak.model_copy(update={"last_reinforced_at": T0 + timedelta(minutes=1)})
    assert formed(reinforced).decision.key != formed(weak).decision.key


def test_a_duplicate_is_recorded_once_per_intention_however_often_the_want_is_reinforced() -> None:
    want = a_want()
    reinforced = want.model_copy(update={"last_reinforced_at": T0 + timedelta(minutes=1)})
    first = formed(want, existing=[an_intention()]).decision
    assert formed(reinforced, existing=[an_intention()]).decision.key == first.key
    assert formed(want, existing=[an_intention(id="int-2")]).decision.key != first.key


unit = st.floats(min_value=0, max_value=1)


@settings(max_examples=100, deadline=None)
@given(unit, unit, unit, st.integers(min_value=0, max_value=4), st.booleans())
def test_the_same_inputs_give_the_same_formation(
    strength: float, urgency: float, caution: float, live: int, ask: bool
) -> None:
    spec = a_spec(
        caution=caution,
        commitments=[
            {
                "name": "ask",
                "mode": "refrain",
                "capability": "service.restart",
                "unlessApproval": ask,
            }
        ],
    )
    want = a_want(strength=strength, urgency=urgency)
    existing = [an_intention(id=f"int-{i}", subject=f"ops/w{i}") for i in range(live)]
    assert formed(want, spec, existing) == formed(want, spec, existing)

"""Reconsideration: every trigger's verdict, the replan bound, and what fulfilling changes."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest

from minds.domain.intentions import IntentionStatus
from minds.domain.volition.decisions import DecisionKind
from minds.domain.volition.reconsideration import (
    MAX_REPLANS,
    ReconsiderationContext,
    Trigger,
    Verdict,
    reconsider,
    trigger_of_failure,
)
from minds.domain.volition.wants import WantOrigin, WantStatus
from tests.unit.volition.builders import T0, a_want, an_intention

T, V, S = Trigger, Verdict, IntentionStatus
ACTIVE, BLOCKED, SUSPENDED = S.ACTIVE, S.BLOCKED, S.SUSPENDED


def judge(trigger: Trigger, status: IntentionStatus = ACTIVE, **context: Any):  # type: ignore[no-untyped-def]
    intention = an_intention(status=status)
    return reconsider(intention, trigger, ReconsiderationContext(now=T0, **context))


@pytest.mark.parametrize(
    ("trigger", "status", "context", "verdict", "moves_to"),
    [
        (T.DENIED_APPROVAL, BLOCKED, {}, V.REPLAN, None),
        (T.EXPIRED_APPROVAL, BLOCKED, {}, V.BLOCK, BLOCKED),
        (T.CAPABILITY_CHANGE, ACTIVE, {"means_available": False}, V.BLOCK, BLOCKED),
        (T.CAPABILITY_CHANGE, BLOCKED, {"means_available": True}, V.RESUME, ACTIVE),
        (T.CAPABILITY_CHANGE, SUSPENDED, {"means_available": True}, V.RESUME, ACTIVE),
        (T.CAPABILITY_CHANGE, ACTIVE, {"means_available": True}, V.KEEP, None),
        # an outcome that may or may not have happened waits for a person, not for authority
        (T.CAPABILITY_CHANGE, S.OUTCOME_UNVERIFIED, {"means_available": True}, V.KEEP, None),
        (T.CAPABILITY_CHANGE, ACTIVE, {}, V.KEEP, None),
        (T.COMMITMENT_CHANGE, ACTIVE, {"forbidden": True}, V.ABANDON, S.ABANDONED),
        (T.COMMITMENT_CHANGE, ACTIVE, {"approval_required": True}, V.REQUIRE_APPROVAL, None),
        (T.COMMITMENT_CHANGE, ACTIVE, {}, V.KEEP, None),
        (T.FAILED_STEP, ACTIVE, {}, V.REPLAN, None),
        (T.FAILED_EXPECTATION, ACTIVE, {}, V.REPLAN, None),
        (T.WEAKENED_BELIEF, ACTIVE, {"belief_confidence": 0.4}, V.REPLAN, None),
        (T.WEAKENED_BELIEF, ACTIVE, {"belief_confidence": 0.6}, V.KEEP, None),
        # the assumption's own minimum, not the planner's 0.5, decides
        (
            T.WEAKENED_BELIEF,
            ACTIVE,
            {"belief_confidence": 0.67, "belief_min_confidence": 0.8},
            V.REPLAN,
            None,
        ),
        (
            T.WEAKENED_BELIEF,
            ACTIVE,
            {"belief_confidence": 0.4, "belief_min_confidence": 0.3},
            V.KEEP,
            None,
        ),
        (T.BUDGET, ACTIVE, {}, V.SUSPEND, SUSPENDED),
        (T.GOAL_COMPLETION, ACTIVE, {}, V.FULFIL, S.FULFILLED),
        (T.GOAL_COMPLETION, ACTIVE, {"escalated": True}, V.BLOCK, BLOCKED),
        (T.FAILED_STEP, ACTIVE, {"replannable": False}, V.ABANDON, S.ABANDONED),
        (T.DENIED_APPROVAL, BLOCKED, {"replannable": False}, V.ABANDON, S.ABANDONED),
        (T.WORLD_CHANGE, SUSPENDED, {"goal_met": True}, V.FULFIL, S.FULFILLED),
        (T.WORLD_CHANGE, ACTIVE, {"goal_met": False}, V.KEEP, None),
        (T.OPERATOR_CORRECTION, S.OUTCOME_UNVERIFIED, {}, V.RESUME, ACTIVE),
        (T.OPERATOR_CORRECTION, ACTIVE, {}, V.KEEP, None),  # resuming an active one keeps it
        (T.OPERATOR_CORRECTION, ACTIVE, {"operator_says": V.ABANDON}, V.ABANDON, S.ABANDONED),
        (T.OPERATOR_CORRECTION, ACTIVE, {"operator_says": V.SUSPEND}, V.SUSPEND, SUSPENDED),
    ],
)
def test_each_trigger_maps_to_its_verdict(
    trigger: Trigger,
    status: IntentionStatus,
    context: dict[str, Any],
    verdict: Verdict,
    moves_to: IntentionStatus | None,
) -> None:
    result = judge(trigger, status, **context)
    assert (result.verdict, result.status) == (verdict, moves_to)
    (decision,) = result.decisions
    assert decision.kind is DecisionKind.RECONSIDERATION
    assert decision.outcome == verdict.value
    assert decision.inputs["trigger"] == trigger.value


def test_a_weakened_belief_is_judged_by_the_assumptions_own_minimum() -> None:
    """A plan that asked for 0.8 is not carried by a belief at 0.67, though 0.67 is above the
    planner's 0.5; one that asked for 0.3 still is by 0.4."""
    raised = judge(T.WEAKENED_BELIEF, belief_confidence=0.67, belief_min_confidence=0.8)
    assert raised.verdict is V.REPLAN
    assert "below 0.8" in raised.reason
    kept = judge(T.WEAKENED_BELIEF, belief_confidence=0.4, belief_min_confidence=0.3)
    assert kept.verdict is V.KEEP


def test_every_trigger_is_covered() -> None:
    assert {t.value for t in Trigger} == {
        "denied_approval",
        "expired_approval",
        "capability_change",
        "commitment_change",
        "failed_step",
        "failed_expectation",
        "weakened_belief",
        "budget",
        "goal_completion",
        "world_change",
        "operator_correction",
    }


def test_a_new_approval_requirement_is_carried() -> None:
    assert judge(T.COMMITMENT_CHANGE, approval_required=True).requires_approval
    already = reconsider(
        an_intention(requires_approval=True),
        T.COMMITMENT_CHANGE,
        ReconsiderationContext(now=T0, approval_required=True),
    )
    assert already.verdict is V.KEEP


@pytest.mark.parametrize("trigger", [T.FAILED_STEP, T.FAILED_EXPECTATION, T.DENIED_APPROVAL])
def test_replanning_is_bounded(trigger: Trigger) -> None:
    context = ReconsiderationContext(now=T0)
    below = reconsider(an_intention(replans=MAX_REPLANS - 1), trigger, context)
    assert below.verdict is V.REPLAN
    at_limit = reconsider(an_intention(replans=MAX_REPLANS), trigger, context)
    assert (at_limit.verdict, at_limit.status) == (V.ABANDON, S.ABANDONED)
    assert "replan limit (3)" in at_limit.reason


@pytest.mark.parametrize("final", [S.FULFILLED, S.ABANDONED])
def test_a_final_intention_is_kept_as_it_is(final: IntentionStatus) -> None:
    for trigger in Trigger:
        assert judge(trigger, final, goal_met=True).verdict is V.KEEP


def test_fulfilling_satisfies_its_wants_and_fulfils_their_commitments() -> None:
    goal = a_want()
    promise = a_want(
        subject="commitment:restart-atlas",
        origin=WantOrigin.DUE_COMMITMENT,
        commitment="restart-atlas",
    )
    result = judge(T.GOAL_COMPLETION, wants=(goal, promise))
    assert {w.id: w.status for w in result.wants} == {
        goal.id: WantStatus.SATISFIED,
        promise.id: WantStatus.SATISFIED,
    }
    assert result.fulfilled_commitments == ("restart-atlas",)
    kinds = [d.kind for d in result.decisions]
    assert kinds == [DecisionKind.RECONSIDERATION] + [DecisionKind.SATISFACTION] * 2


def test_other_verdicts_neither_satisfy_wants_nor_fulfil_commitments() -> None:
    promise = a_want(commitment="restart-atlas")
    result = judge(T.FAILED_STEP, wants=(promise,))
    assert (result.wants, result.fulfilled_commitments) == ((), ())


def test_abandoning_suppresses_the_wants_so_they_do_not_form_again_at_once() -> None:
    result = reconsider(
        an_intention(replans=MAX_REPLANS),
        T.FAILED_EXPECTATION,
        ReconsiderationContext(now=T0, wants=(a_want(),)),
    )
    (want,) = result.wants
    assert want.status is WantStatus.SUPPRESSED
    assert result.decisions[1].kind is DecisionKind.SUPPRESSION


def test_the_same_inputs_give_the_same_reconsideration() -> None:
    context = ReconsiderationContext(now=T0, wants=(a_want(),), goal_met=True)
    first = reconsider(an_intention(), T.WORLD_CHANGE, context)
    assert reconsider(an_intention(), T.WORLD_CHANGE, context) == first


@pytest.mark.parametrize(
    ("reason", "trigger"),
    [
        ("approval denied: not during the sale", T.DENIED_APPROVAL),
        ("approval expired: nobody decided in time", T.EXPIRED_APPROVAL),
        # the seed: "expired or withdrawn fails it as an expired approval"
        ("approval withdrawn: alice is no longer an approver", T.EXPIRED_APPROVAL),
        ("expectation failed: the check did not hold within the window", T.FAILED_EXPECTATION),
        ("outcome unverified: not observable", T.FAILED_STEP),
        ("deployments.apps not found", T.FAILED_STEP),
        (None, T.FAILED_STEP),
    ],
)
def test_a_failed_steps_reason_names_its_trigger(reason: str | None, trigger: Trigger) -> None:
    assert trigger_of_failure(reason) is trigger


def test_a_basis_makes_the_same_answer_one_row_whenever_it_is_given() -> None:
    intention = an_intention(status=BLOCKED)
    later = T0 + timedelta(hours=1)
    keys = {
        reconsider(
            intention, T.EXPIRED_APPROVAL, ReconsiderationContext(now=at, basis="uid:expired")
        )
        .decisions[0]
        .key
        for at in (T0, later)
    }
    assert len(keys) == 1

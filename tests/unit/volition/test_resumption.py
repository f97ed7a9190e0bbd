"""The resumption rules, pure, with a clock passed in: one test per row of the table in
``minds.domain.volition.resumption``."""

from __future__ import annotations

from datetime import timedelta

import pytest

from minds.domain.intentions import IntentionStatus
from minds.domain.planning.model import Budget, Plan, PlanOrigin, PlanStatus
from minds.domain.volition.lapse import lapse
from minds.domain.volition.reconsideration import (
    MAX_REPLANS,
    ReconsiderationContext,
    Trigger,
    Verdict,
    reconsider,
)
from minds.domain.volition.resumption import (
    BY_RULE,
    RESUMED_BY,
    PlanFacts,
    Resumer,
    Waiting,
    budget_now,
    replanned_on_resume,
    resumed_unsaid,
    resumption,
    waiting_on,
)
from tests.unit.volition.builders import T0, an_intention

SUSPENDED = an_intention(status=IntentionStatus.SUSPENDED, reason="budget exhausted")
BLOCKED = an_intention(status=IntentionStatus.BLOCKED, reason="the means are no longer available")


def resume(waiting: Waiting | None, *, available: bool = True, **fields: object) -> object:
    intention = (SUSPENDED if waiting is Waiting.BUDGET else BLOCKED).model_copy(update=fields)
    return resumption(
        intention, waiting, available=available, now=T0, basis="plan-uid:resume", cause="back"
    )


def test_every_waiting_reason_says_what_resumes_it() -> None:
    assert set(RESUMED_BY) == set(Waiting)
    # The mind resumes by itself only what a rule can see come back.
    assert {w for w, r in RESUMED_BY.items() if r in (Resumer.BUDGET_RAISED,
        Resumer.MEANS_AVAILABLE)} == set(BY_RULE)  # fmt: skip


@pytest.mark.parametrize(
    ("answered", "waiting"),
    [
        (Trigger.BUDGET, Waiting.BUDGET),
        (Trigger.CAPABILITY_CHANGE, Waiting.MEANS),
        (Trigger.EXPIRED_APPROVAL, Waiting.EXPIRED_APPROVAL),
        (Trigger.GOAL_COMPLETION, Waiting.ESCALATED),
        (Trigger.FAILED_STEP, None),
        (None, None),
    ],
)
def test_the_trigger_that_made_it_wait_is_its_waiting_reason(
    answered: Trigger | None, waiting: Waiting | None
) -> None:
    assert waiting_on(BLOCKED, answered) is waiting


def test_an_intention_that_does_not_wait_has_no_waiting_reason() -> None:
    active = an_intention(status=IntentionStatus.ACTIVE)
    child = BLOCKED.model_copy(update={"parent_id": "int-parent"})
    assert waiting_on(active, Trigger.BUDGET) is None
    assert waiting_on(child, Trigger.BUDGET) is None


def test_a_budget_that_allows_again_resumes_with_a_recorded_reason() -> None:
    judged = resume(Waiting.BUDGET)
    assert judged is not None
    assert judged.status is IntentionStatus.ACTIVE
    [decision] = judged.decisions
    assert decision.outcome == "resume"
    assert decision.inputs["trigger"] == "budget"
    assert decision.inputs["waiting"] == "budget"
    assert decision.reason == "the budget allows the plan again: back"
    assert decision.basis == "plan-uid:resume"


def test_the_means_available_again_resume() -> None:
    judged = resume(Waiting.MEANS)
    assert judged is not None
    assert judged.verdict.value == "resume"
    assert judged.decisions[0].inputs["trigger"] == "capability_change"


@pytest.mark.parametrize("waiting", [Waiting.BUDGET, Waiting.MEANS])
def test_nothing_resumes_while_what_it_waits_for_is_still_away(waiting: Waiting) -> None:
    assert resume(waiting, available=False) is None


@pytest.mark.parametrize("waiting", [w for w in Waiting if w not in BY_RULE])
def test_no_rule_resumes_what_waits_for_a_person_or_nothing(waiting: Waiting) -> None:
    # An expired approval: nobody is asked again. An escalation, a fork's inheritance: a person.
    # A dream: never acted on. An unverified outcome: a person releases the step.
    assert resume(waiting) is None


def test_the_means_do_not_resume_an_intention_past_the_replan_limit() -> None:
    # A resumption by the means is a new revision: it counts, so it cannot loop.
    assert resume(Waiting.MEANS, replans=MAX_REPLANS) is None
    assert resume(Waiting.MEANS, replans=MAX_REPLANS - 1) is not None


def test_a_final_intention_never_resumes() -> None:
    assert resume(Waiting.BUDGET, status=IntentionStatus.ABANDONED) is None


def test_a_plan_the_mind_wrote_follows_the_minds_budget() -> None:
    written = Plan.model_validate(
        {
            "objective": "x",
            "origin": "template",
            "strategy": "direct",
            "budget": {"checks": 3},
            "steps": [{"key": "W", "title": "w", "kind": "wait", "waitSeconds": 1}],
        }
    )
    raised = Budget(checks=10)
    assert budget_now(written, raised).checks == 10
    by_hand = written.model_copy(update={"origin": PlanOrigin.OPERATOR})
    assert budget_now(by_hand, raised).checks == 3  # its own cap, within the Mind's
    assert budget_now(by_hand, Budget(checks=2)).checks == 2


@pytest.mark.parametrize("status", [IntentionStatus.BLOCKED, IntentionStatus.SUSPENDED])
def test_what_is_not_resumed_lapses_after_a_day(status: IntentionStatus) -> None:
    waiting = an_intention(status=status, updated_at=T0)
    assert lapse(waiting, T0 + timedelta(hours=23)) is None
    assert lapse(waiting, T0 + timedelta(hours=24)) is not None


def test_an_unverified_outcome_never_lapses() -> None:
    unverified = an_intention(status=IntentionStatus.OUTCOME_UNVERIFIED, updated_at=T0)
    assert lapse(unverified, T0 + timedelta(days=30)) is None


ACTIVE = an_intention(status=IntentionStatus.ACTIVE, plan="heal-r1")


@pytest.mark.parametrize(
    ("plan", "planned"),
    [
        (None, True),  # a fork's inheritance: no plan at all
        (PlanFacts(phase=PlanStatus.DRAFT, dream=True), True),  # a dream's never runs
        (PlanFacts(phase=PlanStatus.FAILED, ended_waiting=True), True),  # expired, say
        (PlanFacts(phase=PlanStatus.COMPLETED, ended_waiting=True), True),  # an escalation
        (PlanFacts(phase=PlanStatus.FAILED), False),  # the executor's answer is to come
        (PlanFacts(phase=PlanStatus.BLOCKED, ended_waiting=True), False),  # still open
        (PlanFacts(phase=PlanStatus.EXECUTING), False),
    ],
)
def test_a_resumed_intention_without_a_plan_that_can_run_is_planned(
    plan: PlanFacts | None, planned: bool
) -> None:
    assert replanned_on_resume(ACTIVE, plan) is planned


@pytest.mark.parametrize("status", [IntentionStatus.SUSPENDED, IntentionStatus.BLOCKED])
def test_a_waiting_intention_is_not_planned_until_a_person_resumes_it(
    status: IntentionStatus,
) -> None:
    assert replanned_on_resume(ACTIVE.model_copy(update={"status": status}), None) is False
    child = ACTIVE.model_copy(update={"parent_id": "int-parent"})
    assert replanned_on_resume(child, None) is False


def test_an_active_intention_is_not_resumed_and_a_budget_still_suspends_it() -> None:
    active = SUSPENDED.model_copy(update={"status": IntentionStatus.ACTIVE})
    assert resume(Waiting.BUDGET, status=IntentionStatus.ACTIVE) is None
    judged = reconsider(active, Trigger.BUDGET, ReconsiderationContext(now=T0))
    assert judged.verdict is Verdict.SUSPEND


@pytest.mark.parametrize(
    ("intention", "plan", "unsaid"),
    [
        (SUSPENDED, PlanFacts(phase=PlanStatus.EXECUTING), True),  # the crash window
        (SUSPENDED, PlanFacts(phase=PlanStatus.WAITING), True),  # it ran on since
        (SUSPENDED, PlanFacts(phase=PlanStatus.AWAITING_APPROVAL), True),
        (SUSPENDED, PlanFacts(phase=PlanStatus.BLOCKED), False),  # still waits on its budget
        (SUSPENDED, PlanFacts(phase=PlanStatus.COMPLETED), False),  # ended: its answer follows
        (SUSPENDED, PlanFacts(phase=PlanStatus.VALIDATED, dream=True), False),  # never runs
        (BLOCKED, PlanFacts(phase=PlanStatus.EXECUTING), False),  # a person's to resume
        (
            SUSPENDED.model_copy(update={"parent_id": "int-p"}),
            PlanFacts(phase=PlanStatus.EXECUTING),
            False,
        ),
    ],
)
def test_a_resumption_that_reached_only_the_plan_is_finished_on_the_intention(
    intention: object, plan: PlanFacts, unsaid: bool
) -> None:
    assert resumed_unsaid(intention, plan) is unsaid  # type: ignore[arg-type]

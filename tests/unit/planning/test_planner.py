"""The planner: preference order, non-reuse, the model step, alternatives and determinism."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from minds.domain.planning.model import (
    IssueCode,
    PlanOrigin,
    PlanStatus,
    StepKind,
    Strategy,
)
from minds.domain.planning.planner import (
    ModelProposal,
    PlanningOutcome,
    PlanningResult,
    make_plan,
)
from minds.domain.planning.scoring import score
from minds.domain.planning.views import (
    FailedAttempt,
    IntentionKind,
    IntentionView,
    Means,
    MindView,
    Workload,
)
from minds.domain.resources.mind import PlanBudget

from .builders import (
    NOW,
    WORKLOAD,
    failed,
    grant,
    investigation,
    mind,
    restart,
    restart_intention,
    rule,
    status,
    verify,
)


def plan_for(intention: IntentionView, m: MindView | None = None, **kw: Any) -> PlanningResult:
    return make_plan(intention, m or mind(), now=NOW, **kw)


def by_strategy(result: PlanningResult) -> dict[Strategy, Any]:
    return {a.strategy: a for a in result.alternatives}


def test_a_restart_intention_gets_a_validated_direct_plan() -> None:
    result = plan_for(restart_intention(requires_approval=True))
    assert result.outcome is PlanningOutcome.PLANNED
    assert result.status is PlanStatus.VALIDATED
    plan = result.plan
    assert plan is not None
    assert plan.strategy is Strategy.DIRECT
    assert plan.origin is PlanOrigin.TEMPLATE
    assert plan.intention == "int-1"
    assert plan.mind == "caretaker"
    assert [s.key for s in plan.steps] == ["P1", "V1"]
    assert plan.budget == PlanBudget()  # default: at most 20 invocations
    assert plan.budget.invocations == 20
    assert result.validation is not None
    assert result.validation.order == ["P1", "V1"]


def test_every_strategy_is_recorded_and_exactly_one_is_chosen() -> None:
    result = plan_for(restart_intention())
    assert result.plan is not None
    assert [a.strategy.value for a in result.plan.alternatives] == [
        "direct",
        "diagnose",
        "diagnose_then_escalate",
        "model",
    ]
    assert [a.selected for a in result.plan.alternatives] == [True, False, False, False]
    chosen = result.plan.alternatives[0]
    assert chosen.estimate == result.plan.estimate
    assert chosen.expected_confidence == 0.8
    assert chosen.score == score(0.8, result.plan.estimate)
    assert "chosen" in chosen.reason
    assert by_strategy(result)[Strategy.DIAGNOSE].reason == "the intention is not an investigation"
    assert "not consulted" in by_strategy(result)[Strategy.MODEL].reason


def test_applicable_strategies_lower_in_preference_are_scored_but_not_chosen() -> None:
    # An investigation whose means is a service read: both direct and diagnose apply.
    intention = investigation(means=Means(capability="service.status", parameters=WORKLOAD))
    result = plan_for(intention)
    assert result.plan is not None
    assert result.plan.strategy is Strategy.DIRECT
    runner_up = by_strategy(result)[Strategy.DIAGNOSE]
    assert runner_up.selected is False
    assert runner_up.score is not None
    assert runner_up.estimate is not None
    assert "comes first in preference order" in runner_up.reason


def test_an_investigation_is_diagnosed() -> None:
    result = plan_for(investigation())
    assert result.plan is not None
    assert result.plan.strategy is Strategy.DIAGNOSE
    assert result.status is PlanStatus.VALIDATED
    assert [s.key for s in result.plan.steps][-1] == "S1"


def test_a_failed_direct_restart_is_followed_by_diagnosis_and_escalation() -> None:
    intention = restart_intention(revision=2, failures=(failed("direct", 1, "V1 refuted"),))
    result = plan_for(intention)
    assert result.plan is not None
    assert result.plan.strategy is Strategy.DIAGNOSE_THEN_ESCALATE
    assert result.plan.origin is PlanOrigin.REPLAN
    assert result.plan.revision == 2
    assert "service.restart" not in {s.capability for s in result.plan.steps}
    assert "not reused" in by_strategy(result)[Strategy.DIRECT].reason
    assert "revision 1" in by_strategy(result)[Strategy.DIRECT].reason


def test_the_superseded_revision_is_linked() -> None:
    intention = restart_intention(
        revision=2, failures=(failed("direct"),), supersedes="atlas-restart-r1"
    )
    result = plan_for(intention)
    assert result.plan is not None
    assert result.plan.supersedes == "atlas-restart-r1"


@pytest.mark.parametrize(
    ("intention", "not_reused"),
    [
        (
            restart_intention(
                failures=(failed("direct"),),
                means=Means(capability="service.status", parameters=WORKLOAD),
                kind="investigation",
                workload=Workload(namespace="prod", name="atlas"),
            ),
            Strategy.DIRECT,
        ),
        (investigation(failures=(failed("diagnose"),)), Strategy.DIAGNOSE),
        (
            restart_intention(failures=(failed("direct"), failed("diagnose_then_escalate", 2))),
            Strategy.DIAGNOSE_THEN_ESCALATE,
        ),
    ],
    ids=["direct", "diagnose", "escalate"],
)
def test_a_strategy_that_failed_is_not_used_again(
    intention: IntentionView, not_reused: Strategy
) -> None:
    result = plan_for(intention)
    assert result.plan is None or result.plan.strategy is not not_reused
    alternative = by_strategy(result)[not_reused]
    assert alternative.selected is False
    assert "not reused" in alternative.reason


def test_the_same_strategy_applies_again_when_it_did_not_fail() -> None:
    # A replan under a new commitment only adds an approval requirement.
    result = plan_for(restart_intention(revision=2, requires_approval=True))
    assert result.plan is not None
    assert result.plan.strategy is Strategy.DIRECT


def test_no_possible_plan_when_nothing_applies_and_no_model() -> None:
    intention = restart_intention(failures=(failed("direct"), failed("diagnose_then_escalate")))
    result = plan_for(intention)
    assert result.outcome is PlanningOutcome.NO_POSSIBLE_PLAN
    assert result.plan is None
    assert result.reason.startswith("no possible plan")
    assert "no model is assigned the plan role" in result.reason
    assert len(result.alternatives) == 4


# --- the model strategy ---------------------------------------------------------------------


def _model_mind(**over: Any) -> MindView:
    return mind(plan_model=True, **over)


def _browse_intention(**over: Any) -> IntentionView:
    # Nothing deterministic applies to an investigation of a web page.
    return IntentionView.model_validate(
        {
            "id": "int-3",
            "objective": "find out whether the status page reports an outage",
            "kind": IntentionKind.INVESTIGATION,
            "subject": "status.example.org",
        }
        | over
    )


def test_a_model_is_asked_only_when_nothing_else_applies() -> None:
    result = plan_for(_browse_intention(), _model_mind())
    assert result.outcome is PlanningOutcome.NEEDS_MODEL_PROPOSAL
    assert result.plan is None
    assert len(result.alternatives) == 3  # the deterministic ones, none applicable
    assert plan_for(restart_intention(), _model_mind()).plan is not None


def test_a_model_is_never_asked_when_a_deterministic_strategy_applies() -> None:
    text = json.dumps({"steps": [status(key="X1")]})
    result = plan_for(restart_intention(), _model_mind(), proposal=ModelProposal(text=text))
    assert result.plan is not None
    assert result.plan.strategy is Strategy.DIRECT


def test_a_valid_proposal_becomes_the_plan() -> None:
    text = json.dumps(
        {
            "steps": [
                {
                    "key": "B1",
                    "title": "read the status page",
                    "kind": "capability",
                    "capability": "browser.read",
                    "parameters": {"url": "https://status.example.org"},
                    "approved": True,
                },
                {
                    "key": "S1",
                    "title": "summarise",
                    "kind": "internal",
                    "internalAction": "summarise_findings",
                    "dependsOn": ["B1"],
                },
            ],
            "budget": {"invocations": 999},
        }
    )
    m = _model_mind(budget=PlanBudget(invocations=10))
    result = plan_for(_browse_intention(), m, proposal=ModelProposal(text=text, tokens=512))
    assert result.outcome is PlanningOutcome.PLANNED
    assert result.status is PlanStatus.VALIDATED
    plan = result.plan
    assert plan is not None
    assert (plan.origin, plan.strategy) == (PlanOrigin.MODEL, Strategy.MODEL)
    assert plan.budget.invocations == 10  # from the mind, not the proposal
    assert plan.estimate.tokens == 512
    assert plan.estimate.network_operations == 1
    assert plan.estimate.approvals == 1  # browser.read asks by default
    assert result.validation is not None
    ignored = {w.field for w in result.validation.warnings if w.code is IssueCode.IGNORED_FIELD}
    assert ignored == {"steps[0].approved", "budget"}
    model = by_strategy(result)[Strategy.MODEL]
    assert model.selected
    assert model.expected_confidence == 0.5


def test_an_invalid_proposal_is_kept_as_a_draft() -> None:
    text = json.dumps({"steps": [status(capability="shell.exec")]})
    result = plan_for(_browse_intention(), _model_mind(), proposal=ModelProposal(text=text))
    assert result.outcome is PlanningOutcome.DRAFT
    assert result.status is PlanStatus.DRAFT
    assert result.validation is not None
    assert {e.code for e in result.validation.errors} == {IssueCode.UNKNOWN_CAPABILITY}


def test_garbage_from_the_model_is_a_draft_not_an_exception() -> None:
    result = plan_for(
        _browse_intention(), _model_mind(), proposal=ModelProposal(text=b"\x00garbage")
    )
    assert result.outcome is PlanningOutcome.DRAFT
    assert result.plan is not None
    assert result.plan.steps == []


@pytest.mark.parametrize("required", [True, False])
def test_approval_for_model_steps_comes_from_the_intention_only(required: bool) -> None:
    step = restart(requireApproval=False, requiresApproval=False)
    text = json.dumps({"steps": [step, verify()]})
    intention = _browse_intention(requires_approval=required)
    result = plan_for(intention, _model_mind(), proposal=ModelProposal(text=text))
    assert result.plan is not None
    assert result.plan.steps[0].requires_approval is required
    assert result.plan.steps[1].requires_approval is False  # verify steps never act


def test_a_model_that_failed_before_is_not_asked_again() -> None:
    result = plan_for(_browse_intention(failures=(failed("model"),)), _model_mind())
    assert result.outcome is PlanningOutcome.NO_POSSIBLE_PLAN
    assert "not reused" in by_strategy(result)[Strategy.MODEL].reason


# --- properties -----------------------------------------------------------------------------

names = st.sampled_from(["atlas", "atlas-worker", "web", "payments"])
namespaces = st.sampled_from(["prod", "staging"])
capabilities = st.sampled_from(
    ["service.restart", "service.status", "logs.query", "host.disk.usage", "browser.read"]
)
decisions = st.sampled_from(["allow", "approve", "deny"])


@st.composite
def intentions(draw: st.DrawFn) -> IntentionView:
    namespace, name = draw(namespaces), draw(names)
    capability = draw(capabilities)
    parameters: dict[str, Any] = {"namespace": namespace, "name": name}
    if capability == "host.disk.usage":
        parameters = {}
    elif capability == "browser.read":
        parameters = {"url": f"https://{name}.example.org"}
    failures = draw(st.lists(st.sampled_from(list(Strategy)), unique=True, max_size=3))
    return IntentionView(
        id="int",
        objective=f"look after {namespace}/{name}",
        kind=draw(st.sampled_from(IntentionKind)),
        workload=draw(st.none() | st.just(Workload(namespace=namespace, name=name))),
        means=draw(st.none() | st.just(Means(capability=capability, parameters=parameters))),
        requires_approval=draw(st.booleans()),
        revision=len(failures) + 1,
        failures=tuple(FailedAttempt(strategy=s, revision=i + 1) for i, s in enumerate(failures)),
    )


@st.composite
def minds(draw: st.DrawFn) -> MindView:
    rules = draw(
        st.lists(
            st.builds(
                rule,
                st.sampled_from(["service.*", "logs.query", "host.*", "*", "browser.read"]),
                decisions,
                st.sampled_from(["*", "atlas*", "prod/*"]),
            ),
            max_size=3,
        )
    )
    return mind(
        policy=tuple(rules),
        locked_capabilities=tuple(draw(st.lists(capabilities, unique=True, max_size=2))),
        grants=tuple(draw(st.lists(st.just(grant()), max_size=1))),
        plan_model=draw(st.booleans()),
    )


@settings(max_examples=200)
@given(intentions(), minds())
def test_planning_is_deterministic(intention: IntentionView, m: MindView) -> None:
    first = make_plan(intention, m, now=NOW)
    again = make_plan(intention.model_copy(), m.model_copy(), now=NOW)
    assert first == again
    if first.plan is not None:
        assert first.plan.to_k8s() == again.plan.to_k8s()  # type: ignore[union-attr]


@settings(max_examples=200)
@given(intentions(), minds())
def test_deterministic_plans_validate_and_respect_non_reuse(
    intention: IntentionView, m: MindView
) -> None:
    result = make_plan(intention, m, now=NOW)
    assert len([a for a in result.alternatives if a.selected]) <= 1
    if result.plan is None:
        return
    assert result.outcome is PlanningOutcome.PLANNED
    assert result.status is PlanStatus.VALIDATED
    assert result.plan.strategy not in intention.failed_strategies
    for step in result.plan.steps:
        if step.kind == StepKind.CAPABILITY:
            assert step.capability not in m.locked_capabilities
    if result.plan.strategy is Strategy.DIAGNOSE_THEN_ESCALATE:
        assert intention.means is not None
        assert intention.means.capability not in {s.capability for s in result.plan.steps}

"""The views planning takes of a Mind and of an intention."""

from __future__ import annotations

from minds.domain.planning.model import Strategy
from minds.domain.planning.views import FailedAttempt, MindView, Workload
from minds.domain.resources.mind import MindSpec, PlanBudget

from .builders import NOW, grant, investigation


def test_a_mind_view_is_built_from_the_mind_spec() -> None:
    spec = MindSpec.model_validate(
        {
            "lockedCapabilities": ["browser.read"],
            "capabilityPolicy": [{"capability": "logs.query", "decision": "allow"}],
            "budget": {"invocations": 12},
            "model": {"endpoint": "team-llm", "model": "small", "roles": ["plan"]},
        }
    )
    view = MindView.from_spec("caretaker", "prod", spec, [grant()])
    assert view.locked("browser.read")
    assert not view.locked("logs.query")
    assert view.plan_model is True
    assert view.budget == PlanBudget(invocations=12)
    assert view.decide("logs.query", "prod/atlas", NOW).decision.value == "allow"
    assert view.grants == (grant(),)


def test_without_a_model_in_the_plan_role_no_model_is_available() -> None:
    assert MindView.from_spec("m", "prod", MindSpec()).plan_model is False
    assert MindView.from_spec("m", "prod", MindSpec()).budget.invocations == 20


def test_an_intention_knows_which_strategies_failed() -> None:
    intention = investigation(
        failures=(
            FailedAttempt(strategy=Strategy.DIRECT, revision=1),
            FailedAttempt(strategy=Strategy.DIAGNOSE, revision=2),
        )
    )
    assert intention.failed_strategies == {Strategy.DIRECT, Strategy.DIAGNOSE}


def test_a_workload_names_its_target_and_parameters() -> None:
    workload = Workload(namespace="prod", name="atlas")
    assert workload.target == "prod/atlas"
    assert workload.parameters() == {"namespace": "prod", "kind": "Deployment", "name": "atlas"}

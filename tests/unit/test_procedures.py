"""Procedural memory: the text a completed plan leaves, and how confidently it is held."""

from __future__ import annotations

import pytest

from minds.domain.planning.model import InternalAction, Plan, StepKind
from minds.domain.procedures import (
    CONFIRMED_CONFIDENCE,
    UNCONFIRMED_CONFIDENCE,
    ProcedureStep,
    describe_check,
    procedure_id,
    procedure_steps,
    render_procedure,
)

RESTART = ProcedureStep(
    kind=StepKind.CAPABILITY, capability="service.restart", target="ns/atlas-worker"
)
VERIFY = ProcedureStep(kind=StepKind.VERIFY, check_text="service.status state equals running")


def test_restart_then_verify() -> None:
    text, confidence = render_procedure(
        "restart atlas-worker", [RESTART, VERIFY], confirmed=True, revision=1, earlier_failures=0
    )
    assert text == (
        "To restart atlas-worker: run service.restart on ns/atlas-worker; then verify: "
        "service.status state equals running. The outcome was confirmed by observation."
    )
    assert confidence == CONFIRMED_CONFIDENCE == 0.8


def test_unverified_outcome_is_held_less_firmly() -> None:
    text, confidence = render_procedure(
        "restart atlas-worker", [RESTART], confirmed=False, revision=1, earlier_failures=0
    )
    assert text == (
        "To restart atlas-worker: run service.restart on ns/atlas-worker. "
        "The outcome was not confirmed by observation."
    )
    assert confidence == UNCONFIRMED_CONFIDENCE == 0.5


def test_confirmation_needs_an_observing_step() -> None:
    text, confidence = render_procedure(
        "restart atlas-worker", [RESTART], confirmed=True, revision=1, earlier_failures=0
    )
    assert "not confirmed" in text
    assert confidence == UNCONFIRMED_CONFIDENCE


def test_a_monitor_step_confirms_too() -> None:
    monitor = ProcedureStep(kind=StepKind.MONITOR, check_text="service.status ready equals true")
    text, confidence = render_procedure(
        "Restart atlas-worker.", [RESTART, monitor], confirmed=True, revision=1, earlier_failures=0
    )
    assert text.startswith("To restart atlas-worker: ")
    assert "then monitor until stable: service.status ready equals true." in text
    assert confidence == CONFIRMED_CONFIDENCE


def test_diagnosis() -> None:
    steps = [
        ProcedureStep(kind=StepKind.CAPABILITY, capability="service.status", target="ns/atlas"),
        ProcedureStep(kind=StepKind.CAPABILITY, capability="host.memory.status"),
        ProcedureStep(kind=StepKind.REQUEST_CAPABILITY, capability="logs.query", target="ns/atlas"),
        ProcedureStep(kind=StepKind.CAPABILITY, capability="logs.query", target="ns/atlas"),
        ProcedureStep(kind=StepKind.INTERNAL, internal_action=InternalAction.SUMMARISE_FINDINGS),
    ]
    text, confidence = render_procedure(
        "investigate atlas", steps, confirmed=False, revision=1, earlier_failures=0
    )
    assert text == (
        "To investigate atlas: run service.status on ns/atlas; then run host.memory.status; "
        "then request access to logs.query on ns/atlas; then run logs.query on ns/atlas; "
        "then summarise the findings. The outcome was not confirmed by observation."
    )
    assert confidence == UNCONFIRMED_CONFIDENCE


def test_revision_is_noted_after_failures() -> None:
    escalate = ProcedureStep(kind=StepKind.INTERNAL, internal_action=InternalAction.NOTIFY_OPERATOR)
    text, _ = render_procedure(
        "restore atlas-worker", [RESTART, VERIFY], confirmed=True, revision=2, earlier_failures=1
    )
    assert text.endswith(
        "The outcome was confirmed by observation. Found in revision 2, after 1 failed plan."
    )
    text, _ = render_procedure(
        "restore atlas-worker",
        [ProcedureStep(kind=StepKind.WAIT), escalate],
        confirmed=False,
        revision=3,
        earlier_failures=2,
    )
    assert "wait; then tell the operator what was tried and seen." in text
    assert text.endswith("Found in revision 3, after 2 failed plans.")


def test_no_failures_no_revision_note() -> None:
    text, _ = render_procedure(
        "restart atlas-worker", [RESTART, VERIFY], confirmed=True, revision=2, earlier_failures=0
    )
    assert "revision" not in text


def test_acronyms_keep_their_capitals() -> None:
    text, _ = render_procedure(
        "DNS check for atlas", [RESTART], confirmed=False, revision=1, earlier_failures=0
    )
    assert text.startswith("To DNS check for atlas: ")


@pytest.mark.parametrize(
    ("steps", "revision", "failures"), [([], 1, 0), ([RESTART], 0, 0), ([RESTART], 1, -1)]
)
def test_nonsense_is_refused(steps: list[ProcedureStep], revision: int, failures: int) -> None:
    with pytest.raises(ValueError, match=r"step|revision"):
        render_procedure("x", steps, confirmed=False, revision=revision, earlier_failures=failures)


def test_procedure_steps_from_a_plan() -> None:
    plan = Plan.model_validate(
        {
            "objective": "restart atlas-worker",
            "origin": "template",
            "strategy": "direct",
            "steps": [
                {
                    "key": "P1",
                    "title": "restart",
                    "kind": "capability",
                    "capability": "service.restart",
                    "target": "ns/atlas-worker",
                    "parameters": {"namespace": "ns", "name": "atlas-worker"},
                    "expectation": {
                        "description": "running again",
                        "check": {
                            "capability": "service.status",
                            "field": "state",
                            "comparison": "equals",
                            "value": "running",
                        },
                        "confidence": 0.8,
                        "windowSeconds": 60,
                    },
                },
                {
                    "key": "V1",
                    "title": "verify",
                    "kind": "verify",
                    "verifies": "P1",
                    "dependsOn": ["P1"],
                },
                {"key": "W1", "title": "never ran", "kind": "wait", "waitSeconds": 5},
            ],
        }
    )
    steps = procedure_steps(plan, {"P1", "V1"})
    assert steps == [RESTART, VERIFY]
    check = plan.steps[0].expectation.check if plan.steps[0].expectation else None
    assert check is not None
    assert describe_check(check) == "service.status state equals running"


def test_one_procedure_id_per_plan() -> None:
    assert procedure_id("ops", "keeper", "p-1") == procedure_id("ops", "keeper", "p-1")
    assert procedure_id("ops", "keeper", "p-1") != procedure_id("ops", "keeper", "p-2")

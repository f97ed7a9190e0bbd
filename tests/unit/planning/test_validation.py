"""Every validation rule: a plan that breaks it and a close plan that keeps it."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from minds.domain.planning.model import (
    Check,
    Expectation,
    IssueCode,
    Plan,
    PlanStatus,
    ResourceUse,
    Step,
    StepKind,
)

from .builders import (
    check,
    error_codes,
    expectation,
    mind,
    monitor,
    plan,
    request,
    restart,
    rule,
    status,
    status_check,
    summary,
    verify,
    wait,
    warning_codes,
)


def _constructed_step(**fields: object) -> Step:
    """A step the schema would refuse, to prove validation does not rely on the schema."""
    return Step.model_construct(**fields)  # type: ignore[arg-type]


def _with_steps(*steps: Step) -> Plan:
    return plan(wait("W1")).model_copy(update={"steps": list(steps)})


def _many(count: int) -> Plan:
    steps = [Step.model_validate(wait(f"W{i}")) for i in range(count)]
    return plan(wait("W1")).model_copy(update={"steps": steps})


Case = Callable[[], Plan]

# (rule, plan breaking it, close plan keeping it, mind for both)
ERROR_RULES: list[tuple[IssueCode, Case, Case]] = [
    (IssueCode.STEP_COUNT, lambda: plan(), lambda: plan(wait("W1"))),
    (IssueCode.STEP_COUNT, lambda: _many(31), lambda: _many(30)),
    (
        IssueCode.INVALID_KEY,
        lambda: _with_steps(
            _constructed_step(key="step-1", title="t", kind=StepKind.WAIT, wait_seconds=1)
        ),
        lambda: _with_steps(
            _constructed_step(key="STEP1", title="t", kind=StepKind.WAIT, wait_seconds=1)
        ),
    ),
    (
        IssueCode.DUPLICATE_KEY,
        lambda: plan(wait("W1"), wait("W1")),
        lambda: plan(wait("W1"), wait("W2")),
    ),
    (
        IssueCode.MISSING_TITLE,
        lambda: plan(wait("W1", title="   ")),
        lambda: plan(wait("W1", title="w")),
    ),
    (
        IssueCode.UNKNOWN_DEPENDENCY,
        lambda: plan(wait("W1", "X9")),
        lambda: plan(wait("X9"), wait("W1", "X9")),
    ),
    (
        IssueCode.SELF_DEPENDENCY,
        lambda: plan(wait("W1", "W1")),
        lambda: plan(wait("W0"), wait("W1", "W0")),
    ),
    (
        IssueCode.DUPLICATE_DEPENDENCY,
        lambda: plan(wait("W0"), wait("W1", "W0", "W0")),
        lambda: plan(wait("W0"), wait("W1", "W0")),
    ),
    (
        IssueCode.DEPENDENCY_CYCLE,
        lambda: plan(wait("A", "C"), wait("B", "A"), wait("C", "B")),
        lambda: plan(wait("A"), wait("B", "A"), wait("C", "B")),
    ),
    (
        IssueCode.UNKNOWN_KIND,
        lambda: _with_steps(_constructed_step(key="X1", title="t", kind="shell")),
        lambda: _with_steps(
            _constructed_step(key="X1", title="t", kind=StepKind.WAIT, wait_seconds=1)
        ),
    ),
    (
        IssueCode.MISSING_FIELD,
        lambda: plan(wait("W1", waitSeconds=None)),
        lambda: plan(wait("W1")),
    ),
    (
        IssueCode.MISSING_FIELD,
        lambda: plan(restart(capability=None)),
        lambda: plan(restart()),
    ),
    (
        IssueCode.MISSING_FIELD,
        lambda: plan(request(targetPattern=" ")),
        lambda: plan(request()),
    ),
    (
        IssueCode.FIELD_NOT_ALLOWED,
        lambda: plan(wait("W1", capability="service.status")),
        lambda: plan(wait("W1")),
    ),
    (
        IssueCode.FIELD_NOT_ALLOWED,
        lambda: plan(restart(), verify(expectation=expectation())),
        lambda: plan(restart(), verify()),
    ),
    (
        IssueCode.FIELD_NOT_ALLOWED,
        lambda: plan(wait("W1", requiresApproval=True)),
        lambda: plan(restart(requiresApproval=True)),
    ),
    (
        IssueCode.UNKNOWN_CAPABILITY,
        lambda: plan(status(capability="service.delete")),
        lambda: plan(status()),
    ),
    (
        IssueCode.UNKNOWN_CAPABILITY,
        lambda: plan(request(capability="shell.exec")),
        lambda: plan(request()),
    ),
    (
        IssueCode.INVALID_PARAMETERS,
        lambda: plan(status(parameters={"namespace": "prod", "name": "atlas", "command": "rm"})),
        lambda: plan(status(parameters={"namespace": "prod", "name": "atlas"})),
    ),
    (
        IssueCode.INVALID_PARAMETERS,
        lambda: plan(status(parameters={"namespace": "prod"})),
        lambda: plan(status(parameters={"namespace": "prod", "name": "atlas"})),
    ),
    (
        IssueCode.INVALID_PARAMETERS,
        lambda: plan(status(parameters={"namespace": "prod", "name": "atlas", "kind": "Pod"})),
        lambda: plan(
            status(parameters={"namespace": "prod", "name": "atlas", "kind": "StatefulSet"})
        ),
    ),
    (
        IssueCode.INVALID_PARAMETERS,
        lambda: plan(
            restart(expectation=expectation(check=status_check(parameters={"name": "atlas"})))
        ),
        lambda: plan(restart()),
    ),
    (
        IssueCode.INVALID_PARAMETERS,
        lambda: plan(request(parameterLimits={"command": "ls"})),
        lambda: plan(request(parameterLimits={"mask": True, "sinceSeconds": 3600})),
    ),
    (
        IssueCode.TARGET_MISMATCH,
        lambda: plan(restart(target="prod/other")),
        lambda: plan(restart(target="prod/atlas")),
    ),
    (
        IssueCode.CHECK_NOT_READ_ONLY,
        lambda: plan(
            restart(expectation=expectation(check=status_check(capability="service.restart")))
        ),
        lambda: plan(restart()),
    ),
    (
        IssueCode.CHECK_NOT_READ_ONLY,
        lambda: plan(monitor(check=status_check(capability="service.restart"))),
        lambda: plan(monitor()),
    ),
    (
        IssueCode.CHECK_NOT_READ_ONLY,
        lambda: plan(
            restart(
                precondition={
                    "description": "not running",
                    "check": status_check(capability="service.restart"),
                }
            )
        ),
        lambda: plan(
            restart(
                precondition={
                    "description": "not running",
                    "check": status_check(comparison="not_equals"),
                }
            )
        ),
    ),
    (
        IssueCode.UNKNOWN_COMPARISON,
        lambda: plan(
            restart(
                expectation=Expectation.model_construct(
                    description="d",
                    check=Check.model_construct(
                        capability="service.status",
                        parameters={"namespace": "prod", "name": "atlas"},
                        field="state",
                        comparison="approximately",
                        value="running",
                    ),
                    confidence=0.8,
                    window_seconds=60,
                )
            )
        ),
        lambda: plan(restart()),
    ),
    (
        IssueCode.UNKNOWN_OBSERVATION_FIELD,
        lambda: plan(monitor(check=status_check(field="health"))),
        lambda: plan(monitor(check=status_check(field="state"))),
    ),
    (
        IssueCode.COMPARISON_TYPE,
        lambda: plan(monitor(check=status_check(comparison="less_than", value="5"))),
        lambda: plan(
            monitor(check=status_check(field="readyReplicas", comparison="less_than", value="5"))
        ),
    ),
    (
        IssueCode.COMPARISON_TYPE,
        lambda: plan(monitor(check=status_check(field="readyReplicas", value="many"))),
        lambda: plan(monitor(check=status_check(field="readyReplicas", value="3"))),
    ),
    (
        IssueCode.COMPARISON_TYPE,
        lambda: plan(monitor(check=status_check(field="ready", value="yes"))),
        lambda: plan(monitor(check=status_check(field="ready", value=True))),
    ),
    (
        IssueCode.COMPARISON_TYPE,
        lambda: plan(
            monitor(check=status_check(field="readyReplicas", comparison="contains", value="1"))
        ),
        lambda: plan(
            monitor(check=status_check(field="state", comparison="contains", value="run"))
        ),
    ),
    (
        IssueCode.VERIFY_UNKNOWN_STEP,
        lambda: plan(restart(), verify(verifies="P9")),
        lambda: plan(restart(), verify(verifies="P1")),
    ),
    (
        IssueCode.VERIFY_NOT_DEPENDENT,
        lambda: plan(restart(), verify(dependsOn=[])),
        lambda: plan(restart(), verify(dependsOn=["P1"])),
    ),
    (
        IssueCode.VERIFY_NO_EXPECTATION,
        lambda: plan(restart(expectation=None), verify()),
        lambda: plan(restart(), verify()),
    ),
    (
        IssueCode.UNKNOWN_INTERNAL_ACTION,
        lambda: _with_steps(
            Step.model_validate(wait("W1")),
            _constructed_step(
                key="S1",
                title="t",
                kind=StepKind.INTERNAL,
                internal_action="record_procedure",
                depends_on=["W1"],
            ),
        ),
        lambda: plan(wait("W1"), summary("W1")),
    ),
    (
        IssueCode.SUMMARY_WITHOUT_DEPENDENCIES,
        lambda: plan(summary()),
        lambda: plan(wait("W1"), summary("W1")),
    ),
    (
        IssueCode.MONITOR_STABLE_EXCEEDS_DEADLINE,
        lambda: plan(monitor(stableSeconds=900, deadlineSeconds=600)),
        lambda: plan(monitor(stableSeconds=600, deadlineSeconds=600)),
    ),
    (
        IssueCode.TOO_MANY_ATTEMPTS,
        lambda: plan(restart(maxAttempts=2)),
        lambda: plan(restart(maxAttempts=1)),
    ),
]


@pytest.mark.parametrize(
    ("code", "breaks", "keeps"),
    ERROR_RULES,
    ids=[f"{code.value}-{i}" for i, (code, _, _) in enumerate(ERROR_RULES)],
)
def test_error_rule(code: IssueCode, breaks: Case, keeps: Case) -> None:
    broken = check(breaks())
    assert code.value in error_codes(broken)
    assert broken.status is PlanStatus.DRAFT
    kept = check(keeps())
    assert kept.errors == [], kept.errors
    assert kept.status is PlanStatus.VALIDATED


def test_a_locked_capability_is_refused_and_an_unlocked_one_is_not() -> None:
    locked = mind(locked_capabilities=("service.restart",))
    assert "locked_capability" in error_codes(check(plan(restart()), locked))
    other = mind(locked_capabilities=("logs.query",))
    assert check(plan(restart()), other).errors == []


def test_a_locked_capability_cannot_be_used_by_a_check_or_a_request() -> None:
    locked = mind(locked_capabilities=("service.status", "logs.query"))
    assert "locked_capability" in error_codes(check(plan(monitor()), locked))
    assert "locked_capability" in error_codes(check(plan(request()), locked))


def test_read_only_idempotent_steps_may_retry() -> None:
    assert check(plan(status(maxAttempts=3))).errors == []


WARNING_RULES: list[tuple[IssueCode, Case, Case, Callable[[], object]]] = [
    (
        IssueCode.MISSING_EXPECTATION,
        lambda: plan(restart(expectation=None)),
        lambda: plan(restart(), verify()),
        mind,
    ),
    (
        IssueCode.CHECK_TARGET_DIFFERS,
        lambda: plan(
            restart(
                expectation=expectation(
                    check=status_check(parameters={"namespace": "prod", "name": "other"})
                )
            )
        ),
        lambda: plan(restart()),
        mind,
    ),
    (
        IssueCode.POLICY_DENIES,
        lambda: plan(restart()),
        lambda: plan(restart()),
        lambda: (
            mind(policy=(rule("service.restart", "deny", "atlas*"),)),
            mind(policy=(rule("service.restart", "deny", "other*"),)),
        ),
    ),
    (
        IssueCode.ESTIMATE_OVER_BUDGET,
        lambda: plan(status(), estimate=ResourceUse(invocations=21).to_k8s()),
        lambda: plan(status(), estimate=ResourceUse(invocations=20).to_k8s()),
        mind,
    ),
]


@pytest.mark.parametrize(
    ("code", "breaks", "keeps", "minds"),
    WARNING_RULES,
    ids=[code.value for code, *_ in WARNING_RULES],
)
def test_warning_rule(
    code: IssueCode, breaks: Case, keeps: Case, minds: Callable[[], object]
) -> None:
    made = minds()
    bad_mind, good_mind = made if isinstance(made, tuple) else (made, made)
    broken = check(breaks(), bad_mind)
    assert code.value in warning_codes(broken)
    assert broken.errors == []  # a warning never makes a draft
    assert broken.status is PlanStatus.VALIDATED
    kept = check(keeps(), good_mind)
    assert code.value not in warning_codes(kept)


def test_a_read_step_without_expectation_gets_no_warning() -> None:
    assert check(plan(status())).warnings == []


def test_issues_name_the_step_and_the_field_path() -> None:
    result = check(
        plan(
            wait("W1"),
            status(parameters={"namespace": "prod", "name": "atlas", "command": "rm -rf /"}),
        )
    )
    [issue] = result.errors
    assert issue.code is IssueCode.INVALID_PARAMETERS
    assert issue.step == "D1"
    assert issue.field == "steps[1].parameters.command"
    assert "unknown parameter" in issue.message


def test_an_invalid_draft_reports_every_error_and_no_order() -> None:
    result = check(plan(wait("W1", "W9", title=""), restart(maxAttempts=3, target="x/y")))
    assert {"unknown_dependency", "missing_title", "too_many_attempts", "target_mismatch"} <= (
        error_codes(result)
    )
    assert result.order is None
    assert result.status is PlanStatus.DRAFT


def test_a_valid_plan_reports_a_topological_order() -> None:
    result = check(plan(restart(), verify(), wait("W1", "V1")))
    assert result.order == ["P1", "V1", "W1"]


def test_the_cycle_error_names_the_steps_on_the_cycle_only() -> None:
    result = check(plan(wait("A", "C"), wait("B", "A"), wait("C", "B"), wait("D", "C")))
    [cycle] = [i for i in result.errors if i.code is IssueCode.DEPENDENCY_CYCLE]
    assert cycle.steps == ["A", "B", "C"]
    assert "A depends on C" in cycle.message


def test_the_number_of_issues_is_bounded() -> None:
    steps = [wait(f"W{i}", "X1", "X2", "X3", "X4", title="") for i in range(30)]
    result = check(plan(*steps))
    assert len(result.errors) == 100
    assert result.errors[-1].code is IssueCode.TRUNCATED

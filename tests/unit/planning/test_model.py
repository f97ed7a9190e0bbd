"""The plan model: vocabularies, the custom resource round trip and a CRD-friendly schema."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import ValidationError

from minds.domain.free_form import breach
from minds.domain.planning.model import (
    MAX_STEPS,
    Alternative,
    Assumption,
    Budget,
    CapabilityRequest,
    Check,
    Comparison,
    Expectation,
    InternalAction,
    IssueCode,
    Lease,
    Observation,
    Plan,
    PlanOrigin,
    PlanStatus,
    PlanStatusBlock,
    Precondition,
    ResourceUse,
    Step,
    StepKind,
    StepState,
    StepStatus,
    Strategy,
    ValidationIssue,
    ValidationResult,
)

from .builders import expectation, plan, restart, verify


def test_plan_statuses_are_exactly_the_seeds() -> None:
    assert [s.value for s in PlanStatus] == [
        "draft", "validated", "waiting", "executing", "blocked", "awaiting_approval",
        "replanning", "completed", "failed", "abandoned", "superseded",
    ]  # fmt: skip


def test_step_statuses_are_exactly_the_seeds() -> None:
    assert [s.value for s in StepStatus] == [
        "pending", "ready", "executing", "awaiting_approval", "awaiting_grant", "waiting",
        "completed", "failed", "skipped", "blocked", "cancelled",
    ]  # fmt: skip


def test_step_kinds_and_origins_are_closed_vocabularies() -> None:
    assert [k.value for k in StepKind] == [
        "capability", "request_capability", "verify", "monitor", "wait", "internal",
    ]  # fmt: skip
    assert [o.value for o in PlanOrigin] == ["template", "model", "operator", "dream", "replan"]
    assert [a.value for a in InternalAction] == ["summarise_findings", "notify_operator"]
    with pytest.raises(ValidationError):
        Step.model_validate({"key": "X1", "title": "t", "kind": "shell"})
    with pytest.raises(ValidationError):
        Step.model_validate(
            {"key": "X1", "title": "t", "kind": "internal", "internalAction": "record_procedure"}
        )


@pytest.mark.parametrize("key", ["p1", "1P", "P-1", "P123456789", ""])
def test_step_keys_are_short(key: str) -> None:
    with pytest.raises(ValidationError):
        Step.model_validate({"key": key, "title": "t", "kind": "wait", "waitSeconds": 1})


def test_the_spec_renders_camel_case_and_parses_back() -> None:
    original = plan(restart(), verify())
    spec = original.to_k8s()
    assert spec["steps"][0]["expectation"]["windowSeconds"] == 60
    assert spec["steps"][1]["dependsOn"] == ["P1"]
    assert "depends_on" not in str(spec)
    assert Plan.model_validate(spec) == original


def test_unknown_spec_fields_are_refused() -> None:
    spec = plan(restart()).to_k8s()
    spec["steps"][0]["approved"] = True
    with pytest.raises(ValidationError):
        Plan.model_validate(spec)


def test_check_values_are_text_whatever_was_written() -> None:
    made = Check.model_validate(
        {"capability": "service.status", "field": "ready", "comparison": "equals", "value": True}
    )
    assert made.value == "true"
    assert Check.model_validate({**made.to_k8s(), "value": 3}).value == "3"


@pytest.mark.parametrize(
    ("comparison", "observed", "expected", "holds"),
    [
        (Comparison.EQUALS, "running", "running", True),
        (Comparison.EQUALS, "degraded", "running", False),
        (Comparison.EQUALS, 3, "3.0", True),
        (Comparison.EQUALS, True, "true", True),
        (Comparison.NOT_EQUALS, "degraded", "running", True),
        (Comparison.LESS_THAN, 80.5, "90", True),
        (Comparison.LESS_THAN, 95, "90", False),
        (Comparison.LESS_OR_EQUAL, 90, "90", True),
        (Comparison.GREATER_THAN, 2, "1", True),
        (Comparison.GREATER_OR_EQUAL, 1, "1", True),
        (Comparison.GREATER_OR_EQUAL, "n/a", "1", False),
        (Comparison.GREATER_OR_EQUAL, True, "1", False),
        (Comparison.CONTAINS, "error: disk full", "disk full", True),
        (Comparison.CONTAINS, ["a", "b"], "b", True),
        (Comparison.CONTAINS, "all good", "disk full", False),
    ],
)
def test_comparisons(comparison: Comparison, observed: object, expected: str, holds: bool) -> None:
    assert comparison.holds(observed, expected) is holds


def test_step_state_and_status_block_round_trip() -> None:
    from datetime import UTC, datetime

    at = datetime(2025, 3, 1, 12, 0, tzinfo=UTC)
    block = PlanStatusBlock(
        phase=PlanStatus.EXECUTING,
        steps=[
            StepState(
                key="P1",
                status=StepStatus.EXECUTING,
                attempts=1,
                lease=Lease(holder="controller-0", expires_at=at),
                next_run_at=at,
                observation=Observation(summary="restart requested", fields={"state": "x"}),
                approval_ref="approval-p1",
                grant_ref="grant-logs",
            )
        ],
        actual=ResourceUse(invocations=1),
        validation=ValidationResult(order=["P1"]),
    )
    rendered = block.to_k8s()
    assert rendered["steps"][0]["lease"]["expiresAt"].startswith("2025-03-01T12:00:00")
    assert "status" not in Step.model_fields  # runtime state lives in the status block only
    assert PlanStatusBlock.model_validate(rendered) == block


def test_validation_status_follows_errors() -> None:
    assert ValidationResult().status is PlanStatus.VALIDATED
    issue = ValidationIssue(code=IssueCode.STEP_COUNT, message="none")
    assert ValidationResult(errors=[issue]).status is PlanStatus.DRAFT
    assert ValidationResult(warnings=[issue]).status is PlanStatus.VALIDATED


def _walk(schema: Any) -> list[dict[str, Any]]:
    found: list[dict[str, Any]] = []
    if isinstance(schema, dict):
        found.append(schema)
        for value in schema.values():
            found.extend(_walk(value))
    elif isinstance(schema, list):
        for value in schema:
            found.extend(_walk(value))
    return found


@pytest.mark.parametrize("model", [Plan, PlanStatusBlock])
def test_the_schema_is_crd_friendly(model: type[Plan] | type[PlanStatusBlock]) -> None:
    schema = model.model_json_schema(by_alias=True)
    nodes = _walk(schema)
    assert not any("oneOf" in node or "discriminator" in node for node in nodes)
    # No recursion: no definition refers to itself, directly or through others.
    defs = schema.get("$defs", {})

    def refs(node: Any) -> set[str]:
        return {n["$ref"].rsplit("/", 1)[1] for n in _walk(node) if "$ref" in n}

    for name in defs:
        seen, todo = set(), list(refs(defs[name]))
        while todo:
            current = todo.pop()
            assert current != name, f"{name} is recursive"
            if current not in seen:
                seen.add(current)
                todo.extend(refs(defs[current]))
    # Every list is bounded, so a stored plan stays small.
    arrays = [n for n in nodes if n.get("type") == "array"]
    assert arrays
    assert all("maxItems" in n for n in arrays)
    assert schema["properties"]["steps"]["maxItems"] == MAX_STEPS if model is Plan else True


# --- the round trip, for any plan the model accepts ---------------------------------------


def _model(cls: Any, **fields: Any) -> st.SearchStrategy[Any]:
    """Models from field strategies by Python name (`st.builds` would see camelCase aliases)."""
    return st.fixed_dictionaries(fields).map(cls.model_validate)


keys = st.from_regex(r"\A[A-Z][A-Z0-9]{0,7}\Z")
text = st.text(max_size=40)
seconds = st.integers(min_value=60, max_value=86_400)
json_scalars = st.none() | st.booleans() | st.integers(-(2**53), 2**53) | st.text(max_size=10)
json_values = st.recursive(
    json_scalars | st.floats(allow_nan=False, allow_infinity=False),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3)
    ),
    max_leaves=8,
)
#: Free-form values as admission lets them through (minds.domain.free_form).
parameters = st.none() | st.dictionaries(st.text(max_size=10), json_values, max_size=4).filter(
    lambda value: breach(value, "parameters") is None
)
capabilities = st.sampled_from(["service.status", "service.restart", "logs.query", "x.y"])
checks = _model(
    Check,
    capability=capabilities,
    parameters=parameters,
    field=st.text(min_size=1, max_size=20),
    comparison=st.sampled_from(Comparison),
    value=st.text(max_size=20) | st.integers() | st.booleans(),
)
confidences = st.floats(min_value=0, max_value=1)
steps = _model(
    Step,
    key=keys,
    title=text,
    kind=st.sampled_from(StepKind),
    depends_on=st.lists(keys, max_size=4),
    capability=st.none() | capabilities,
    parameters=parameters,
    target=st.none() | text,
    expectation=st.none()
    | _model(
        Expectation, description=text, check=checks, confidence=confidences, window_seconds=seconds
    ),
    precondition=st.none()
    | _model(Precondition, description=text, check=checks, fulfils_intention_on_skip=st.booleans()),
    requires_approval=st.booleans(),
    max_attempts=st.none() | st.integers(1, 10),
    request=st.none()
    | _model(
        CapabilityRequest,
        capability=capabilities,
        target_pattern=text,
        parameter_limits=parameters,
        duration_seconds=seconds,
        operation_cap=st.integers(1, 1000),
        reason=text,
        risk=text,
        mitigation=text,
        fallback=text,
        alternatives=st.lists(text, max_size=3),
    ),
    verifies=st.none() | keys,
    check=st.none() | checks,
    stable_seconds=st.none() | seconds,
    deadline_seconds=st.none() | seconds,
    interval_seconds=st.none() | seconds,
    wait_seconds=st.none() | seconds,
    internal_action=st.none() | st.sampled_from(InternalAction),
    note=st.none() | text,
)
usages = _model(
    ResourceUse,
    invocations=st.integers(0, 1000),
    approvals=st.integers(0, 10),
    wall_seconds=st.integers(0, 10_000),
    network_operations=st.integers(0, 100),
    money=st.floats(min_value=0, max_value=1e6),
    tokens=st.integers(0, 100_000),
)
plans = _model(
    Plan,
    objective=st.text(min_size=1, max_size=60),
    origin=st.sampled_from(PlanOrigin),
    strategy=st.sampled_from(Strategy),
    mind=st.none() | text,
    intention=st.none() | text,
    revision=st.integers(1, 1000),
    supersedes=st.none() | text,
    superseded_by=st.none() | text,
    steps=st.lists(steps, max_size=5),
    assumptions=st.lists(_model(Assumption, belief=text, min_confidence=confidences), max_size=2),
    completion_criteria=st.lists(text, max_size=2),
    abort_conditions=st.lists(text, max_size=2),
    risk=st.none() | text,
    estimate=usages,
    budget=_model(
        Budget,
        invocations=st.integers(1, 1000),
        wall_seconds=st.none() | st.integers(1, 100_000),
        money=st.none() | st.floats(min_value=0, max_value=1e6),
        approvals=st.none() | st.integers(0, 100),
    ),
    alternatives=st.lists(
        _model(
            Alternative,
            strategy=st.sampled_from(Strategy),
            selected=st.booleans(),
            reason=text,
            estimate=st.none() | usages,
            expected_confidence=st.none() | confidences,
            score=st.none() | st.floats(min_value=-10, max_value=1),
        ),
        max_size=4,
    ),
)


@settings(max_examples=200)
@given(plans)
def test_plan_round_trips_through_the_resource_spec(original: Plan) -> None:
    assert Plan.model_validate(original.to_k8s()) == original


def test_a_generated_expectation_is_reachable_from_the_builders() -> None:
    # Keeps the builders honest: the example expectation is a valid model.
    assert Expectation.model_validate(expectation()).window_seconds == 60

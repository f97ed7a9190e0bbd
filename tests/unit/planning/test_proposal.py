"""Model proposals: read into the same structure, authority stripped, never an exception."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from minds.domain.capabilities.registry import REGISTRY
from minds.domain.planning.model import IssueCode, PlanOrigin, PlanStatus, Strategy
from minds.domain.planning.proposal import (
    MAX_PROPOSAL_BYTES,
    MAX_PROPOSAL_DEPTH,
    claims_authority,
    parse_proposal,
    proposal_vocabulary,
    read_proposal,
)

from .builders import mind, restart, verify


def _parse(text: str | bytes) -> Any:
    return parse_proposal(text, objective="atlas runs normally", registry=REGISTRY, mind=mind())


def _proposal(**top: Any) -> dict[str, Any]:
    return {"steps": [restart(), verify()], "risk": "brief interruption"} | top


def test_a_good_proposal_becomes_a_validated_model_plan() -> None:
    plan, result = _parse(json.dumps(_proposal()))
    assert result.errors == []
    assert result.status is PlanStatus.VALIDATED
    assert plan.origin is PlanOrigin.MODEL
    assert plan.strategy is Strategy.MODEL
    assert [s.key for s in plan.steps] == ["P1", "V1"]
    assert plan.risk == "brief interruption"
    assert result.order == ["P1", "V1"]


AUTHORITY_FIELDS = [
    ("authorised", True),
    ("authorized", True),
    ("approved", True),
    ("approval", {"by": "model"}),
    ("status", "completed"),
    ("completed", True),
    ("policy", "allow"),
    ("require_approval", False),
    ("requireApproval", False),
    ("requiresApproval", True),
    ("granted", True),
    ("grant", "grant-1"),
    ("approvedBy", "alice"),
    ("preAuthorized", True),
    ("permissions", ["all"]),
    ("decision", "Approved"),
    ("phase", "completed"),
    ("done", True),
    ("result", "ok"),
    ("bypassPolicy", True),
]


@pytest.mark.parametrize(("name", "value"), AUTHORITY_FIELDS)
@pytest.mark.parametrize("where", ["plan", "step", "parameters", "expectation.check"])
def test_authority_fields_are_ignored_at_any_depth(name: str, value: Any, where: str) -> None:
    document = _proposal()
    if where == "plan":
        document[name] = value
        path = name
    elif where == "step":
        document["steps"][0][name] = value
        path = f"steps[0].{name}"
    elif where == "parameters":
        document["steps"][0]["parameters"][name] = value
        path = f"steps[0].parameters.{name}"
    else:
        document["steps"][0]["expectation"]["check"][name] = value
        path = f"steps[0].expectation.check.{name}"
    plan, result = _parse(json.dumps(document))
    ignored = [w for w in result.warnings if w.code is IssueCode.IGNORED_FIELD]
    assert [w.field for w in ignored] == [path]
    assert result.errors == []  # stripped, so it neither errs nor survives
    rendered = plan.to_k8s()
    container = {
        "plan": rendered,
        "step": rendered["steps"][0],
        "parameters": rendered["steps"][0]["parameters"],
        "expectation.check": rendered["steps"][0]["expectation"]["check"],
    }[where]
    if name == "requiresApproval" and where == "step":
        # A field of the spec, but one only the planner sets: the proposal's True is gone.
        assert container[name] is False
    else:
        assert name not in container


def test_require_approval_false_does_not_remove_an_approval_requirement() -> None:
    document = _proposal()
    document["steps"][0]["require_approval"] = False
    plan, _ = _parse(json.dumps(document))
    assert plan.steps[0].requires_approval is False  # the planner sets it from the intention


def test_nested_authority_inside_lists_is_found() -> None:
    document = _proposal(assumptions=[{"belief": "x", "minConfidence": 0.5, "approved": True}])
    _, result = _parse(json.dumps(document))
    assert [w.field for w in result.warnings if w.code is IssueCode.IGNORED_FIELD] == [
        "assumptions[0].approved"
    ]


@pytest.mark.parametrize("name", ["origin", "strategy", "budget", "estimate", "revision"])
def test_planner_owned_fields_are_ignored(name: str) -> None:
    plan, result = _parse(json.dumps(_proposal(**{name: {"x": 1}})))
    assert [w.field for w in result.warnings] == [name]
    assert plan.origin is PlanOrigin.MODEL
    assert plan.budget.invocations == 20


def test_a_proposal_cannot_raise_its_own_budget() -> None:
    plan, _ = _parse(json.dumps(_proposal(budget={"invocations": 1000})))
    assert plan.budget.invocations == 20


@pytest.mark.parametrize("name", ["approved", "status", "steps", "stepStatus", "objective", "risk"])
def test_claims_authority_is_about_authority_and_progress(name: str) -> None:
    expected = name in {"approved", "status"}
    assert claims_authority(name) is expected


MALFORMED = [
    ("not json", IssueCode.MALFORMED_PROPOSAL),
    ("", IssueCode.MALFORMED_PROPOSAL),
    ("[1, 2]", IssueCode.MALFORMED_PROPOSAL),
    ('"a string"', IssueCode.MALFORMED_PROPOSAL),
    ('{"steps": NaN}', IssueCode.MALFORMED_PROPOSAL),
    ('{"steps": 1e999}', IssueCode.MALFORMED_PROPOSAL),
    ('{"steps": [], "steps": []}', IssueCode.MALFORMED_PROPOSAL),
    (b"\xff\xfe{}", IssueCode.MALFORMED_PROPOSAL),
    ('{"steps": "all of them"}', IssueCode.PROPOSAL_SCHEMA),
    ('{"steps": [{"key": "P1", "title": 3, "kind": "wait"}]}', IssueCode.PROPOSAL_SCHEMA),
    ('{"steps": [{"key": "P1", "title": "t", "kind": "shell"}]}', IssueCode.PROPOSAL_SCHEMA),
    ('{"steps": [], "explanation": "trust me"}', IssueCode.PROPOSAL_SCHEMA),
    ("[" * (MAX_PROPOSAL_DEPTH + 1) + "]" * (MAX_PROPOSAL_DEPTH + 1), IssueCode.PROPOSAL_TOO_DEEP),
    ("[" * 100_000, IssueCode.PROPOSAL_TOO_LARGE),
    ('{"risk": "' + "x" * MAX_PROPOSAL_BYTES + '"}', IssueCode.PROPOSAL_TOO_LARGE),
]


@pytest.mark.parametrize(("text", "code"), MALFORMED)
def test_malformed_proposals_are_clear_errors(text: str | bytes, code: IssueCode) -> None:
    plan, result = _parse(text)
    assert code in {e.code for e in result.errors}
    assert result.status is PlanStatus.DRAFT
    assert plan.origin is PlanOrigin.MODEL


def test_schema_errors_name_the_field_and_the_step() -> None:
    document = {"steps": [restart(), verify(kind="verifyy")]}
    _, result = _parse(json.dumps(document))
    [error] = result.errors
    assert error.field == "steps[1].kind"
    assert error.step == "V1"


def test_unknown_step_fields_are_errors_not_silently_dropped() -> None:
    document = _proposal()
    document["steps"][0]["shell"] = "rm -rf /"
    _, result = _parse(json.dumps(document))
    assert [(e.field, e.message) for e in result.errors] == [
        ("steps[0].shell", "steps[0].shell: unknown field")
    ]


def test_nesting_within_the_limit_is_read() -> None:
    nested: Any = 1
    for _ in range(MAX_PROPOSAL_DEPTH - 5):
        nested = {"a": nested}
    document = _proposal()
    document["steps"][0]["parameters"]["x"] = nested
    _, result = _parse(json.dumps(document))
    # Read, then judged: deeper than free-form parameters may go (minds.domain.free_form).
    assert [(e.code, e.field) for e in result.errors] == [
        (IssueCode.PROPOSAL_SCHEMA, "steps[0].parameters")
    ]
    assert "nested deeper than 4 levels" in result.errors[0].message


def test_brackets_inside_strings_do_not_count_as_nesting() -> None:
    _, result = _parse(json.dumps(_proposal(risk="[" * 100)))
    assert result.errors == []


def test_a_fenced_json_block_is_read() -> None:
    plan, result = _parse("```json\n" + json.dumps(_proposal()) + "\n```")
    assert result.errors == []
    assert len(plan.steps) == 2


def test_validation_runs_on_a_readable_proposal() -> None:
    document = _proposal()
    document["steps"][0]["capability"] = "service.delete"
    _, result = _parse(json.dumps(document))
    assert {e.code for e in result.errors} == {IssueCode.UNKNOWN_CAPABILITY}


def test_reading_keeps_the_objective_of_the_intention() -> None:
    reading = read_proposal(json.dumps(_proposal(objective="take over")), objective="fix atlas")
    assert reading.plan.objective == "fix atlas"


json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(),
    lambda inner: st.lists(inner, max_size=5) | st.dictionaries(st.text(), inner, max_size=5),
    max_leaves=30,
)
step_keys = st.sampled_from(
    ["key", "title", "kind", "dependsOn", "capability", "parameters", "target", "expectation",
     "verifies", "check", "waitSeconds", "internalAction", "approved", "status", "request"]
)  # fmt: skip
plan_like = st.fixed_dictionaries(
    {"steps": st.lists(st.dictionaries(step_keys, json_values, max_size=8), max_size=4)},
    optional={"risk": json_values, "assumptions": json_values, "approved": json_values},
)


@settings(max_examples=300)
@given(json_values)
def test_parsing_random_json_never_raises(document: Any) -> None:
    _, result = _parse(json.dumps(document))
    assert result.status in {PlanStatus.DRAFT, PlanStatus.VALIDATED}


@settings(max_examples=300)
@given(plan_like)
def test_parsing_random_plan_like_json_never_raises(document: Any) -> None:
    plan, result = _parse(json.dumps(document))
    assert plan.origin is PlanOrigin.MODEL
    if result.ok:
        assert 1 <= len(plan.steps) <= 30


@settings(max_examples=200)
@given(st.text() | st.binary())
def test_parsing_random_text_never_raises(text: str | bytes) -> None:
    _parse(text)


def test_the_vocabulary_for_the_model_omits_locked_capabilities() -> None:
    vocabulary = proposal_vocabulary(REGISTRY, mind(locked_capabilities=("service.restart",)))
    names = [c["name"] for c in vocabulary["capabilities"]]
    assert "service.restart" not in names
    assert "service.status" in names
    assert vocabulary["stepKinds"]["verify"]["required"] == ["verifies"]
    assert vocabulary["internalActions"] == ["summarise_findings", "notify_operator"]
    json.dumps(vocabulary)  # it goes into a prompt as JSON

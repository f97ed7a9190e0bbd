"""Limits on free-form JSON: depth, width, string size, NUL, types; checked without recursion."""

from __future__ import annotations

import sys
from typing import Any

import pytest
from pydantic import ValidationError

from minds.domain.free_form import FREE_FORM, NUL_SHOWN, Breach, breach, first_breach, storable
from minds.domain.resources.grant import CapabilityGrantSpec


def nested(depth: int, leaf: Any = 1) -> Any:
    value = leaf
    for _ in range(depth):
        value = {"a": value}
    return value


def test_values_within_the_limits_pass() -> None:
    within: dict[str, Any] = {
        "replicas": [1, 2, 3],
        "name": "x" * FREE_FORM.string,
        "flags": {"on": True, "off": None, "ratio": 0.5},
        "deep": nested(FREE_FORM.depth - 1),
    }
    assert breach(within, "spec.parameters") is None


@pytest.mark.parametrize(
    ("value", "where", "says"),
    [
        (nested(FREE_FORM.depth + 1), "p.a.a.a.a", "nested deeper than 4"),
        ({"a": [[[[1]]]]}, "p.a[0][0][0]", "nested deeper than 4"),
        ({"k": list(range(FREE_FORM.width + 1))}, "p.k", "more than 64 entries"),
        ({str(i): i for i in range(FREE_FORM.width + 1)}, "p", "more than 64 entries"),
        ({"note": "ok\x00"}, "p.note", "NUL"),
        ({"a": {"k\x00": 1}}, "p.a (a key)", "NUL"),
        ({"a": ["x" * (FREE_FORM.string + 1)]}, "p.a[0]", "longer than 4096"),
        ({"a": {1: 2}}, "p.a", "not a string"),
        ({"a": {1, 2}}, "p.a", "not a JSON value"),
    ],
)
def test_a_value_beyond_a_limit_is_refused_with_its_path(value: Any, where: str, says: str) -> None:
    found = breach(value, "p")
    assert found is not None
    assert (found.field, says in found.message) == (where, True)


def test_the_node_count_is_bounded_across_containers() -> None:
    wide = {str(i): list(range(FREE_FORM.width)) for i in range(FREE_FORM.width)}
    assert breach(wide, "p") == Breach("p", f"holds more than {FREE_FORM.nodes} values")


def test_a_value_far_deeper_than_the_stack_is_refused_without_recursion() -> None:
    depth = sys.getrecursionlimit() * 20
    found = breach(nested(depth), "p")
    assert found is not None
    assert found.message == "is nested deeper than 4 levels"


def test_the_first_breach_names_its_field() -> None:
    fields: dict[str, object] = {"steps[0].parameters": {"ok": 1}, "steps[1].parameters": nested(9)}
    found = first_breach(fields)
    assert found is not None
    assert found.field.startswith("steps[1].parameters")


def test_storable_text_shows_nul_and_leaves_other_text_alone() -> None:
    assert storable("a\x00b\x00") == f"a{NUL_SHOWN}b{NUL_SHOWN}"
    text = "tab\tnewline\nescape\x1b[31m ünïcödé 🙂"
    assert storable(text) is text


def test_a_grant_beyond_the_limits_cannot_be_read_and_the_error_names_the_field() -> None:
    spec = {
        "mind": "keeper",
        "capability": "service.restart",
        "targetPattern": "atlas-*",
        "parameterLimits": {"replicas": nested(FREE_FORM.depth)},
        "expiresAt": "2030-01-01T00:00:00Z",
        "operationCap": 1,
        "reason": "r",
    }
    with pytest.raises(ValidationError) as refused:
        CapabilityGrantSpec.model_validate(spec)
    (error,) = refused.value.errors()
    assert error["loc"] == ("parameterLimits",)
    assert "replicas.a.a.a is nested deeper than 4 levels" in error["msg"]
    spec["parameterLimits"] = {"replicas": [1, 2]}
    assert CapabilityGrantSpec.model_validate(spec).parameter_limits == {"replicas": [1, 2]}

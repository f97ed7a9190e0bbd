"""A grant's parameter limits: a number is a maximum, a list the allowed values, anything else
must be equal, and a limit on a parameter the capability does not have fails closed."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from minds.domain.capabilities.authority import limit_problems

PARAMETERS: dict[str, Any] = {
    "namespace": "prod",
    "name": "atlas",
    "limit": 200,
    "sinceSeconds": 3600,
    "mask": True,
    "filter": None,
}


def test_no_limits_no_problems() -> None:
    assert limit_problems({}, PARAMETERS) == []


# -- numeric maximum -------------------------------------------------------------------------


def test_a_value_equal_to_the_maximum_passes() -> None:
    assert limit_problems({"limit": 200}, PARAMETERS) == []


def test_a_value_below_the_maximum_passes() -> None:
    assert limit_problems({"limit": 500}, PARAMETERS) == []
    assert limit_problems({"limit": 200.5}, PARAMETERS) == []


def test_a_value_above_the_maximum_fails_and_names_the_parameter() -> None:
    [problem] = limit_problems({"limit": 199}, PARAMETERS)
    assert problem.startswith("limit:")
    assert "maximum" in problem


def test_a_float_maximum_bounds_an_integer() -> None:
    assert limit_problems({"limit": 199.9}, PARAMETERS) != []


@pytest.mark.parametrize("value", [True, False])
def test_a_boolean_value_is_rejected_for_a_numeric_limit(value: bool) -> None:
    # False < 10 and True < 10 in Python; a boolean is still not a number within a maximum.
    assert limit_problems({"limit": 10}, {"limit": value}) != []


@pytest.mark.parametrize("value", ["5", None, [1], {"n": 1}])
def test_a_non_number_is_rejected_for_a_numeric_limit(value: Any) -> None:
    assert limit_problems({"limit": 10}, {"limit": value}) != []


@given(st.integers(-1000, 1000), st.integers(-1000, 1000))
def test_a_numeric_limit_is_exactly_a_maximum(limit: int, value: int) -> None:
    assert (limit_problems({"limit": limit}, {"limit": value}) == []) is (value <= limit)


# -- allowed values --------------------------------------------------------------------------


def test_a_value_in_the_list_passes() -> None:
    assert limit_problems({"namespace": ["staging", "prod"]}, PARAMETERS) == []


def test_a_value_not_in_the_list_fails() -> None:
    [problem] = limit_problems({"namespace": ["staging", "dev"]}, PARAMETERS)
    assert problem.startswith("namespace:")
    assert "one of" in problem


def test_an_empty_list_allows_nothing() -> None:
    assert limit_problems({"namespace": []}, PARAMETERS) != []


def test_a_list_of_numbers_is_allowed_values_not_a_maximum() -> None:
    assert limit_problems({"limit": [100, 200]}, PARAMETERS) == []
    assert limit_problems({"limit": [100, 300]}, PARAMETERS) != []


def test_a_boolean_is_not_among_allowed_numbers() -> None:
    assert limit_problems({"mask": [1]}, {"mask": True}) != []
    assert limit_problems({"mask": [0]}, {"mask": False}) != []
    assert limit_problems({"mask": [True]}, {"mask": True}) == []


def test_a_number_is_not_among_allowed_booleans() -> None:
    assert limit_problems({"limit": [True]}, {"limit": 1}) != []


# -- equality --------------------------------------------------------------------------------


def test_an_equal_scalar_passes() -> None:
    assert limit_problems({"mask": True, "name": "atlas"}, PARAMETERS) == []


def test_an_unequal_scalar_fails() -> None:
    [problem] = limit_problems({"mask": True}, PARAMETERS | {"mask": False})
    assert problem.startswith("mask:")
    [problem] = limit_problems({"name": "web"}, PARAMETERS)
    assert problem.startswith("name:")


def test_a_boolean_limit_is_equality_not_a_maximum() -> None:
    # True is an int in Python; as a limit it still means "exactly true".
    assert limit_problems({"mask": True}, {"mask": True}) == []
    assert limit_problems({"mask": False}, {"mask": True}) != []


def test_a_boolean_limit_does_not_admit_a_number() -> None:
    assert limit_problems({"limit": True}, {"limit": 1}) != []
    assert limit_problems({"limit": False}, {"limit": 0}) != []


def test_a_null_limit_requires_null() -> None:
    assert limit_problems({"filter": None}, PARAMETERS) == []
    assert limit_problems({"filter": None}, PARAMETERS | {"filter": "error"}) != []


def test_a_mapping_limit_requires_an_equal_value() -> None:
    assert limit_problems({"labels": {"a": "b"}}, {"labels": {"a": "b"}}) == []
    assert limit_problems({"labels": {"a": "b"}}, {"labels": {"a": "c"}}) != []


# -- unknown parameters fail closed ----------------------------------------------------------


def test_a_limit_on_a_parameter_the_capability_lacks_fails_closed() -> None:
    [problem] = limit_problems({"replicas": 3}, PARAMETERS)
    assert problem.startswith("replicas:")
    assert "not a parameter" in problem


def test_a_field_name_resolves_through_the_aliases_given() -> None:
    aliases = {"since_seconds": "sinceSeconds"}
    assert limit_problems({"since_seconds": 3600}, PARAMETERS, aliases) == []
    [problem] = limit_problems({"since_seconds": 60}, PARAMETERS, aliases)
    assert problem.startswith("since_seconds:")
    # without the alias, the unknown spelling fails closed
    assert limit_problems({"since_seconds": 3600}, PARAMETERS) != []


def test_both_spellings_must_hold_when_both_are_given() -> None:
    aliases = {"since_seconds": "sinceSeconds"}
    limits = {"since_seconds": 7200, "sinceSeconds": 60}
    assert limit_problems(limits, PARAMETERS, aliases) != []


def test_every_problem_is_reported() -> None:
    limits = {"limit": 1, "namespace": ["dev"], "mask": False, "replicas": 1}
    problems = limit_problems(limits, PARAMETERS)
    assert [p.split(":")[0] for p in problems] == ["limit", "namespace", "mask", "replicas"]

"""The Plan spec policy freezes every field of the Plan model but the two that are written
once after creation: a field added to the model and not to the policy would be silently
mutable, so this test fails until the policy names it."""

from __future__ import annotations

import re

import yaml

from minds.domain.planning.model import Plan
from tests.fixtures.helm import CHART

POLICY = CHART / "files" / "corrections-policy.yaml"
#: Written once after creation: by a person to stop the plan, by the controller on replanning.
WRITTEN_ONCE = {"cancellation", "supersededBy"}


def _changed_expression() -> str:
    docs = [d for d in yaml.safe_load_all(POLICY.read_text()) if d]
    policy = next(
        d
        for d in docs
        if d["kind"] == "ValidatingAdmissionPolicy" and d["metadata"]["name"] == "minds-plan-spec"
    )
    return next(v["expression"] for v in policy["spec"]["variables"] if v["name"] == "changed")


def test_every_plan_field_but_the_written_once_ones_is_frozen() -> None:
    frozen = set(re.findall(r"\['(\w+)'\]", _changed_expression()))
    fields = {f.alias or name for name, f in Plan.model_fields.items()}
    assert frozen == fields - WRITTEN_ONCE


def test_each_frozen_field_is_compared_presence_and_value() -> None:
    expression = _changed_expression()
    for field in re.findall(r"\['(\w+)'\]", expression):
        assert (
            f"(has(object.spec.{field}) ? has(oldObject.spec.{field}) && "
            f"object.spec.{field} == oldObject.spec.{field} : !has(oldObject.spec.{field}))"
        ) in expression

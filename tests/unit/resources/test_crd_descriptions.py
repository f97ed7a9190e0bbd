"""Every field of every CRD has a description for ``kubectl explain``."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from minds.adapters.kube.crds import render_crd
from minds.domain.resources.descriptions import DESCRIPTIONS
from minds.domain.resources.kinds import KINDS, Kind
from tests.fixtures.helm import Helm

#: ObjectMeta: the API server describes it, and refuses a CRD that says anything of it.
SERVERS_OWN = {"metadata"}


def undescribed(node: dict[str, Any], path: str) -> Iterator[str]:
    """Every property under ``node`` without a description, as ``kubectl explain`` paths."""
    for name, sub in (node.get("properties") or {}).items():
        where = f"{path}.{name}"
        if "." not in path and name in SERVERS_OWN:
            assert sub == {"type": "object"}, where
            continue
        if not sub.get("description"):
            yield where
        yield from undescribed(sub, where)
    if isinstance(node.get("items"), dict):
        yield from undescribed(node["items"], path)
    if isinstance(node.get("additionalProperties"), dict):
        yield from undescribed(node["additionalProperties"], path)


def schema(crd: dict[str, Any]) -> dict[str, Any]:
    return crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]


@pytest.mark.parametrize("kind", KINDS, ids=lambda k: k.kind)
def test_every_generated_field_is_described(kind: Kind) -> None:
    assert list(undescribed(schema(render_crd(kind)), kind.singular)) == []


@pytest.mark.parametrize("kind", KINDS, ids=lambda k: k.kind)
def test_every_committed_field_is_described(kind: Kind, helm: Helm) -> None:
    """What a cluster gets: the chart's copy as helm renders it (``minds crds generate`` writes
    both copies)."""
    committed = helm.crds()[kind.crd_name]
    assert list(undescribed(schema(committed), kind.singular)) == []


def test_the_walk_finds_a_field_without_a_description() -> None:
    node = {"properties": {"spec": {"description": "s", "properties": {"caution": {}}}}}
    assert list(undescribed(node, "mind")) == ["mind.spec.caution"]


def test_the_table_names_only_fields_that_exist() -> None:
    """A stale line (a renamed or removed field) would describe nothing."""
    fields: dict[str, set[str]] = {}
    for kind in KINDS:
        for model in (kind.spec, kind.status):
            raw = model.model_json_schema(by_alias=True, mode="validation")
            for name, sub in {model.__name__: raw, **raw.get("$defs", {})}.items():
                fields.setdefault(name, set()).update(sub.get("properties") or {})
    for model_name, described in DESCRIPTIONS.items():
        assert model_name in fields, model_name
        assert set(described) <= fields[model_name], (
            model_name,
            set(described) - fields[model_name],
        )


def test_explain_tells_the_fields_the_issue_names() -> None:
    mind = schema(render_crd(KINDS[0]))["properties"]["spec"]["properties"]
    assert "risk" in mind["caution"]["description"]
    approval = next(k for k in KINDS if k.kind == "Approval")
    decision = schema(render_crd(approval))["properties"]["spec"]["properties"]["decision"]
    assert "Approved or Denied" in decision["description"]

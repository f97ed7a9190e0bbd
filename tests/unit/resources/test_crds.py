"""The CRDs under crds/ are generated from the models; these tests keep them honest."""

from __future__ import annotations

import re
from typing import Any

import pytest
import yaml
from pydantic import Field

from minds.adapters.kube.crds import SchemaError, model_schema, rendered_files
from minds.devenv.install import repo_root
from minds.domain.base import Model
from minds.domain.resources.common import NO_NUL
from minds.domain.resources.kinds import KINDS

REPO = repo_root()


def test_committed_crds_match_the_models() -> None:
    committed = {p.name: p.read_text() for p in (REPO / "crds").glob("*.yaml")}
    assert committed == rendered_files(), "run `minds crds generate` and commit the result"


def _walk(node: Any, path: str = "") -> list[tuple[str, dict[str, Any]]]:
    out: list[tuple[str, dict[str, Any]]] = []
    if isinstance(node, dict):
        out.append((path, node))
        for key, value in node.get("properties", {}).items():
            out += _walk(value, f"{path}.{key}")
        if "items" in node:
            out += _walk(node["items"], f"{path}[]")
        if isinstance(node.get("additionalProperties"), dict):
            out += _walk(node["additionalProperties"], f"{path}{{}}")
    return out


@pytest.mark.parametrize("kind", KINDS, ids=lambda k: k.kind)
def test_schemas_are_structural(kind: Any) -> None:
    """Every node has a type (or is explicitly free-form); no $ref, anyOf or null types."""
    crd = yaml.safe_load(rendered_files()[f"{kind.crd_name}.yaml"])
    schema = crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
    text = yaml.safe_dump(schema)
    assert "$ref" not in text
    assert "anyOf" not in text
    assert "'null'" not in text
    for path, node in _walk(schema):
        assert node.get("type") or node.get("x-kubernetes-preserve-unknown-fields"), path


@pytest.mark.parametrize("kind", KINDS, ids=lambda k: k.kind)
def test_names_columns_and_category(kind: Any) -> None:
    crd = yaml.safe_load(rendered_files()[f"{kind.crd_name}.yaml"])
    names = crd["spec"]["names"]
    assert names["categories"] == ["minds-all"]
    # A category or short name spelled like a plural shadows it in kubectl.
    plurals = {k.plural for k in KINDS} | {k.singular for k in KINDS}
    assert not plurals & set(names["categories"])
    assert not (plurals - {kind.plural, kind.singular}) & set(names.get("shortNames", []))
    version = crd["spec"]["versions"][0]
    assert version["subresources"] == {"status": {}}
    assert any(c["name"] == "Age" for c in version["additionalPrinterColumns"])


def test_optional_fields_collapse_and_keep_their_rules() -> None:
    class Inner(Model):
        a: int

    class Outer(Model):
        inner: Inner | None = Field(
            default=None,
            json_schema_extra={"x-kubernetes-validations": [{"rule": "true", "message": "m"}]},
        )
        free: dict[str, Any] = Field(default_factory=dict)

    schema = model_schema(Outer)
    inner = schema["properties"]["inner"]
    assert inner["type"] == "object"
    assert inner["properties"]["a"]["type"] == "integer"
    assert inner["x-kubernetes-validations"] == [{"rule": "true", "message": "m"}]
    assert "default" not in inner
    assert schema["properties"]["free"]["x-kubernetes-preserve-unknown-fields"] is True


def test_real_unions_are_refused() -> None:
    class Either(Model):
        value: int | str

    with pytest.raises(SchemaError):
        model_schema(Either)


def _contains_none(value: Any) -> bool:
    if value is None:
        return True
    if isinstance(value, dict):
        return any(_contains_none(v) for v in value.values())
    if isinstance(value, list):
        return any(_contains_none(v) for v in value)
    return False


@pytest.mark.parametrize("kind", KINDS, ids=lambda k: k.kind)
def test_defaults_carry_no_nulls(kind: Any) -> None:
    """The API server validates defaults against their own schema; a null fails it."""
    crd = yaml.safe_load(rendered_files()[f"{kind.crd_name}.yaml"])
    schema = crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
    for path, node in _walk(schema):
        assert not _contains_none(node.get("default", 0)), path


#: Nodes that stay unbounded, each with the reason. Everything else a person can write is
#: bounded, so the API server refuses oversized input with the field named.
UNBOUNDED_ALLOWED: dict[str, str] = {
    # Written only by the controller (the status subresource is the controller's alone), from
    # what a capability reported; nothing a person or a model writes lands here.
    "Plan.status.steps[].observation.fields": "controller-written observation",
}


def _schema_nodes() -> list[tuple[str, dict[str, Any]]]:
    nodes: list[tuple[str, dict[str, Any]]] = []
    for kind in KINDS:
        crd = yaml.safe_load(rendered_files()[f"{kind.crd_name}.yaml"])
        root = crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
        for part in ("spec", "status"):
            nodes += _walk(root["properties"][part], f"{kind.kind}.{part}")
    return nodes


def _unbounded(node: dict[str, Any]) -> str | None:
    kind = node.get("type")
    if kind == "string" and "maxLength" not in node and "enum" not in node:
        return None if node.get("format") == "date-time" else "string without maxLength"
    if kind == "array" and "maxItems" not in node:
        return "array without maxItems"
    free = node.get("x-kubernetes-preserve-unknown-fields") or "additionalProperties" in node
    if free and "maxProperties" not in node:
        return "free-form object without maxProperties"
    return None


def test_every_string_list_and_map_is_bounded() -> None:
    found = {
        path: why
        for path, node in _schema_nodes()
        if (why := _unbounded(node)) and path not in UNBOUNDED_ALLOWED
    }
    assert found == {}
    stale = set(UNBOUNDED_ALLOWED) - {path for path, node in _schema_nodes() if _unbounded(node)}
    assert not stale, f"bounded now, drop from the allow-list: {stale}"


def test_every_free_text_string_refuses_nul() -> None:
    """A string no pattern, enum or format confines carries the NUL rule: Postgres cannot store
    U+0000, and a Mind admitted with one would fail every ledger write that quotes it."""
    bare = [
        path
        for path, node in _schema_nodes()
        if node.get("type") == "string"
        and not any(k in node for k in ("enum", "pattern", "format"))
        and NO_NUL not in node.get("x-kubernetes-validations", [])
    ]
    assert bare == []
    assert sum(NO_NUL in node.get("x-kubernetes-validations", []) for _, node in _schema_nodes())


def test_patterned_strings_cannot_hold_nul() -> None:
    """The strings left without the rule are confined by their pattern, which no NUL matches."""
    patterns = {
        path: node["pattern"]
        for path, node in _schema_nodes()
        if node.get("type") == "string" and "pattern" in node
    }
    assert patterns
    admits_nul = {
        p: r for p, r in patterns.items() if re.search(r, "\x00") or re.search(r, "a\x00")
    }
    assert admits_nul == {}

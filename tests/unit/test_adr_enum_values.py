"""docs/adr/0001-enum-values.md lists every enum field of the CRDs and its style: a field added,
removed or restyled without the ADR fails here, so the decision is taken again, not forgotten."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import yaml

REPO = Path(__file__).resolve().parents[2]
ADR = REPO / "docs" / "adr" / "0001-enum-values.md"
_ROW = re.compile(r"^\| `([^`]+)` \| (lower|CamelCase) \| (.+) \|$", re.MULTILINE)
_CAMEL = re.compile(r"^[A-Z][A-Za-z]*$")


def _enums(node: dict[str, Any], path: str) -> Iterator[tuple[str, list[str]]]:
    if node.get("type") == "string" and "enum" in node:
        yield path, node["enum"]
    for name, sub in (node.get("properties") or {}).items():
        yield from _enums(sub, f"{path}.{name}")
    if isinstance(node.get("items"), dict):
        yield from _enums(node["items"], f"{path}[]")


def crd_enums() -> dict[str, list[str]]:
    found: dict[str, list[str]] = {}
    for path in sorted((REPO / "crds").glob("*.minds.dev.yaml")):
        crd = yaml.safe_load(path.read_text())
        root = crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
        found.update(_enums(root, crd["spec"]["names"]["kind"]))
    return found


def style(values: list[str]) -> str:
    return "CamelCase" if all(_CAMEL.match(v) for v in values) else "lower"


def test_the_adr_lists_every_enum_field_with_its_style() -> None:
    listed = {field: kind for field, kind, _ in _ROW.findall(ADR.read_text())}
    assert listed == {field: style(values) for field, values in crd_enums().items()}


def test_the_counts_the_adr_gives_are_the_crds() -> None:
    styles = [style(v) for v in crd_enums().values()]
    text = ADR.read_text()
    assert f"{len(styles)} enum fields" in text
    assert f"{styles.count('lower')} are lower or snake case" in text

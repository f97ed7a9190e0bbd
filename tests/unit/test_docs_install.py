"""docs/install.md's values reference is the chart's schema, rendered: it cannot drift."""

from __future__ import annotations

import json

from minds.devenv.chart_values import BEGIN, END, values_reference, with_reference
from minds.devenv.install import repo_root

REPO = repo_root()
CHART = REPO / "charts" / "minds-operator"
DOC = REPO / "docs" / "install.md"


def test_the_values_reference_is_generated_from_the_schema() -> None:
    doc = DOC.read_text()
    assert with_reference(doc, values_reference(CHART)) == doc, (
        "run `python -m minds.devenv.chart_values` and commit docs/install.md"
    )


def test_every_schema_value_has_a_row_and_a_description() -> None:
    doc = DOC.read_text()
    table = doc[doc.index(BEGIN) : doc.index(END)]
    schema = json.loads((CHART / "values.schema.json").read_text())
    for key, sub in schema["properties"].items():
        assert f"| `{key}" in table, key
        assert sub.get("description"), f"{key} has no description in values.schema.json"

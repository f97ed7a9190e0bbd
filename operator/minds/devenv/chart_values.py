"""The chart's values reference, generated from values.schema.json and values.yaml.

docs/install.md carries the table between two markers; a test keeps it equal to what this
module renders, so the reference cannot drift from the schema that ``helm`` enforces.
Regenerate with ``python -m minds.devenv.chart_values``.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import yaml

BEGIN = "<!-- values reference: generated from values.schema.json; do not edit -->"
END = "<!-- end of values reference -->"


def _leaves(
    schema: dict[str, Any], defaults: Any, path: str = ""
) -> Iterator[tuple[str, dict[str, Any], Any]]:
    props = schema.get("properties")
    if schema.get("type") == "object" and props:
        for key, sub in props.items():
            value = defaults.get(key) if isinstance(defaults, dict) else None
            yield from _leaves(sub, value, f"{path}.{key}" if path else key)
        return
    yield path, schema, defaults


def _type(schema: dict[str, Any]) -> str:
    kind = schema.get("type", "any")
    kinds = kind if isinstance(kind, list) else [kind]
    if kinds == ["array"]:
        return f"list of {schema.get('items', {}).get('type', 'any')}"
    if "enum" in schema:
        return " \\| ".join(f"`{v}`" for v in schema["enum"])
    return " or ".join(kinds)


def values_reference(chart: Path) -> str:
    """The Markdown table of every value: key, type, default and what it does."""
    schema = json.loads((chart / "values.schema.json").read_text())
    defaults = yaml.safe_load((chart / "values.yaml").read_text())
    rows = ["| Value | Type | Default | Description |", "|---|---|---|---|"]
    for path, sub, default in _leaves(schema, defaults):
        shown = json.dumps(default) if default not in (None, "") else '""' if default == "" else ""
        rows.append(
            f"| `{path}` | {_type(sub)} | {f'`{shown}`' if shown else ''} | "
            f"{sub.get('description', '')} |"
        )
    return "\n".join(rows) + "\n"


def with_reference(doc: str, reference: str) -> str:
    """``doc`` with the text between the markers replaced by ``reference``."""
    head, rest = doc.split(BEGIN, 1)
    _old, tail = rest.split(END, 1)
    return f"{head}{BEGIN}\n{reference}{END}{tail}"


if __name__ == "__main__":  # pragma: no cover - a maintainer's command
    from minds.devenv.install import repo_root

    root = repo_root()
    doc = root / "docs" / "install.md"
    doc.write_text(
        with_reference(doc.read_text(), values_reference(root / "charts" / "minds-operator"))
    )

"""A plan's dependency graph in Graphviz DOT, for `minds plan show --dot | dot -Tsvg`.

Edges point from a dependency to the step that waits for it, the direction work flows. Nodes
are coloured by step status; edges on a dependency cycle are red, and a dependency that names
no step of the plan points from a dashed node, so an invalid draft is as readable as a valid
plan.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from minds.cli.plan_render import step_states, step_status
from minds.domain.planning.graph import cycles, dependency_graph, topological_order
from minds.domain.planning.model import Plan, Step

FILL = {
    "pending": "white",
    "ready": "lightyellow",
    "executing": "lightblue",
    "awaiting_approval": "orange",
    "awaiting_grant": "orange",
    "waiting": "lightcyan",
    "completed": "palegreen",
    "failed": "salmon",
    "skipped": "lightgrey",
    "blocked": "salmon",
    "cancelled": "lightgrey",
}


def quote(text: str) -> str:
    """A DOT string literal; newlines become DOT's own line breaks."""
    escaped = text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")
    return f'"{escaped}"'


def render_dot(spec: Plan, status: Mapping[str, Any], name: str = "plan") -> str:
    by_key: dict[str, Step] = {}
    for step in spec.steps:
        by_key.setdefault(step.key, step)
    graph = dependency_graph(spec.steps, by_key)
    _, left = topological_order(graph)
    cycle_of = {key: n for n, group in enumerate(cycles(graph, left)) for key in group}
    states = step_states(status)
    lines = [
        f"digraph {quote(name)} {{",
        f"  graph [rankdir=TB, labelloc=t, label={quote(spec.objective)}];",
        '  node [shape=box, style="rounded,filled", fontname="Helvetica"];',
    ]
    for key, step in by_key.items():
        state = step_status(states, key)
        label = f"{key} · {step.kind}\n{step.title}\n[{state}]"
        fill = FILL.get(state, "white")
        lines.append(f"  {quote(key)} [label={quote(label)}, fillcolor={quote(fill)}];")
    missing: list[str] = []
    for key, step in by_key.items():
        for dep in step.depends_on:
            if dep == key:
                lines.append(f"  {quote(key)} -> {quote(key)} [color=red];")
            elif dep not in by_key:
                missing.append(dep)
                lines.append(f"  {quote(dep)} -> {quote(key)} [style=dashed, color=red];")
            else:
                attrs = []
                if step.verifies == dep:
                    attrs.append('label="verifies"')
                if dep in cycle_of and cycle_of.get(key) == cycle_of[dep]:
                    attrs.append("color=red")
                suffix = f" [{', '.join(attrs)}]" if attrs else ""
                lines.append(f"  {quote(dep)} -> {quote(key)}{suffix};")
    for dep in dict.fromkeys(missing):
        label = f"{dep}\n(not a step of this plan)"
        lines.append(f"  {quote(dep)} [label={quote(label)}, style=dashed, color=red];")
    lines.append("}")
    return "\n".join(lines) + "\n"

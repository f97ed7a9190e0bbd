"""The dependency graph of a plan: Kahn's algorithm and the cycles it leaves behind.

Validation uses it to judge a plan and report a topological order; scoring uses it to find the
longest path through the plan.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from minds.domain.planning.model import Step


def dependency_graph(steps: Sequence[Step], by_key: Mapping[str, Step]) -> dict[str, list[str]]:
    """Each step's known dependencies (self-dependencies and unknown keys left out)."""
    graph: dict[str, list[str]] = {}
    for step in steps:
        if step.key in graph:
            continue
        graph[step.key] = sorted(
            {d for d in step.depends_on if d in by_key and d != step.key},
            key=list(by_key).index,
        )
    return graph


def topological_order(graph: Mapping[str, Sequence[str]]) -> tuple[list[str], set[str]]:
    """Kahn's algorithm. Returns the order found and the steps left over (on or after a cycle).

    Ties are broken by the steps' position in the plan, so the order is deterministic and reads
    like the plan where the graph allows.
    """
    position = {key: i for i, key in enumerate(graph)}
    waiting_on = {key: len(deps) for key, deps in graph.items()}
    dependents: dict[str, list[str]] = {key: [] for key in graph}
    for key, deps in graph.items():
        for dep in deps:
            dependents[dep].append(key)
    ready = sorted((k for k, n in waiting_on.items() if n == 0), key=position.__getitem__)
    order: list[str] = []
    while ready:
        key = ready.pop(0)
        order.append(key)
        for dependent in dependents[key]:
            waiting_on[dependent] -= 1
            if waiting_on[dependent] == 0:
                ready.append(dependent)
                ready.sort(key=position.__getitem__)
    return order, set(graph) - set(order)


def cycles(graph: Mapping[str, Sequence[str]], among: set[str]) -> list[list[str]]:
    """The strongly connected groups of more than one step among `among`, in plan order.

    These are exactly the steps that lie on some dependency cycle; steps that only come after
    a cycle are left out, so the error names the steps involved and no others.
    """
    order = [key for key in graph if key in among]

    def reach(start: str) -> set[str]:
        seen: set[str] = set()
        stack = [start]
        while stack:
            for dep in graph[stack.pop()]:
                if dep in among and dep not in seen:
                    seen.add(dep)
                    stack.append(dep)
        return seen

    reachable = {key: reach(key) for key in order}
    groups: list[list[str]] = []
    placed: set[str] = set()
    for key in order:
        if key in placed or key not in reachable[key]:
            continue
        group = [other for other in order if other in reachable[key] and key in reachable[other]]
        placed.update(group)
        groups.append(group)
    return groups


def cycle_path(graph: Mapping[str, Sequence[str]], group: Sequence[str]) -> list[str]:
    """One concrete cycle through the group's first step, following dependencies."""
    members = set(group)
    start = group[0]
    path = [start]
    seen = {start}
    current = start
    while True:
        nxt = next(d for d in graph[current] if d in members)
        if nxt in seen:
            return [*path[path.index(nxt) :], nxt]
        path.append(nxt)
        seen.add(nxt)
        current = nxt

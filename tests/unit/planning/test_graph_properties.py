"""Random step graphs: validation accepts exactly the acyclic ones, names every cycle's steps,
and any order it reports respects every dependency.

The oracle is the standard library's `graphlib`, an implementation independent of ours.
"""

from __future__ import annotations

from graphlib import CycleError, TopologicalSorter

from hypothesis import given, settings
from hypothesis import strategies as st

from minds.domain.planning.model import IssueCode, Plan

from .builders import check, plan, wait

Graph = dict[str, list[str]]


@st.composite
def graphs(draw: st.DrawFn, *, self_loops: bool = False) -> Graph:
    size = draw(st.integers(min_value=1, max_value=12))
    keys = [f"S{i}" for i in range(size)]
    graph: Graph = {}
    for key in keys:
        candidates = keys if self_loops else [k for k in keys if k != key]
        graph[key] = (
            draw(st.lists(st.sampled_from(candidates), unique=True, max_size=4))
            if (candidates)
            else []
        )
    return graph


def _on_a_cycle(graph: Graph) -> set[str]:
    """Steps from which a path of dependencies leads back to themselves."""
    on_cycle = set()
    for start in graph:
        seen: set[str] = set()
        stack = list(graph[start])
        while stack:
            key = stack.pop()
            if key == start:
                on_cycle.add(start)
                break
            if key not in seen:
                seen.add(key)
                stack.extend(graph[key])
    return on_cycle


def _acyclic(graph: Graph) -> bool:
    try:
        tuple(TopologicalSorter(graph).static_order())
    except CycleError:
        return False
    return True


def _plan(graph: Graph) -> Plan:
    return plan(*(wait(key, *deps) for key, deps in graph.items()))


@settings(max_examples=300)
@given(graphs())
def test_validation_accepts_exactly_the_acyclic_graphs(graph: Graph) -> None:
    result = check(_plan(graph))
    assert result.ok == _acyclic(graph)


@settings(max_examples=300)
@given(graphs())
def test_cycle_errors_name_exactly_the_steps_on_cycles(graph: Graph) -> None:
    result = check(_plan(graph))
    cycle_errors = [i for i in result.errors if i.code is IssueCode.DEPENDENCY_CYCLE]
    named = {key for issue in cycle_errors for key in issue.steps or []}
    assert named == _on_a_cycle(graph)
    cycle = _a_cycle_found_by_graphlib(graph)
    assert set(cycle) <= named


def _a_cycle_found_by_graphlib(graph: Graph) -> list[str]:
    try:
        tuple(TopologicalSorter(graph).static_order())
    except CycleError as error:
        return list(error.args[1])
    return []


@settings(max_examples=300)
@given(graphs())
def test_a_reported_order_respects_every_dependency(graph: Graph) -> None:
    result = check(_plan(graph))
    if result.order is None:
        assert not _acyclic(graph)
        return
    assert sorted(result.order) == sorted(graph)
    position = {key: i for i, key in enumerate(result.order)}
    for key, deps in graph.items():
        for dep in deps:
            assert position[dep] < position[key]


@given(graphs(self_loops=True))
def test_self_dependencies_are_errors_of_their_own(graph: Graph) -> None:
    result = check(_plan(graph))
    looped = {key for key, deps in graph.items() if key in deps}
    reported = {i.step for i in result.errors if i.code is IssueCode.SELF_DEPENDENCY}
    assert reported == looped
    if looped:
        assert not result.ok

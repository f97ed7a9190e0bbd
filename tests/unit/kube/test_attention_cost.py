"""What the Mind's NeedsAttention condition costs to read, after each plan that ends: with the
real watch store holding 1,000 plans of the Mind that wait and do not ask anything, only the
two that ask are copied and parsed. Counted, not timed."""

from __future__ import annotations

from typing import Any

import pytest

from minds.adapters.kube import watched
from minds.adapters.kube.watched import WatchedResources, WatchStore
from minds.domain.resources.kinds import APPROVAL, PLAN
from minds.engine.attention_reading import read_open
from tests.fakes.ledger import FakeLedger

WAITING = 1_000


def plan(n: int, phase: str, step: str) -> dict[str, Any]:
    return {
        "metadata": {"namespace": "shop", "name": f"p{n}", "uid": f"u{n}", "resourceVersion": "1"},
        "spec": {"mind": "keeper"},
        "status": {"phase": phase, "steps": [{"key": "S1", "status": step}]},
    }


def test_reading_what_needs_a_person_copies_only_what_may_ask(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    store = WatchStore([PLAN.plural, APPROVAL.plural])
    for n in range(WAITING):
        store.observe(PLAN.plural, plan(n, "waiting", "running"))
    store.observe(PLAN.plural, plan(WAITING, "awaiting_approval", "awaiting_approval"))
    store.observe(PLAN.plural, plan(WAITING + 1, "executing", "blocked"))
    store.primed()
    copies = 0
    real = watched._Held.copy

    def counted(held: Any) -> dict[str, Any]:
        nonlocal copies
        copies += 1
        return real(held)

    monkeypatch.setattr(watched._Held, "copy", counted)
    held = read_open(FakeLedger(), WatchedResources(store, api=None), "shop", "keeper")  # type: ignore[arg-type]
    assert sorted(p.name for p in held.plans) == [f"p{WAITING}", f"p{WAITING + 1}"]
    assert copies == 2

"""Admission runs on every watch event of a Plan; once the plan runs, it reads nothing."""

from __future__ import annotations

from typing import Any

import pytest

from minds.domain.capabilities.registry import REGISTRY
from minds.domain.resources.kinds import PLAN, Kind
from minds.engine.plan_service import PlanService
from tests.fakes.ledger import LedgerUnavailable
from tests.unit.engine.harness import NAMESPACE, World, read


def _admission(world: World) -> PlanService:
    return PlanService(
        resources=world.resources,
        ledger=world.ledger,
        events=world.events,
        clock=world.clock,
        registry=REGISTRY,
    )


def _counting_reads(world: World, monkeypatch: pytest.MonkeyPatch) -> list[str]:
    seen: list[str] = []
    get = world.resources.get

    def counted(kind: Kind, namespace: str, name: str) -> dict[str, Any]:
        seen.append(kind.kind)
        return get(kind, namespace, name)

    monkeypatch.setattr(world.resources, "get", counted)
    return seen


def test_a_running_plan_is_admitted_without_reading_its_mind(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    world = World()
    world.plan("heal", [read("R1"), read("R2", "R1")])
    world.executor("a").tick(NAMESPACE, "heal")
    assert world.steps("heal")["R1"] != "pending"
    seen = _counting_reads(world, monkeypatch)
    admission = _admission(world).admit(NAMESPACE, "heal")
    assert not admission.changed
    assert "Mind" not in seen


def test_a_plan_not_yet_running_is_admitted_against_its_mind(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    world = World()
    world.plan("heal", [read("R1")])
    seen = _counting_reads(world, monkeypatch)
    _admission(world).admit(NAMESPACE, "heal")
    assert "Mind" in seen


def test_a_plan_is_recorded_before_it_is_shown_validated() -> None:
    """The ledger first: a ledger that fails during admission leaves the Plan unvalidated, so
    the admission tried again records it and shows it. Written the other way round, the status
    would say validated and the next try would find nothing to change: never recorded."""
    world = World()
    world.resources.create(
        PLAN,
        NAMESPACE,
        {
            "metadata": {"name": "heal"},
            "spec": {
                "objective": "keep atlas-worker running",
                "origin": "operator",
                "strategy": "authored",
                "mind": "keeper",
                "steps": [read("R1")],
            },
        },
    )
    world.ledger.fail_next_append = True
    with pytest.raises(LedgerUnavailable):
        _admission(world).admit(NAMESPACE, "heal")
    assert "status" not in world.resources.get(PLAN, NAMESPACE, "heal")

    assert _admission(world).admit(NAMESPACE, "heal").changed
    assert world.resources.get(PLAN, NAMESPACE, "heal")["status"]["phase"] == "validated"
    uid = world.resources.get(PLAN, NAMESPACE, "heal")["metadata"]["uid"]
    assert [e.type for e in world.ledger.events(subject_uid=uid)] == ["plan_validated"]

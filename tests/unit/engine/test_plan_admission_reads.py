"""Admission runs on every watch event of a Plan; once the plan runs, it reads nothing."""

from __future__ import annotations

from typing import Any

import pytest

from minds.domain.capabilities.registry import REGISTRY
from minds.domain.resources.kinds import Kind
from minds.engine.plan_service import PlanService
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

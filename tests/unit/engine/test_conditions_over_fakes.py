"""Conditions ride in the status write that changes the phase: every Plan and grant status the
engine writes carries the conditions of its phase, and no write is made for them alone."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest

from minds.domain.resources.kinds import CAPABILITY_GRANT, PLAN, Kind
from tests.unit.engine.harness import NAMESPACE, World, read, restart

PROGRESSING = {
    "validated": "True",
    "executing": "True",
    "waiting": "True",
    "completed": "False",
    "failed": "False",
}


def spy(world: World, monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, dict[str, Any]]]:
    written: list[tuple[str, dict[str, Any]]] = []
    real = world.resources.replace_status

    def replace_status(kind: Kind, body: dict[str, Any], status: dict[str, Any]) -> Any:
        written.append((kind.kind, status))
        return real(kind, body, status)

    monkeypatch.setattr(world.resources, "replace_status", replace_status)
    return written


def conditions(status: dict[str, Any]) -> dict[str, str]:
    return {c["type"]: c["status"] for c in status.get("conditions") or []}


def test_every_plan_status_written_carries_the_conditions_of_its_phase(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    world = World()
    written = spy(world, monkeypatch)
    world.plan("heal", [read("R1"), restart("P1", "R1")])
    executor = world.executor("a")
    world.run(executor, "heal", until=lambda: world.steps("heal")["P1"] == "completed")
    executor.tick(NAMESPACE, "heal")
    plans = [status for kind, status in written if kind == PLAN.kind]
    assert plans, "the plan's status was written"
    for status in plans:
        shown = conditions(status)
        assert shown["Validated"] == "True"
        assert shown["Progressing"] == PROGRESSING[status["phase"]], status["phase"]
    final = world.resources.get(PLAN, NAMESPACE, "heal")["status"]
    assert conditions(final) == {
        "Validated": "True",
        "Progressing": "False",
        "Complete": "True",
        "Failed": "False",
    }
    # As many writes as phases and steps need: none of them for a condition alone.
    assert len(plans) == len({(s["phase"], str(s["steps"])) for s in plans})


def test_a_grant_shows_active_then_expired(monkeypatch: pytest.MonkeyPatch) -> None:
    world = World()
    now = world.clock()
    world.resources.create(
        CAPABILITY_GRANT,
        NAMESPACE,
        {
            "metadata": {"name": "g"},
            "spec": {
                "mind": "keeper",
                "capability": "service.restart",
                "targetPattern": "shop/atlas-*",
                "expiresAt": (now + timedelta(minutes=5)).isoformat(),
                "operationCap": 2,
                "reason": "a test",
            },
        },
    )
    grants = world.engine().grants
    grants.reconcile(NAMESPACE, "g")
    status = world.resources.get(CAPABILITY_GRANT, NAMESPACE, "g")["status"]
    assert conditions(status) == {"Active": "True", "Exhausted": "False", "Expired": "False"}
    written = spy(world, monkeypatch)
    grants.reconcile(NAMESPACE, "g")
    assert written == []  # nothing changed: nothing written, conditions included
    world.clock.advance(timedelta(minutes=6))
    grants.reconcile(NAMESPACE, "g")
    status = world.resources.get(CAPABILITY_GRANT, NAMESPACE, "g")["status"]
    assert conditions(status) == {"Active": "False", "Exhausted": "False", "Expired": "True"}
    assert len(written) == 1

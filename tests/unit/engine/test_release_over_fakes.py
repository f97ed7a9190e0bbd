"""The controller's own hold on a release, over the fakes of its ports: the annotation is
parsed whole and the name checked against the Mind before a blocked step runs again. Admission
refuses all of these first (tests/e2e/test_person_acts.py); this is what holds when a value got
past it (a cluster without the policy, a policy switched off), since status and annotations
are never authority by themselves."""

from __future__ import annotations

from typing import Any

import pytest

from minds.domain.resources.kinds import MIND
from tests.unit.engine.harness import NAMESPACE, World, read

CONTROLLER = "system:serviceaccount:minds-system:minds-controller"


def blocked(approvers: dict[str, Any]) -> World:
    """R2 blocked by the plan's budget, in a world whose Mind names ``approvers``."""
    world = World()
    mind = world.resources.get(MIND, NAMESPACE, "keeper")
    world.resources.delete(MIND, NAMESPACE, "keeper", mind["metadata"]["uid"])
    spec = {**mind["spec"], "approvers": approvers}
    world.resources.create(MIND, NAMESPACE, {"metadata": {"name": "keeper"}, "spec": spec})
    world.plan("thrifty", [read("R1"), read("R2", "R1")], budget={"invocations": 1})
    world.run(
        world.executor("a"), "thrifty", until=lambda: world.steps("thrifty")["R2"] == "blocked"
    )
    return world


def released_by(world: World) -> list[str]:
    return [e.payload["by"] for e in world.ledger.events(type="plan_step_released")]


@pytest.mark.parametrize(
    ("value", "said"),
    [
        pytest.param("R2:alice:approver", "alice:approver is not an approver", id="suffix"),
        pytest.param("R2", "must be STEP:USERNAME", id="no-name"),
        pytest.param("X9:approver", "names step 'X9'", id="unknown-step"),
        pytest.param(f"R2:{CONTROLLER}", "is a service account", id="controller"),
        pytest.param("R2:admin", "admin is not an approver of mind keeper", id="not-named"),
    ],
)
def test_a_release_the_controller_cannot_trust_releases_nothing(value: str, said: str) -> None:
    world = blocked({"users": ["approver"]})
    assert world.executor("a").release(NAMESPACE, "thrifty", value) is False
    assert world.steps("thrifty")["R2"] == "blocked"
    assert released_by(world) == []
    [(name, type_, _, message)] = [p for p in world.events.posted if p[2] == "ReleaseRefused"]
    assert (name, type_) == ("thrifty", "Warning")
    assert said in message, message


def test_a_mind_that_is_gone_lets_nobody_release() -> None:
    world = blocked({"users": ["approver"]})
    mind = world.resources.get(MIND, NAMESPACE, "keeper")
    world.resources.delete(MIND, NAMESPACE, "keeper", mind["metadata"]["uid"])
    assert world.executor("a").release(NAMESPACE, "thrifty", "R2:approver") is False
    assert "mind keeper is gone" in world.events.posted[-1][3]
    assert released_by(world) == []


def test_a_named_approver_releases_in_their_exact_name() -> None:
    world = blocked({"users": ["approver"]})
    assert world.executor("a").release(NAMESPACE, "thrifty", "R2:approver") is True
    assert released_by(world) == ["approver"]
    assert "ReleaseRefused" not in world.events.reasons()

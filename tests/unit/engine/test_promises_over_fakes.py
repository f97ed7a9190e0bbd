"""A Mind deleted and created again under its name keeps the irrevocable promises the earlier
object made, run by the real services over the fakes: the capability layer refuses what a kept
`refrain` forbids and names the promise, a declaration that repeats it binds once, and what the
earlier objects declared is read from the ledger once per Mind object."""

from __future__ import annotations

from typing import Any

import pytest

from minds.domain.resources.kinds import MIND
from minds.engine import promises as promises_module
from minds.engine.mind_service import MindService
from minds.engine.promises import Promises
from tests.fakes.ledger import FakeLedger
from tests.unit.engine.harness import NAMESPACE, WORKLOAD, World, restart
from tests.unit.engine.test_budgets_over_fakes import drive

ALLOW_RESTART = [{"capability": "service.restart", "decision": "allow"}]
FREEZE = {
    "name": "freeze",
    "mode": "refrain",
    "capability": "service.restart",
    "target": f"{NAMESPACE}/{WORKLOAD['name']}",
    "revocable": False,
}


def registered(world: World, **spec: Any) -> None:
    """The Mind `keeper` (re)created with ``spec`` and registered, as the controller does."""
    old = world.resources.get(MIND, NAMESPACE, "keeper")
    world.resources.delete(MIND, NAMESPACE, "keeper", old["metadata"]["uid"])
    world.resources.create(MIND, NAMESPACE, {"metadata": {"name": "keeper"}, "spec": spec})
    MindService(
        resources=world.resources,
        ledger=world.ledger,
        events=world.events,
        clock=world.clock,
        capabilities=frozenset(world.registry.names()),
        promises=Promises(world.ledger),
    ).reconcile(NAMESPACE, "keeper")


def restarted(world: World, name: str) -> dict[str, Any]:
    world.plan(name, [restart("P1")])
    drive(world, name)
    return world.step(name, "P1")


def test_a_recreated_mind_keeps_the_earlier_objects_irrevocable_refrain() -> None:
    world = World()
    registered(world, capabilityPolicy=ALLOW_RESTART, commitments=[FREEZE])
    assert "refrains from service.restart" in restarted(world, "first")["reason"]
    registered(world, capabilityPolicy=ALLOW_RESTART)  # delete, create without it

    assert world.events.reasons("keeper").count("PromiseKept") == 1
    kept = [r for r in world.ledger.rows if r.type == "promise_kept"]
    assert [r.payload["commitment"]["name"] for r in kept] == ["freeze"]  # type: ignore[index]

    refused = restarted(world, "second")
    assert refused["status"] == "failed"
    assert "promise freeze (irrevocable, made by the Mind keeper of uid" in refused["reason"]
    assert world.driver.calls["service.restart"] == 0


def test_a_declaration_that_repeats_the_promise_binds_once_under_its_own_name() -> None:
    world = World()
    registered(world, capabilityPolicy=ALLOW_RESTART, commitments=[FREEZE])
    registered(world, capabilityPolicy=ALLOW_RESTART, commitments=[FREEZE])
    assert "PromiseKept" not in world.events.reasons("keeper")
    refused = restarted(world, "again")
    assert "commitments[0] (freeze) refrains" in refused["reason"]
    assert "promise" not in refused["reason"]


def test_a_revocable_declaration_of_the_same_name_does_not_weaken_the_promise() -> None:
    world = World()
    registered(world, capabilityPolicy=ALLOW_RESTART, commitments=[FREEZE])
    weaker = {**FREEZE, "revocable": True}
    registered(
        world,
        capabilityPolicy=ALLOW_RESTART,
        commitments=[weaker],
        commitmentRevocations=[
            {"commitment": "freeze", "by": "mallory", "reason": "no longer needed"}
        ],
    )
    refused = restarted(world, "revoked")
    assert "promise freeze" in refused["reason"]
    assert world.driver.calls["service.restart"] == 0


def test_an_object_that_never_promised_anything_restarts() -> None:
    world = World()
    registered(world, capabilityPolicy=ALLOW_RESTART, commitments=[{**FREEZE, "revocable": True}])
    registered(world, capabilityPolicy=ALLOW_RESTART)
    assert restarted(world, "free")["status"] == "completed"
    assert world.driver.calls["service.restart"] == 1


def test_what_earlier_objects_declared_is_read_once_per_mind_object() -> None:
    world = World()
    registered(world, capabilityPolicy=ALLOW_RESTART, commitments=[FREEZE])
    registered(world, capabilityPolicy=ALLOW_RESTART)
    reads: list[object] = []
    read = world.ledger.events

    def counted(**query: Any) -> Any:
        if query.get("type") is not None and "mind_registered" in query["type"]:
            reads.append(query)
        return read(**query)

    world.ledger.events = counted  # type: ignore[method-assign]
    executor = world.executor("a")
    for name in ("one", "two", "three"):
        world.plan(name, [restart("P1")])
        executor.tick(NAMESPACE, name)
    assert len(reads) == 1


def test_the_least_recently_read_mind_objects_are_forgotten_first(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(promises_module, "REMEMBERED", 2)
    ledger = FakeLedger()
    reads: list[str] = []
    read = ledger.events

    def counted(**query: Any) -> Any:
        reads.append(query["mind"])
        return read(**query)

    ledger.events = counted  # type: ignore[method-assign]
    book = Promises(ledger)
    for uid in ("u1", "u2", "u1", "u3", "u1", "u2"):
        book.earlier(NAMESPACE, "keeper", uid)
    # u1 is read again and again, so it stays; u2 was forgotten when u3 came.
    assert len(reads) == 4

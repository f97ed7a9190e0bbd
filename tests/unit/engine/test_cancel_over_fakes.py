"""A person cancels a plan (``spec.cancellation``): the executor stops it at a safe point, over
the fakes of its ports with a clock the test moves. The e2e suite
(tests/e2e/test_corrections.py) proves the same through the real API server and ledger."""

from __future__ import annotations

from typing import Any

import pytest

from minds.domain.intentions import IntentionStatus, intention_id
from minds.domain.resources.kinds import APPROVAL, MIND, PLAN, Kind
from minds.engine.approval_service import ApprovalService
from tests.unit.engine.harness import NAMESPACE, PAST_THE_LEASE, Crash, World, read, restart

CANCELLATION = {"by": "alice", "reason": "the incident is handled by hand"}


def stored(world: World, kind: Kind, name: str) -> dict[str, Any]:
    return world.resources._objects[(kind.plural, NAMESPACE, name)]


def cancel(world: World, name: str) -> None:
    """The patch a person sends: a new spec field, so a new resourceVersion."""
    body = stored(world, PLAN, name)
    body["spec"]["cancellation"] = dict(CANCELLATION)
    body["metadata"]["resourceVersion"] += "0"


def phase(world: World, name: str) -> str:
    return str(world.resources.get(PLAN, NAMESPACE, name)["status"]["phase"])


def ledger_types(world: World, name: str) -> list[str]:
    uid = world.resources.get(PLAN, NAMESPACE, name)["metadata"]["uid"]
    return [e.type for e in world.ledger.events(subject_uid=uid)]


def test_a_cancelled_plan_waiting_on_an_approval_stops_and_withdraws_it() -> None:
    world = World()
    spec = stored(world, MIND, "keeper")["spec"]
    spec["capabilityPolicy"] = [{"capability": "service.restart", "decision": "approve"}]
    spec["approvers"] = {"groups": ["sre"]}
    world.plan("heal", [read("R1"), restart("P1", "R1")])
    world.run(world.executor("a"), "heal", until=lambda: "approvalRef" in world.step("heal", "P1"))
    approval = world.step("heal", "P1")["approvalRef"]

    cancel(world, "heal")
    result = world.executor("a").tick(NAMESPACE, "heal")

    assert result.phase == "abandoned"
    assert result.wake_at is None
    assert phase(world, "heal") == "abandoned"
    assert world.steps("heal") == {"R1": "completed", "P1": "cancelled"}
    assert world.step("heal", "P1")["reason"].startswith("cancelled by alice")
    ApprovalService(
        resources=world.resources, ledger=world.ledger, events=world.events, clock=world.clock
    ).reconcile(NAMESPACE, approval)
    assert world.resources.get(APPROVAL, NAMESPACE, approval)["status"]["phase"] == "Withdrawn"
    [row] = [e for e in world.ledger.rows if e.type == "plan_cancelled"]
    assert row.payload["by"] == "alice"
    uid = world.resources.get(PLAN, NAMESPACE, "heal")["metadata"]["uid"]
    intention = world.ledger.intention(intention_id("plan", uid))
    assert intention is not None
    assert intention.status is IntentionStatus.ABANDONED
    assert intention.reason is not None
    assert "alice" in intention.reason
    # An approval arriving now acts on nothing: the plan is over.
    stored(world, APPROVAL, approval)["spec"] |= {"decision": "Approved", "decidedBy": "bob"}
    for _ in range(3):
        world.executor("a").tick(NAMESPACE, "heal")
    assert world.driver.calls["service.restart"] == 0
    assert ledger_types(world, "heal").count("plan_cancelled") == 1
    assert world.events.reasons("heal").count("Cancelled") == 1


def test_a_step_acting_under_a_live_lease_is_never_interrupted() -> None:
    world = World()
    world.plan("heal", [restart("P1"), read("R1", "P1")])
    world.driver.crash_on.add("service.restart")
    with pytest.raises(Crash):
        world.executor("a").tick(NAMESPACE, "heal")
    assert world.steps("heal")["P1"] == "executing"
    cancel(world, "heal")

    waiting = world.executor("b").tick(NAMESPACE, "heal")
    lease = world.step("heal", "P1")["lease"]["expiresAt"]
    assert waiting.wake_at is not None
    assert waiting.wake_at.isoformat() == lease.replace("Z", "+00:00")
    assert phase(world, "heal") == "executing"
    assert waiting.phase == "executing"  # its task lives on, to look again then

    world.clock.advance(PAST_THE_LEASE)
    world.executor("b").tick(NAMESPACE, "heal")
    assert phase(world, "heal") == "abandoned"
    assert world.steps("heal") == {"P1": "cancelled", "R1": "cancelled"}
    assert "see the ledger" in world.step("heal", "P1")["reason"]
    # Stopped: the restart that may have happened is never repeated, and nothing else runs.
    assert world.driver.calls == {"service.restart": 1}


def test_a_claim_computed_before_the_cancellation_loses_its_race() -> None:
    world = World()
    world.plan("heal", [restart("P1")])
    world.resources.before_write = lambda kind, body: cancel(world, "heal")
    world.executor("a").tick(NAMESPACE, "heal")
    assert phase(world, "heal") == "abandoned"
    assert world.driver.calls["service.restart"] == 0


def test_no_step_is_chained_after_the_cancellation() -> None:
    world = World()
    world.plan("heal", [read("R1"), restart("P1", "R1")])
    original = world.driver.invoke

    def cancelled_meanwhile(name: str, *args: Any, **kwargs: Any) -> Any:
        if name == "service.status":
            cancel(world, "heal")
        return original(name, *args, **kwargs)

    world.driver.invoke = cancelled_meanwhile  # type: ignore[method-assign]
    world.executor("a").tick(NAMESPACE, "heal")
    assert world.driver.calls == {"service.status": 1}
    assert world.steps("heal") == {"R1": "completed", "P1": "cancelled"}


def test_a_controller_that_dies_before_the_last_write_leaves_the_stop_to_the_next() -> None:
    world = World()
    world.plan("heal", [read("R1"), restart("P1", "R1")])
    cancel(world, "heal")

    def dies(kind: Any, body: dict[str, Any]) -> None:
        raise Crash("status write")

    world.resources.before_write = dies
    with pytest.raises(Crash):
        world.executor("a").tick(NAMESPACE, "heal")
    assert phase(world, "heal") == "validated"  # the plan is open: its task ticks it again
    world.executor("b").tick(NAMESPACE, "heal")
    assert phase(world, "heal") == "abandoned"
    assert ledger_types(world, "heal").count("plan_cancelled") == 1
    assert world.events.reasons("heal").count("Cancelled") == 1
    assert world.driver.calls == {}

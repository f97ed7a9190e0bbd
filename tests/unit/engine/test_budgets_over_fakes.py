"""Budgets as the seeds mean them, run by the real executor over the fakes and a fake clock:
checks counted apart from invocations, money and approval caps enforced, one reason format."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from minds.domain.capabilities.registry import REGISTRY, CapabilityRegistry
from minds.domain.capabilities.results import DriverResult
from minds.domain.resources.kinds import APPROVAL, MIND, PLAN
from tests.unit.engine.harness import NAMESPACE, WORKLOAD, Crash, World, read, restart

RUNNING = {"capability": "service.status", "field": "state", "comparison": "equals"}


def expecting(step: dict[str, Any]) -> dict[str, Any]:
    return step | {
        "expectation": {
            "description": "atlas-worker runs",
            "check": RUNNING | {"parameters": WORKLOAD, "value": "running"},
            "confidence": 0.8,
            "windowSeconds": 60,
        }
    }


def verify(key: str, verifies: str) -> dict[str, Any]:
    return {
        "key": key,
        "title": "check the restart worked",
        "kind": "verify",
        "verifies": verifies,
        "dependsOn": [verifies],
    }


def monitor(key: str, *depends_on: str, stable: int = 900, deadline: int = 1800) -> dict[str, Any]:
    return {
        "key": key,
        "title": "monitor until stable for fifteen minutes",
        "kind": "monitor",
        "check": RUNNING | {"parameters": WORKLOAD, "value": "running"},
        "stableSeconds": stable,
        "deadlineSeconds": deadline,
        "dependsOn": list(depends_on),
    }


def status(world: World, name: str) -> dict[str, Any]:
    return dict(world.resources.get(PLAN, NAMESPACE, name)["status"])


def drive(world: World, name: str, ticks: int = 400) -> None:
    """Tick as the controller's timers would, moving the clock to each wake-up, until the plan
    rests (or ``ticks`` run out: a plan that runs away is stopped by its budget, not here)."""
    executor = world.executor("a")
    for _ in range(ticks):
        result = executor.tick(NAMESPACE, name)
        if result.wake_at is None:
            return
        world.clock.now = max(world.clock.now, result.wake_at)
    raise AssertionError(f"{name} still runs after {ticks} ticks: {world.steps(name)}")


def set_mind(world: World, **spec: Any) -> None:
    mind = world.resources.get(MIND, NAMESPACE, "keeper")
    world.resources.delete(MIND, NAMESPACE, "keeper", mind["metadata"]["uid"])
    world.resources.create(MIND, NAMESPACE, {"metadata": {"name": "keeper"}, "spec": spec})


def blocked_rows(world: World) -> list[str]:
    return [
        str(r.payload.get("reason")) for r in world.ledger.rows if r.type == "plan_step_blocked"
    ]


# --- checks ----------------------------------------------------------------------------------


def test_the_seeds_fifteen_minute_monitor_completes_within_the_default_budget() -> None:
    world = World()
    start = world.clock.now
    steps = [read("R1"), expecting(restart("P1", "R1")), verify("V1", "P1"), monitor("M1", "V1")]
    world.plan("heal", steps)
    drive(world, "heal")
    done = status(world, "heal")
    assert done["phase"] == "completed", world.steps("heal")
    # Two actions; every look of V1 and M1 is a check. Counted as invocations, the thirty-odd
    # looks of fifteen stable minutes would have blocked the plan at 20.
    assert done["actual"]["invocations"] == 2
    assert 30 <= done["actual"]["checks"] <= 40
    assert world.driver.calls["service.restart"] == 1
    assert world.clock.now - start >= timedelta(minutes=15)


def test_checks_have_their_own_cap_and_block_with_the_reason() -> None:
    world = World()
    world.plan("watch", [monitor("M1")], budget={"checks": 5})
    drive(world, "watch")
    blocked = status(world, "watch")
    assert blocked["phase"] == "blocked"
    assert world.driver.calls == {"service.status": 5}
    assert blocked["actual"]["checks"] == 5
    assert blocked["actual"]["invocations"] == 0
    reason = "budget exhausted: 5 of 5 checks used"
    assert world.step("watch", "M1")["reason"] == reason
    assert blocked["waitingOn"] == f"M1: blocked ({reason})"
    assert reason in blocked_rows(world)


def test_a_monitor_that_never_settles_looks_at_most_its_check_cap_over_simulated_days() -> None:
    world = World()
    start = world.clock.now
    flapping = iter(["running", "degraded"] * 10_000)
    invoke = world.driver.invoke

    def flap(name: str, parameters: Any, **kw: Any) -> DriverResult:
        invoke(name, parameters, **kw)
        return DriverResult.success("looked", fields={"state": next(flapping)})

    world.driver.invoke = flap  # type: ignore[method-assign]
    # A week-long deadline at a look a minute would be ten thousand looks.
    world.plan(
        "flaky", [monitor("M1", stable=3600, deadline=7 * 24 * 3600) | {"intervalSeconds": 60}]
    )
    drive(world, "flaky", ticks=1000)
    assert world.driver.calls == {"service.status": 200}
    assert world.step("flaky", "M1")["reason"] == "budget exhausted: 200 of 200 checks used"
    # Stopped by the cap after 200 minutes of looking, not by the deadline a week away.
    assert world.clock.now - start < timedelta(hours=4)


def test_a_precondition_is_a_check_not_an_invocation() -> None:
    world = World()
    guarded = restart("P1") | {
        "precondition": {
            "description": "atlas-worker is not running",
            "check": RUNNING
            | {"parameters": WORKLOAD, "comparison": "not_equals", "value": "running"},
        }
    }
    world.plan("guarded", [guarded])
    drive(world, "guarded")
    # atlas-worker already runs: the precondition skips the restart.
    assert world.steps("guarded") == {"P1": "skipped"}
    assert status(world, "guarded")["actual"]["checks"] == 1
    assert status(world, "guarded")["actual"]["invocations"] == 0


# --- money -----------------------------------------------------------------------------------


def priced(capability: str, money: float) -> CapabilityRegistry:
    return REGISTRY.priced({capability: money})


def test_a_step_that_would_pass_the_money_cap_blocks_before_it_acts() -> None:
    world = World(registry=priced("service.status", 2.0))
    world.plan("paid", [read("R1"), read("R2", "R1"), read("R3", "R2")], budget={"money": 5})
    drive(world, "paid")
    assert world.steps("paid") == {"R1": "completed", "R2": "completed", "R3": "blocked"}
    assert world.driver.calls == {"service.status": 2}
    assert status(world, "paid")["actual"]["money"] == 4.0
    assert world.step("paid", "R3")["reason"] == "budget exhausted: 4 of 5 money used"


def test_the_price_is_counted_by_the_claim_before_the_capability_acts() -> None:
    world = World(registry=priced("service.status", 2.5))
    world.driver.crash_on.add("service.status")
    world.plan("paid", [read("R1")], budget={"money": 5})
    try:
        world.executor("a").tick(NAMESPACE, "paid")
    except Crash:
        pass
    else:
        raise AssertionError("the driver should have crashed mid-action")
    # The controller died mid-action: its claim had already counted the price.
    assert status(world, "paid")["actual"]["money"] == 2.5
    assert world.steps("paid") == {"R1": "executing"}


def test_free_capabilities_never_block_on_a_money_cap() -> None:
    world = World()
    world.plan("free", [read("R1"), read("R2", "R1")], budget={"money": 0})
    drive(world, "free")
    assert world.steps("free") == {"R1": "completed", "R2": "completed"}


# --- approvals -------------------------------------------------------------------------------


def test_the_approvals_cap_counts_steps_policy_sends_for_approval() -> None:
    world = World()
    # No rule for service.restart: policy's default for a writing capability is to ask.
    set_mind(world)
    world.plan("asks", [read("R1"), restart("P1", "R1")], budget={"approvals": 0})
    drive(world, "asks")
    assert world.steps("asks") == {"R1": "completed", "P1": "blocked"}
    assert world.step("asks", "P1")["reason"] == "budget exhausted: 0 of 0 approvals used"
    assert world.resources.list(APPROVAL, NAMESPACE) == []
    assert world.driver.calls == {"service.status": 1}


def test_at_the_approvals_cap_a_step_policy_allows_still_runs() -> None:
    world = World()  # its Mind allows service.restart outright
    world.plan("allowed", [read("R1"), restart("P1", "R1")], budget={"approvals": 0})
    drive(world, "allowed")
    assert world.steps("allowed") == {"R1": "completed", "P1": "completed"}
    assert world.driver.calls == {"service.status": 1, "service.restart": 1}


def test_an_approval_asked_is_counted() -> None:
    world = World()
    set_mind(world)
    world.plan("asks", [restart("P1")], budget={"approvals": 1})
    drive(world, "asks")
    assert world.steps("asks") == {"P1": "awaiting_approval"}
    assert status(world, "asks")["actual"]["approvals"] == 1
    assert status(world, "asks")["actual"]["invocations"] == 1


# --- wall time -------------------------------------------------------------------------------


def test_wall_time_blocks_in_the_same_format() -> None:
    world = World()
    steps = [read("R1"), {"key": "W1", "title": "wait", "kind": "wait", "waitSeconds": 600,
                          "dependsOn": ["R1"]}, read("R2", "W1")]  # fmt: skip
    world.plan("slow", steps, budget={"wallSeconds": 300})
    drive(world, "slow")
    assert world.steps("slow") == {"R1": "completed", "W1": "completed", "R2": "blocked"}
    assert world.step("slow", "R2")["reason"] == "budget exhausted: 600 of 300 wall seconds used"

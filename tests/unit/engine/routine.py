"""A mind with one goal (atlas-worker running) in a world the test breaks and heals, a cycle
a minute, over the real engine and the fakes' ledger or the real one: what its routine costs
the ledger, and what the ledger says of it."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

import pytest

from minds.domain.base import Model
from minds.domain.capabilities.results import DriverResult
from minds.domain.execution.machine import FINAL_PLAN
from minds.domain.resources.kinds import MIND, PLAN
from minds.domain.series import Series, SeriesKind
from minds.engine import failpoints
from minds.engine.assembly import Engine
from minds.engine.plan_service import PlanService
from minds.engine.why import Explainer, Link
from tests.fakes.clock import FakeClock
from tests.fakes.ledger import FakeLedger
from tests.unit.engine.harness import NAMESPACE, Crash, FakeDriver, World

MINUTE = timedelta(minutes=1)
#: A plan in these phases has nothing left to tick.
FINAL = frozenset(phase.value for phase in FINAL_PLAN)
WORKLOAD = f"{NAMESPACE}/atlas-worker"
BELIEF = f"workload {WORKLOAD} is degraded"


@dataclass
class Workload(FakeDriver):
    """atlas-worker, in ``state``; a restart brings it back to running."""

    state: str = "running"

    def invoke(self, capability_name: str, parameters: Model, **how: Any) -> DriverResult:
        said = super().invoke(capability_name, parameters, **how)
        if capability_name == "service.restart":
            self.state = "running"
        if capability_name != "service.status":
            return said
        return DriverResult.success(
            f"Deployment {WORKLOAD} is {self.state}",
            fields={"state": self.state, "ready": self.state == "running", "restarts": 0},
        )


def keeper(ledger: Any = None, start: datetime | None = None) -> World:
    """The world's Mind with the goal; restarts allowed, logs never read."""
    world = World(
        driver=Workload(),
        ledger=FakeLedger() if ledger is None else ledger,
        clock=FakeClock(start),
    )
    body = world.resources.get(MIND, NAMESPACE, "keeper")
    goal = {"name": "atlas-running", "subject": {"name": "atlas-worker"}, "priority": 0.8}
    policy = [
        {"capability": "service.restart", "decision": "allow"},
        {"capability": "logs.query", "decision": "deny"},
    ]
    world.resources.patch_spec(MIND, body, {"goals": [goal], "capabilityPolicy": policy})
    return world


def workload(world: World) -> Workload:
    assert isinstance(world.driver, Workload)
    return world.driver


def once_degraded(world: World) -> None:
    """The mind believes atlas-worker degraded, as one that saw it so once (the demo's)."""
    at = world.clock.now - timedelta(days=1)
    belief = world.ledger.upsert_belief(NAMESPACE, "keeper", BELIEF, 0.5, at)
    world.ledger.add_evidence(belief.id, supports=True, weight=7.0, key="seen", at=at, note="")


def run(
    world: World,
    minutes: int,
    *,
    engine: Engine | None = None,
    weather: Callable[[datetime], str | None] = lambda now: None,
) -> None:
    """A cycle a minute, every plan admitted as it appears and ticked after each cycle;
    ``weather`` breaks atlas-worker (a state to put it in) at the minutes it says."""
    engine = engine or world.engine("a")
    plans = PlanService(
        resources=world.resources,
        ledger=world.ledger,
        events=world.events,
        clock=world.clock,
        registry=world.registry,
    )
    for _ in range(minutes):
        state = weather(world.clock.now)
        if state is not None:
            workload(world).state = state
        engine.cycle.run(NAMESPACE, "keeper")
        for plan in world.resources.list(PLAN, NAMESPACE):
            name = plan["metadata"]["name"]
            phase = (plan.get("status") or {}).get("phase")
            if not phase:
                plans.admit(NAMESPACE, name)
            if phase not in FINAL:
                engine.executor.tick(NAMESPACE, name)
        world.clock.advance(MINUTE)


def crash_after_a_look(world: World, monkeypatch: pytest.MonkeyPatch) -> None:
    """One cycle that dies after its look and before recording it, where the failpoint
    ``read-unrecorded`` kills a controller (here a BaseException that nothing catches)."""
    real = failpoints.hit

    def dies(point: str, detail: str = "") -> None:
        if point == "read-unrecorded":
            raise Crash(point)
        real(point, detail)

    monkeypatch.setattr(failpoints, "hit", dies)
    with pytest.raises(Crash):
        run(world, 1)
    monkeypatch.setattr(failpoints, "hit", real)


def broken_once(world: World, healthy: int, then: int) -> datetime:
    """atlas-worker runs for ``healthy`` minutes, is found degraded once (and restarted by the
    mind), then runs on for ``then`` minutes; when it was found degraded."""
    run(world, healthy)
    broke = world.clock.now
    run(world, then, weather=lambda now: "degraded" if now == broke else None)
    return broke


def why_the_restart(world: World) -> list[Link]:
    """What ``why`` says of the mind's one plan (its restart)."""
    explainer = Explainer(resources=world.resources, ledger=world.ledger)
    [plan] = world.resources.list(PLAN, NAMESPACE)
    return explainer.why(NAMESPACE, "plan", plan["metadata"]["name"])


def timeline(world: World) -> list[dict[str, Any]]:
    return Explainer(resources=world.resources, ledger=world.ledger).timeline(NAMESPACE, "keeper")


def looks(world: World) -> Series:
    [series] = world.ledger.series(NAMESPACE, "keeper", kind=SeriesKind.OBSERVATION)
    return series


def cycles(world: World) -> Series:
    [series] = world.ledger.series(NAMESPACE, "keeper", kind=SeriesKind.CYCLE)
    return series


def recorded_looks(world: World) -> int:
    """Looks recorded in full: the cycle's own executions of service.status."""
    return sum(
        1
        for e in world.ledger.executions(namespace=NAMESPACE, capability="service.status")
        if e.origin.cycle
    )

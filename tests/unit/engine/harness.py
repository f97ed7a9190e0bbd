"""The real engine over the fakes of its ports: one cluster, one ledger, many executors.

Every service is the real one (executor, capability service, approvals, admission); only the
ports are in memory and the clock is the test's, so lease expiry and crashes take
milliseconds."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any

from minds.domain.base import Model
from minds.domain.capabilities.registry import REGISTRY, CapabilityRegistry
from minds.domain.capabilities.results import DriverResult
from minds.domain.resources.kinds import MIND, PLAN
from minds.engine.assembly import Engine, EnginePorts, assemble
from minds.engine.executor import Executor, TickResult
from tests.fakes.clock import FakeClock
from tests.fakes.ledger import FakeLedger
from tests.fakes.resources import FakeEvents, FakeResources

NAMESPACE = "shop"
WORKLOAD = {"namespace": NAMESPACE, "name": "atlas-worker"}


#: A claim's lease (the restart's 60 s timeout and 30 s more) is over.
PAST_THE_LEASE = timedelta(seconds=91)


class Crash(BaseException):
    """The process dies here: not an ``Exception``, so nothing on the way catches it."""


@dataclass
class FakeDriver:
    """The world: counts what was asked of it; ``crash_on`` kills the caller mid-action."""

    calls: Counter[str] = field(default_factory=Counter)
    crash_on: set[str] = field(default_factory=set)

    def supports_dry_run(self, capability_name: str) -> bool:
        return False

    def invoke(
        self,
        capability_name: str,
        parameters: Model,
        *,
        mind_allowed_hosts: Any = (),
        dry_run: bool = False,
    ) -> DriverResult:
        self.calls[capability_name] += 1
        if capability_name in self.crash_on:
            self.crash_on.discard(capability_name)
            raise Crash(capability_name)
        if capability_name == "service.status":
            return DriverResult.success(
                "atlas-worker is running",
                fields={
                    "state": "running",
                    "ready_replicas": 1,
                    "desired_replicas": 1,
                    "restarts": 0,
                },
            )
        return DriverResult.success("restart requested (health not yet verified)")


@dataclass
class World:
    clock: FakeClock = field(default_factory=FakeClock)
    resources: FakeResources = field(default_factory=FakeResources)
    ledger: FakeLedger = field(default_factory=FakeLedger)
    events: FakeEvents = field(default_factory=FakeEvents)
    driver: FakeDriver = field(default_factory=FakeDriver)
    registry: CapabilityRegistry = REGISTRY

    def __post_init__(self) -> None:
        # Restarts without asking anyone: these tests are about acting, not approving.
        spec = {"capabilityPolicy": [{"capability": "service.restart", "decision": "allow"}]}
        self.resources.create(MIND, NAMESPACE, {"metadata": {"name": "keeper"}, "spec": spec})

    def engine(self, holder: str = "test") -> Engine:
        """The engine's services over this world's fakes, as the controller assembles them."""
        return assemble(
            EnginePorts(
                resources=self.resources,
                ledger=self.ledger,
                events=self.events,
                drivers=self.driver,
                clock=self.clock,
                registry=self.registry,
                holder=holder,
            )
        )

    def executor(self, holder: str) -> Executor:
        return self.engine(holder).executor

    def plan(
        self, name: str, steps: list[dict[str, Any]], budget: dict[str, Any] | None = None
    ) -> None:
        """An operator's plan, admitted as the controller admits it."""
        self.resources.create(
            PLAN,
            NAMESPACE,
            {
                "metadata": {"name": name},
                "spec": {
                    "objective": "keep atlas-worker running",
                    "origin": "operator",
                    "strategy": "authored",
                    "mind": "keeper",
                    "steps": steps,
                    **({"budget": budget} if budget is not None else {}),
                },
            },
        )
        admission = self.engine().plans.admit(NAMESPACE, name)
        assert admission.result.ok, admission.result

    def steps(self, name: str) -> dict[str, str]:
        status = self.resources.get(PLAN, NAMESPACE, name)["status"]
        return {s["key"]: s["status"] for s in status["steps"]}

    def step(self, name: str, key: str) -> dict[str, Any]:
        status = self.resources.get(PLAN, NAMESPACE, name)["status"]
        return next(s for s in status["steps"] if s["key"] == key)

    def run(self, executor: Executor, name: str, *, until: Callable[[], bool]) -> TickResult:
        """Tick until ``until`` holds, moving the clock to each wake-up; a bounded number."""
        result = executor.tick(NAMESPACE, name)
        for _ in range(50):
            if until():
                return result
            if result.wake_at is not None and result.wake_at > self.clock.now:
                self.clock.now = result.wake_at
            result = executor.tick(NAMESPACE, name)
        raise AssertionError(f"{name} never got there: {self.steps(name)}")


def restart(key: str = "P1", *depends_on: str) -> dict[str, Any]:
    return {
        "key": key,
        "title": "restart atlas-worker",
        "kind": "capability",
        "capability": "service.restart",
        "parameters": WORKLOAD,
        "dependsOn": list(depends_on),
    }


def read(key: str = "R1", *depends_on: str) -> dict[str, Any]:
    return {
        "key": key,
        "title": "read atlas-worker",
        "kind": "capability",
        "capability": "service.status",
        "parameters": WORKLOAD,
        "dependsOn": list(depends_on),
    }

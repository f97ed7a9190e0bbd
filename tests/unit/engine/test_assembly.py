"""The engine assembled over the fakes is linked as the controller runs it: one capability
service, one approval service and one planner shared by the executor and the cycle; the Mind
service reading the capability service's promises; the cycle reviewing assumptions through the
executor; and every optional port reaching the service that uses it."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from minds.domain.capabilities.registry import REGISTRY
from minds.domain.resources.mind import MindSpec
from minds.engine.assembly import Engine, EnginePorts, assemble
from minds.engine.conditioned import Conditioned
from tests.fakes.clock import FakeClock
from tests.fakes.ledger import FakeLedger
from tests.fakes.resources import FakeEvents, FakeResources
from tests.unit.engine.harness import FakeDriver


class Told:
    def invoked(self, namespace: str, mind: str, capability: str, outcome: str) -> None: ...

    def approval_decided(
        self, namespace: str, mind: str, outcome: str, waited_seconds: float | None
    ) -> None: ...


def no_proposal(namespace: str, spec: MindSpec, objective: str, vocabulary: dict[str, Any]) -> None:
    return None


def ports(**optional: Any) -> EnginePorts:
    return EnginePorts(
        resources=FakeResources(),
        ledger=FakeLedger(),
        events=FakeEvents(),
        drivers=FakeDriver(),
        clock=FakeClock(),
        registry=REGISTRY,
        **optional,
    )


def test_the_executor_and_the_cycle_act_through_the_same_services() -> None:
    engine = assemble(ports())
    deps = engine.executor._deps
    assert deps.capabilities is engine.capabilities
    assert deps.asking is engine.asking
    assert deps.approvals is engine.approvals
    assert deps.planning is engine.planning
    assert engine.cycle._capabilities is engine.capabilities
    assert engine.cycle._approvals is engine.approvals
    assert engine.cycle._planning is engine.planning


def test_the_cycle_reviews_assumptions_through_the_executor() -> None:
    engine = assemble(ports())
    review = engine.cycle._review_assumptions
    assert review == engine.executor.review_assumptions
    assert getattr(review, "__self__", None) is engine.executor


def test_who_authorises_who_asks_and_the_mind_service_read_the_same_promises() -> None:
    engine = assemble(ports())
    assert engine.minds._promises is engine.capabilities.promises
    assert engine.asking._promises is engine.capabilities.promises


def test_an_approve_decision_asks_through_the_asking_service() -> None:
    engine = assemble(ports())
    assert engine.capabilities._asking is engine.asking


def test_every_service_is_handed_the_same_ports() -> None:
    given = ports()
    engine = assemble(given)
    services = [
        engine.capabilities,
        engine.asking,
        engine.minds,
        engine.plans,
        engine.approvals,
        engine.grants,
        engine.planning,
        engine.cycle,
        engine.retention,
    ]
    # One port over the given one, which derives the conditions of the statuses written.
    resources = engine.minds._resources
    assert isinstance(resources, Conditioned)
    assert resources._inner is given.resources
    assert all(s._resources is resources for s in services)
    assert all(s._clock is given.clock for s in services)
    assert all(s._ledger is given.ledger for s in services if s is not engine.planning)
    assert engine.capabilities._drivers is given.drivers
    deps = engine.executor._deps
    assert (deps.resources, deps.ledger, deps.events, deps.clock, deps.registry) == (
        resources,
        given.ledger,
        given.events,
        given.clock,
        given.registry,
    )


def test_the_defaults_are_the_services_own() -> None:
    engine = assemble(ports())
    assert engine.minds._capabilities == frozenset(REGISTRY.names())
    assert engine.minds._model_endpoints == frozenset()
    assert engine.planning._proposer is None
    assert engine.executor._deps.holder  # this process: never empty


def test_the_optional_ports_reach_the_services_that_use_them() -> None:
    told = Told()
    engine: Engine = assemble(
        ports(
            proposer=no_proposal,
            telemetry=told,
            approval_ttl=timedelta(minutes=7),
            holder="controller-a",
            model_endpoints=frozenset({"local"}),
            capability_names=frozenset({"service.status"}),
        )
    )
    assert engine.capabilities._telemetry is told
    assert engine.approvals._telemetry is told
    assert engine.asking._approval_ttl == timedelta(minutes=7)
    assert engine.planning._proposer is no_proposal
    assert engine.executor._deps.holder == "controller-a"
    assert engine.minds._model_endpoints == frozenset({"local"})
    assert engine.minds._capabilities == frozenset({"service.status"})

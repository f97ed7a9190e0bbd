"""The engine assembled: every service built from what the engine is handed, in one place.

The controller (``minds.controller.wiring``) hands it the real adapters; the tests hand it the
fakes. Both get the same services with the same links between them: the Mind service reads the
promises the capability service keeps, the cycle reviews assumptions through the executor, and
the executor and the cycle act through the one capability service, approvals and planner.
"""

from __future__ import annotations

import os
import socket
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Protocol

from minds.domain.approvals import DEFAULT_TTL
from minds.domain.capabilities.registry import CapabilityRegistry
from minds.engine.approval_service import ApprovalLedger, ApprovalService
from minds.engine.asking import AskingService
from minds.engine.capability_service import CapabilityService, DriverPort, ExecutionLedger
from minds.engine.conditioned import Conditioned
from minds.engine.cycle import CycleLedger, MindCycle
from minds.engine.executor import Executor
from minds.engine.grant_service import GrantService
from minds.engine.mind_service import MindService
from minds.engine.plan_service import PlanService
from minds.engine.planning_service import PlanningService, Proposer
from minds.engine.ports import Clock, EventPort, ExecutorLedger, LedgerPort, ResourcePort
from minds.engine.promises import Promises
from minds.engine.retention import PlanRetention, RetentionLedger
from minds.engine.telemetry import NO_TELEMETRY, Telemetry

__all__ = ["Engine", "EngineLedger", "EnginePorts", "assemble", "this_process"]


class EngineLedger(
    CycleLedger,
    ExecutorLedger,
    ExecutionLedger,
    ApprovalLedger,
    RetentionLedger,
    LedgerPort,
    Protocol,
):
    """Every role of the ledger some service of the engine plays a part in: what the ledger
    handed to the whole engine must be."""


def this_process() -> str:
    """The executor's lease holder for this process: unique among the controllers running."""
    return f"{socket.gethostname()}-{os.getpid()}"


@dataclass(frozen=True)
class EnginePorts:
    """What the engine is handed: the world it reads and writes, and how it is told."""

    resources: ResourcePort
    ledger: EngineLedger
    events: EventPort
    drivers: DriverPort
    clock: Clock
    registry: CapabilityRegistry
    #: Asks a Mind's model for a plan; None: the planner proposes from its own strategies only.
    proposer: Proposer | None = None
    telemetry: Telemetry = NO_TELEMETRY
    #: How long an Approval the capability service raises stays open.
    approval_ttl: timedelta = DEFAULT_TTL
    #: Who holds the executor's leases.
    holder: str = field(default_factory=this_process)
    #: The model endpoints a Mind may name.
    model_endpoints: frozenset[str] = frozenset()
    #: The capabilities a Mind's spec may name; None: every one the registry has.
    capability_names: frozenset[str] | None = None


@dataclass(frozen=True)
class Engine:
    """Every service of the engine, linked as the controller runs them."""

    capabilities: CapabilityService
    asking: AskingService
    minds: MindService
    plans: PlanService
    approvals: ApprovalService
    grants: GrantService
    planning: PlanningService
    executor: Executor
    cycle: MindCycle
    retention: PlanRetention


def assemble(ports: EnginePorts) -> Engine:
    """Build every service over ``ports``, each linked to the others it works through."""
    resources, ledger, events, clock, registry = (
        # Every status the engine writes carries the conditions its phase means.
        Conditioned(ports.resources, ports.clock),
        ports.ledger,
        ports.events,
        ports.clock,
        ports.registry,
    )
    promises = Promises(ledger)
    asking = AskingService(
        resources=resources,
        ledger=ledger,
        clock=clock,
        registry=registry,
        promises=promises,
        approval_ttl=ports.approval_ttl,
    )
    capabilities = CapabilityService(
        resources=resources,
        ledger=ledger,
        drivers=ports.drivers,
        clock=clock,
        registry=registry,
        promises=promises,
        asking=asking,
        telemetry=ports.telemetry,
    )
    names = ports.capability_names
    minds = MindService(
        resources=resources,
        ledger=ledger,
        events=events,
        clock=clock,
        capabilities=frozenset(registry.names()) if names is None else names,
        model_endpoints=ports.model_endpoints,
        promises=promises,
    )
    plans = PlanService(
        resources=resources, ledger=ledger, events=events, clock=clock, registry=registry
    )
    approvals = ApprovalService(
        resources=resources, ledger=ledger, events=events, clock=clock, telemetry=ports.telemetry
    )
    grants = GrantService(resources=resources, ledger=ledger, events=events, clock=clock)
    planning = PlanningService(
        resources=resources, clock=clock, registry=registry, proposer=ports.proposer
    )
    executor = Executor(
        resources=resources,
        ledger=ledger,
        events=events,
        capabilities=capabilities,
        asking=asking,
        approvals=approvals,
        planning=planning,
        clock=clock,
        registry=registry,
        holder=ports.holder,
    )
    cycle = MindCycle(
        resources=resources,
        ledger=ledger,
        capabilities=capabilities,
        planning=planning,
        approvals=approvals,
        clock=clock,
        registry=registry,
        review_assumptions=executor.review_assumptions,
    )
    return Engine(
        capabilities=capabilities,
        asking=asking,
        minds=minds,
        plans=plans,
        approvals=approvals,
        grants=grants,
        planning=planning,
        executor=executor,
        cycle=cycle,
        retention=PlanRetention(resources=resources, ledger=ledger, clock=clock),
    )

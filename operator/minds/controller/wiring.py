"""Build the engine's services from real adapters. The only place that knows both sides."""

from __future__ import annotations

import os
import socket
from dataclasses import dataclass, field
from datetime import UTC, datetime

from minds.adapters.drivers import default_drivers
from minds.adapters.kube.client import KubeEvents, KubeResources, api_client
from minds.adapters.ledger import Ledger, check_schema
from minds.controller.settings import ControllerConfig
from minds.controller.wakeups import Wakeups
from minds.domain.capabilities.registry import REGISTRY
from minds.engine.approval_service import ApprovalService
from minds.engine.capability_service import CapabilityService
from minds.engine.cycle import MindCycle
from minds.engine.executor import Executor
from minds.engine.grant_service import GrantService
from minds.engine.mind_service import MindService
from minds.engine.plan_service import PlanService
from minds.engine.planning_service import PlanningService


def utc_now() -> datetime:
    return datetime.now(UTC)


@dataclass
class Wiring:
    ledger: Ledger
    minds: MindService
    plans: PlanService
    capabilities: CapabilityService
    approvals: ApprovalService
    grants: GrantService
    executor: Executor
    cycle: MindCycle
    wakeups: Wakeups = field(default_factory=Wakeups)

    def close(self) -> None:
        self.ledger.close()


def build(config: ControllerConfig) -> Wiring:
    """Check the ledger schema first: a controller must never write to a schema it predates."""
    check_schema(config.database_url)
    ledger = Ledger.from_url(config.database_url)
    api = api_client(config.kubeconfig, config.context)
    resources = KubeResources(api)
    events = KubeEvents(api)
    minds = MindService(
        resources=resources,
        ledger=ledger,
        events=events,
        clock=utc_now,
        capabilities=frozenset(REGISTRY.names()),
    )
    plans = PlanService(
        resources=resources, ledger=ledger, events=events, clock=utc_now, registry=REGISTRY
    )
    capabilities = CapabilityService(
        resources=resources,
        ledger=ledger,
        drivers=default_drivers(api),
        clock=utc_now,
        registry=REGISTRY,
    )
    approvals = ApprovalService(
        resources=resources, ledger=ledger, events=events, capabilities=capabilities, clock=utc_now
    )
    grants = GrantService(resources=resources, ledger=ledger, events=events, clock=utc_now)
    planning = PlanningService(resources=resources, clock=utc_now, registry=REGISTRY)
    executor = Executor(
        resources=resources,
        ledger=ledger,
        events=events,
        capabilities=capabilities,
        approvals=approvals,
        planning=planning,
        clock=utc_now,
        registry=REGISTRY,
        holder=f"{socket.gethostname()}-{os.getpid()}",
    )
    return Wiring(
        ledger=ledger,
        minds=minds,
        plans=plans,
        capabilities=capabilities,
        approvals=approvals,
        grants=grants,
        executor=executor,
        cycle=MindCycle(
            resources=resources,
            ledger=ledger,
            capabilities=capabilities,
            planning=planning,
            clock=utc_now,
            registry=REGISTRY,
        ),
    )

"""Build the engine's services from real adapters. The only place that knows both sides."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Protocol

from kubernetes.client import ApiClient

from minds.adapters.drivers import default_drivers
from minds.adapters.drivers.kubernetes import KubernetesDriver
from minds.adapters.kube.checkpoints import CheckpointConfigMap
from minds.adapters.kube.client import KubeEvents, KubeResources, api_client
from minds.adapters.kube.posting import BackgroundEvents
from minds.adapters.kube.secrets import SecretUnavailable, model_key
from minds.adapters.kube.watched import WatchedResources, WatchStore
from minds.adapters.kube.workload_watch import WorkloadBodies, WorkloadWatches
from minds.adapters.ledger import Ledger, check_app_role, check_schema
from minds.adapters.model_client import EndpointNotConfigured, ModelClient, RoleNotAssigned
from minds.adapters.model_endpoints import ModelEndpoints
from minds.controller.goal_watch import GoalWatch
from minds.controller.metrics import ControllerMetrics, start_metrics
from minds.controller.settings import ControllerConfig
from minds.controller.watch import WATCHED
from minds.controller.workers import WORKERS
from minds.domain.planning.planner import ModelProposal
from minds.domain.resources.mind import MindSpec
from minds.domain.wakeups import WakeReason
from minds.domain.workqueue import Work
from minds.engine.approval_service import ApprovalService
from minds.engine.assembly import EnginePorts, assemble, this_process
from minds.engine.capability_service import CapabilityService
from minds.engine.checkpoints import LedgerCheckpoints
from minds.engine.cycle import MindCycle
from minds.engine.executor import Executor
from minds.engine.grant_service import GrantService
from minds.engine.mind_service import MindService
from minds.engine.plan_service import PlanService
from minds.engine.planning_service import Proposer
from minds.engine.retention import PlanRetention

log = logging.getLogger(__name__)


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
    retention: PlanRetention
    store: WatchStore
    events: BackgroundEvents
    #: The watched workloads' last bodies: a restart of one reads them instead of a GET.
    bodies: WorkloadBodies
    metrics: ControllerMetrics | None = None
    workloads: WorkloadWatches | None = None
    #: The chains' heads kept outside the database (None: no key, or no object configured).
    checkpoints: LedgerCheckpoints | None = None

    def close(self) -> None:
        if self.workloads is not None:
            self.workloads.close()
        self.events.close()
        if self.metrics is not None:
            self.metrics.close()
        self.ledger.close()


def model_proposer(api: ApiClient, endpoints: ModelEndpoints) -> Proposer:
    """Ask the Mind's model for a plan at an endpoint the configuration lists, with the API key
    read at call time (never cached, never logged) from a labelled Secret beside the Mind. Any
    failure means "no proposal": the planner then says no possible plan, and the reason is in
    the controller log."""

    def propose(
        namespace: str, spec: MindSpec, objective: str, vocabulary: dict[str, Any]
    ) -> ModelProposal | None:
        if spec.model is None:
            return None
        try:
            # The endpoint is checked before the key is read: a Mind naming an endpoint the
            # admin did not configure never gets its Secret looked at.
            if endpoints.get(spec.model.endpoint) is None:
                raise EndpointNotConfigured(f"spec.model.endpoint {spec.model.endpoint!r}")
            ref = spec.model.api_key_secret_ref
            key = model_key(api, namespace, ref) if ref else None
            with ModelClient.for_mind(spec, endpoints, key) as client:
                result = client.propose_plan(objective, vocabulary)
        except (SecretUnavailable, RoleNotAssigned, ValueError) as exc:
            log.warning("no model proposal for %s: %s", namespace, exc)
            return None
        if result.error is not None:
            log.warning("model proposal failed: %s", result.error.message)
        return result.to_proposal()

    return propose


def build(config: ControllerConfig) -> Wiring:
    """Check the ledger first: a controller must never write to a schema it predates, nor
    as a role that could rewrite what it wrote."""
    check_schema(config.database_url)
    check_app_role(config.database_url)
    key = config.ledger_keys.active if config.ledger_keys is not None else None
    if key is None:
        log.warning(
            "the ledger is UNSEALED: no key (MINDS_LEDGER_KEYS_DIR), so anyone who can write "
            "the database can rewrite it unseen; development only (docs/ledger.md#the-key)"
        )
    else:
        log.info("the ledger seals what it appends with key %r", key.id)
    ledger = Ledger.from_url(
        config.database_url,
        key=key,
        pool_size=WORKERS.ledger_connections,
        max_overflow=WORKERS.ledger_overflow,
    )
    api = api_client(config.kubeconfig, config.context, connections=WORKERS.api_connections)
    checkpoints = None
    if key is not None and config.checkpoint_object is not None:
        checkpoints = LedgerCheckpoints(
            ledger, CheckpointConfigMap(api, *config.checkpoint_object), utc_now
        )
    # The engine reads our own kinds from the watch and writes them to the API server.
    store = WatchStore(kind.plural for kind in WATCHED)
    resources = WatchedResources(store, KubeResources(api))
    events = BackgroundEvents(KubeEvents(api))
    # Metrics: served from here on; the engine and the ledger tell them what happens.
    # The state gauges are computed from what the watch holds: a scrape costs no API request.
    metrics = start_metrics(config.metrics_bind_address, store, ledger, utc_now)
    ledger.observe(metrics.process)
    metrics.process.ledger_sealed(key is not None)
    registry = config.registry  # priced by the platform team's configuration
    prices = {name: spec.money for name, spec in registry.specs.items() if spec.money}
    log.info(
        "capability prices: %s; approvals expire after %s", prices or "none", config.approval_ttl
    )
    bodies = WorkloadBodies()
    engine = assemble(
        EnginePorts(
            resources=resources,
            ledger=ledger,
            events=events,
            drivers=default_drivers(api, kubernetes=KubernetesDriver(api, watched=bodies.get)),
            clock=utc_now,
            registry=registry,
            proposer=model_proposer(api, config.model_endpoints),
            telemetry=metrics.process,
            approval_ttl=config.approval_ttl,
            holder=this_process(),
            model_endpoints=config.model_endpoints.names(),
        )
    )
    return Wiring(
        metrics=metrics,
        ledger=ledger,
        minds=engine.minds,
        plans=engine.plans,
        capabilities=engine.capabilities,
        approvals=engine.approvals,
        grants=engine.grants,
        executor=engine.executor,
        cycle=engine.cycle,
        retention=engine.retention,
        store=store,
        events=events,
        bodies=bodies,
        checkpoints=checkpoints,
    )


class Cycles(Protocol):
    """Where an early wake-up goes: the work queue, waking a Mind's cycle if it has one."""

    def wake(self, work: Work, namespace: str, name: str) -> bool: ...


def watch_goals(wiring: Wiring, config: ControllerConfig, cycles: Cycles) -> GoalWatch:
    """The goals' subjects watched, each change that matters waking its Minds' cycles early.
    The watches get a client of their own: each holds a connection for minutes, which the
    engine's pool is sized without."""
    metrics = wiring.metrics

    def woken(namespace: str, mind: str, reason: WakeReason) -> None:
        if metrics is not None:
            metrics.process.woken(namespace, mind, reason.value)

    loop = asyncio.get_running_loop()

    def later(seconds: float, call: Callable[[], None]) -> None:
        loop.call_soon_threadsafe(loop.call_later, seconds, call)

    def wake(namespace: str, mind: str) -> None:
        cycles.wake(Work.CYCLE, namespace, mind)

    goals = GoalWatch(wake=wake, woken=woken, clock=utc_now, later=later)
    wiring.bodies.attach(goals)
    wiring.workloads = WorkloadWatches(api_client(config.kubeconfig, config.context), wiring.bodies)
    goals.attach(wiring.workloads.follow)
    return goals

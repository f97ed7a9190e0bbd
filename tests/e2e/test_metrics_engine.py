"""The engine tells its Telemetry port what happened, against the real API server and ledger:
an invocation with its outcome, and a decision once, however often it is looked at again."""

from __future__ import annotations

import json
import uuid
from dataclasses import dataclass, field
from datetime import UTC, datetime

import pytest

from minds.adapters.drivers import default_drivers
from minds.adapters.kube.client import KubeEvents, KubeResources, api_client
from minds.adapters.ledger import Ledger
from minds.domain.capabilities.registry import REGISTRY
from minds.domain.resources.approval import Explanation
from minds.engine.assembly import EnginePorts, assemble
from minds.engine.invocations import Invocation, Origin, OutcomeKind
from tests.e2e.executor_support import deployment, mind, workload
from tests.fixtures.cluster import Cluster
from tests.fixtures.waiting import eventually

pytestmark = pytest.mark.usefixtures("session_controller")


@dataclass
class Told:
    """A Telemetry that remembers what it was told."""

    invocations: list[tuple[str, str, str, str]] = field(default_factory=list)
    decisions: list[tuple[str, str, str, float | None]] = field(default_factory=list)

    def approval_decided(
        self, namespace: str, mind: str, outcome: str, waited_seconds: float | None
    ) -> None:
        self.decisions.append((namespace, mind, outcome, waited_seconds))

    def invoked(self, namespace: str, mind: str, capability: str, outcome: str) -> None:
        self.invocations.append((namespace, mind, capability, outcome))


def utc_now() -> datetime:
    return datetime.now(UTC)


def test_an_invocation_and_a_decision_are_told_once(
    cluster: Cluster, namespace: str, e2e_ledger: Ledger
) -> None:
    mind(
        cluster,
        namespace,
        capabilityPolicy=[{"capability": "service.restart", "decision": "approve"}],
    )
    deployment(cluster, namespace)
    api = api_client(str(cluster.controller_kubeconfig))
    told = Told()
    engine = assemble(
        EnginePorts(
            resources=KubeResources(api),
            ledger=e2e_ledger,
            events=KubeEvents(api),
            drivers=default_drivers(api),
            clock=utc_now,
            registry=REGISTRY,
            telemetry=told,
        )
    )
    capabilities, approvals = engine.capabilities, engine.approvals
    asked = capabilities.invoke(restart(namespace))
    assert asked.kind is OutcomeKind.PENDING
    assert asked.approval is not None
    assert told.invocations == [(namespace, "keeper", "service.restart", "pending")]

    assert approvals.withdraw(namespace, asked.approval, "the workload recovered by itself")
    [(where, who, outcome, waited)] = told.decisions
    assert (where, who, outcome) == (namespace, "keeper", "withdrawn")
    assert waited is not None
    assert 0 <= waited < 300

    # A person denies another request; the controller records it. Looking at it again here
    # finds the ledger line already written, so this process counts nothing: every decision
    # is counted once, by whoever recorded it.
    denied = capabilities.invoke(restart(namespace)).approval
    assert denied is not None
    cluster.kubectl(
        "patch",
        "approval",
        denied,
        "-n",
        namespace,
        "--type=merge",
        "-p",
        json.dumps({"spec": {"decision": "Denied", "decidedBy": "approver"}}),
        context="approver",
    )
    eventually(
        lambda: e2e_ledger.events(namespace=namespace, type="approval_denied"),
        what="the controller recorded the denial",
    )
    approvals.reconcile(namespace, denied)
    assert [d[2] for d in told.decisions] == ["withdrawn"]


def restart(namespace: str) -> Invocation:
    return Invocation(
        namespace=namespace,
        capability="service.restart",
        parameters=workload(namespace),
        # Its own intention: an Approval's name is derived from what asked.
        origin=Origin(mind="keeper", intention=f"int-{uuid.uuid4().hex[:12]}", cycle="metrics"),
        explanation=Explanation(what="restart atlas-worker", why="it stopped serving"),
    )

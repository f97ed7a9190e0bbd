"""CapabilityGrants against the real API server: the operations cap holds under concurrency,
and a grant never covers more than its window, its pattern and its state allow."""

from __future__ import annotations

import json
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from minds.adapters.ledger import Ledger
from minds.domain.resources.approval import Explanation
from minds.engine.capability_service import CapabilityService, Invocation, Origin, OutcomeKind
from tests.e2e.executor_support import apply, deployment, mind
from tests.fixtures.cluster import Cluster
from tests.fixtures.waiting import eventually

pytestmark = pytest.mark.usefixtures("session_controller")

MIND = "keeper"
WHY = Explanation(what="list processes", why="find what eats memory")


def grant(cluster: Cluster, namespace: str, name: str, **spec: Any) -> None:
    base = {
        "mind": MIND,
        "capability": "host.process.list",
        "targetPattern": "host",
        "expiresAt": (datetime.now(UTC) + timedelta(hours=1)).isoformat(),
        "operationCap": 20,
        "reason": "diagnosing memory pressure",
        "grantedBy": "admin",
    }
    apply(
        cluster,
        {
            "apiVersion": "minds.dev/v1alpha1",
            "kind": "CapabilityGrant",
            "metadata": {"name": name, "namespace": namespace},
            "spec": {**base, **spec},
        },
    )


def processes(
    namespace: str,
    cycle: str,
    capability: str = "host.process.list",
    parameters: dict[str, Any] | None = None,
) -> Invocation:
    return Invocation(
        namespace=namespace,
        capability=capability,
        parameters=parameters if parameters is not None else {"limit": 5},
        origin=Origin(mind=MIND, cycle=f"{namespace}-{cycle}"),
        explanation=WHY,
    )


def grant_status(cluster: Cluster, namespace: str, name: str) -> dict[str, Any]:
    obj = json.loads(
        cluster.kubectl("get", "capabilitygrant", name, "-n", namespace, "-o", "json").stdout
    )
    return obj.get("status") or {}


def test_fifty_concurrent_invocations_against_a_cap_of_twenty(
    cluster: Cluster, namespace: str, e2e_ledger: Ledger, capability_service: CapabilityService
) -> None:
    mind(cluster, namespace)
    grant(cluster, namespace, "ps-for-a-while")
    eventually(
        lambda: grant_status(cluster, namespace, "ps-for-a-while").get("phase") == "Active",
        what="grant active",
    )
    with ThreadPoolExecutor(max_workers=16) as pool:
        outcomes = list(
            pool.map(lambda i: capability_service.invoke(processes(namespace, str(i))), range(50))
        )
    kinds = [o.kind for o in outcomes]
    assert kinds.count(OutcomeKind.EXECUTED) == 20
    assert kinds.count(OutcomeKind.PENDING) == 30  # beyond the cap, a person is asked
    assert len(e2e_ledger.executions(namespace=namespace)) == 20
    status = eventually(
        lambda: (
            (s := grant_status(cluster, namespace, "ps-for-a-while")).get("phase") == "Exhausted"
            and s
        ),
        what="grant exhausted",
    )
    assert status["operationsUsed"] == 20


@pytest.mark.parametrize(
    ("spec", "invocation"),
    [
        pytest.param(
            {"expiresAt": (datetime.now(UTC) - timedelta(minutes=1)).isoformat()}, {}, id="expired"
        ),
        pytest.param({"revoked": True}, {}, id="revoked"),
        pytest.param(
            {"notBefore": (datetime.now(UTC) + timedelta(minutes=30)).isoformat()}, {}, id="not-yet"
        ),
        pytest.param({"parameterLimits": {"limit": 3}}, {}, id="beyond-parameter-limits"),
        pytest.param(
            {"capability": "logs.query", "targetPattern": "other-*"},
            {"capability": "logs.query", "parameters": {"namespace": "NS", "name": "atlas-worker"}},
            id="target-outside-pattern",
        ),
    ],
)
def test_a_grant_never_covers_more_than_it_says(
    cluster: Cluster,
    namespace: str,
    e2e_ledger: Ledger,
    capability_service: CapabilityService,
    spec: dict[str, Any],
    invocation: dict[str, Any],
) -> None:
    mind(cluster, namespace)
    grant(cluster, namespace, "narrow", **spec)
    if "parameters" in invocation:
        invocation = {
            **invocation,
            "parameters": {**invocation["parameters"], "namespace": namespace},
        }
    outcome = capability_service.invoke(processes(namespace, "one", **invocation))
    assert outcome.kind is OutcomeKind.PENDING, outcome.reason
    assert e2e_ledger.executions(namespace=namespace) == []
    assert grant_status(cluster, namespace, "narrow").get("operationsUsed", 0) == 0


def test_deleting_a_grant_revokes_it_and_the_ledger_remembers(
    cluster: Cluster, namespace: str, e2e_ledger: Ledger, capability_service: CapabilityService
) -> None:
    mind(cluster, namespace)
    grant(cluster, namespace, "short-lived")
    eventually(
        lambda: grant_status(cluster, namespace, "short-lived").get("phase") == "Active",
        what="grant active",
    )
    assert capability_service.invoke(processes(namespace, "a")).kind is OutcomeKind.EXECUTED
    cluster.kubectl("delete", "capabilitygrant", "short-lived", "-n", namespace, "--timeout=60s")
    assert capability_service.invoke(processes(namespace, "b")).kind is OutcomeKind.PENDING
    assert e2e_ledger.events(namespace=namespace, type="grant_revoked")


def test_preview_has_no_side_effects(
    cluster: Cluster, namespace: str, e2e_ledger: Ledger, capability_service: CapabilityService
) -> None:
    mind(
        cluster,
        namespace,
        capabilityPolicy=[{"capability": "service.restart", "decision": "allow"}],
    )
    deployment(cluster, namespace)
    before = json.loads(
        cluster.kubectl("get", "deployment", "atlas-worker", "-n", namespace, "-o", "json").stdout
    )
    acting = (
        "policy_decision",
        "tool_authorised",
        "tool_requested",
        "tool_executed",
        "tool_failed",
    )
    events_before = len(e2e_ledger.events(namespace=namespace, type=acting))
    preview = capability_service.preview(
        Invocation(
            namespace=namespace,
            capability="service.restart",
            parameters={"namespace": namespace, "name": "atlas-worker"},
            origin=Origin(mind=MIND, cycle=f"{namespace}-preview"),
            explanation=Explanation(what="restart", why="preview"),
        )
    )
    assert preview.decision.value == "allow"
    assert preview.dry_run is not None
    assert preview.dry_run.ok, preview.dry_run.error
    after = json.loads(
        cluster.kubectl("get", "deployment", "atlas-worker", "-n", namespace, "-o", "json").stdout
    )
    assert after["metadata"]["resourceVersion"] == before["metadata"]["resourceVersion"]
    assert len(e2e_ledger.events(namespace=namespace, type=acting)) == events_before
    assert e2e_ledger.executions(namespace=namespace) == []
    assert (
        json.loads(cluster.kubectl("get", "approvals", "-n", namespace, "-o", "json").stdout)[
            "items"
        ]
        == []
    )

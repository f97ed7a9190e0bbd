"""CapabilityGrants against the real API server: the operations cap holds under concurrency,
a grant never covers more than its window, its pattern, its namespace and its state allow, it
names who really granted it, and the controller cannot grant on its own say-so."""

from __future__ import annotations

import json
import subprocess
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from minds.adapters.ledger import Ledger
from minds.devenv.install import CONTROLLER_ACCOUNT, CONTROLLER_NAMESPACE
from minds.devenv.kubectl import kubectl
from minds.domain.resources.approval import Explanation
from minds.engine.capability_service import CapabilityService
from minds.engine.invocations import Invocation, Origin, OutcomeKind
from tests.e2e.executor_support import APPROVERS, apply, deployment, mind
from tests.fixtures.cluster import Cluster
from tests.fixtures.waiting import eventually

pytestmark = pytest.mark.usefixtures("session_controller")

MIND = "keeper"
CONTROLLER_USER = f"system:serviceaccount:{CONTROLLER_NAMESPACE}:{CONTROLLER_ACCOUNT}"
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
    obj = cluster.api.get("capabilitygrant", name, namespace)
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
    # Its conditions say so, for kubectl wait: exhausted, no longer active.
    shown = {c["type"]: c["status"] for c in status["conditions"]}
    assert shown == {"Active": "False", "Exhausted": "True", "Expired": "False"}
    waited = cluster.kubectl(
        "wait", "--for=condition=Exhausted", "capabilitygrant/ps-for-a-while", "-n", namespace,
        "--timeout=30s",
    )  # fmt: skip
    assert "condition met" in waited.stdout


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
    before = cluster.api.get("deployment", "atlas-worker", namespace)
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
    after = cluster.api.get("deployment", "atlas-worker", namespace)
    assert after["metadata"]["resourceVersion"] == before["metadata"]["resourceVersion"]
    assert len(e2e_ledger.events(namespace=namespace, type=acting)) == events_before
    assert e2e_ledger.executions(namespace=namespace) == []
    assert cluster.api.list("approvals", namespace)["items"] == []


# -- a grant stays inside its bounds ---------------------------------------------------------


def grant_body(namespace: str, name: str, **spec: Any) -> dict[str, Any]:
    base = {
        "mind": MIND,
        "capability": "host.process.list",
        "targetPattern": "host",
        "expiresAt": (datetime.now(UTC) + timedelta(minutes=10)).isoformat(),
        "operationCap": 2,
        "reason": "diagnosing memory pressure",
    }
    return {
        "apiVersion": "minds.dev/v1alpha1",
        "kind": "CapabilityGrant",
        "metadata": {"name": name, "namespace": namespace},
        "spec": base | spec,
    }


def create(kubeconfig: Path, obj: dict[str, Any], *args: str) -> subprocess.CompletedProcess[str]:
    return kubectl(kubeconfig, *args, "create", "-f", "-", input_=json.dumps(obj), check=False)


def active(cluster: Cluster, namespace: str, name: str) -> dict[str, Any]:
    return eventually(
        lambda: (s := grant_status(cluster, namespace, name)).get("phase") == "Active" and s,
        what=f"grant {name} active",
    )


def test_a_star_grant_never_reaches_another_namespace(
    cluster: Cluster,
    namespace: str,
    other_namespace: str,
    e2e_ledger: Ledger,
    capability_service: CapabilityService,
) -> None:
    mind(
        cluster,
        namespace,
        capabilityPolicy=[{"capability": "service.status", "decision": "approve"}],
    )
    deployment(cluster, namespace)
    deployment(cluster, other_namespace)
    grant(cluster, namespace, "everything-here", capability="service.status", targetPattern="*")
    active(cluster, namespace, "everything-here")

    def status_of(where: str) -> Any:
        parameters = {"namespace": where, "name": "atlas-worker"}
        return capability_service.invoke(
            processes(namespace, where, capability="service.status", parameters=parameters)
        )

    elsewhere = status_of(other_namespace)
    assert elsewhere.kind is OutcomeKind.DENIED
    assert f"outside the mind's namespace {namespace}" in elsewhere.reason
    assert grant_status(cluster, namespace, "everything-here").get("operationsUsed", 0) == 0
    here = status_of(namespace)
    assert here.kind is OutcomeKind.EXECUTED, here.reason
    assert grant_status(cluster, namespace, "everything-here")["operationsUsed"] == 1
    assert {e.namespace for e in e2e_ledger.executions(namespace=namespace)} == {namespace}


def test_a_grant_names_who_really_granted_it(
    cluster: Cluster, namespace: str, e2e_ledger: Ledger
) -> None:
    mind(cluster, namespace)
    admin = cluster.kubeconfig

    claimed = create(admin, grant_body(namespace, "claimed", grantedBy="alice"))
    assert claimed.returncode != 0
    assert 'spec.grantedBy must be your own username: set grantedBy to "admin"' in claimed.stderr
    unnamed = create(admin, grant_body(namespace, "unnamed"))
    assert unnamed.returncode != 0
    assert 'set grantedBy to "admin"' in unnamed.stderr
    linked = create(admin, grant_body(namespace, "linked", grantedBy="admin", approval="linked"))
    assert linked.returncode != 0
    assert "leave it unset" in linked.stderr
    for person in ("approver", "viewer"):
        own = create(admin, grant_body(namespace, person, grantedBy=person), f"--context={person}")
        assert own.returncode != 0
        assert "forbidden" in own.stderr.lower()

    # An annotation claiming otherwise is only an annotation.
    honest = grant_body(namespace, "honest", grantedBy="admin")
    honest["metadata"]["annotations"] = {"minds.dev/granted-by": "alice"}
    made = create(admin, honest)
    assert made.returncode == 0, made.stderr
    assert active(cluster, namespace, "honest")["grantedBy"] == "admin"
    # The phase is shown first and recorded right after it: wait for the record.
    [row] = eventually(
        lambda: e2e_ledger.events(namespace=namespace, type="grant_active"),
        what="the grant_active row",
    )
    assert row.payload["grantedBy"] == "admin"

    renamed = cluster.kubectl(
        "patch", "capabilitygrant", "honest", "-n", namespace, "--type=merge",
        "-p", '{"spec":{"grantedBy":"alice"}}', check=False,
    )  # fmt: skip
    assert renamed.returncode != 0
    assert "grantedBy is immutable" in renamed.stderr


def test_writing_operations_used_back_to_zero_refills_nothing(
    cluster: Cluster, namespace: str, e2e_ledger: Ledger, capability_service: CapabilityService
) -> None:
    mind(cluster, namespace)
    grant(cluster, namespace, "two", operationCap=2)
    active(cluster, namespace, "two")
    for cycle in ("a", "b"):
        assert capability_service.invoke(processes(namespace, cycle)).kind is OutcomeKind.EXECUTED
    eventually(lambda: grant_status(cluster, namespace, "two").get("phase") == "Exhausted")

    # The counter alone: the phase stays, so only the counter's own rule stands in the way.
    refill = json.dumps({"status": {"operationsUsed": 0}})
    for who in (cluster.kubeconfig, cluster.controller_kubeconfig):
        proc = kubectl(who, "patch", "capabilitygrant", "two", "-n", namespace,
                       "--subresource=status", "--type=merge", "-p", refill,
                       check=False)  # fmt: skip
        assert proc.returncode != 0
        assert "minds-status-guard" in proc.stderr

    assert capability_service.invoke(processes(namespace, "c")).kind is OutcomeKind.PENDING
    status = grant_status(cluster, namespace, "two")
    assert (status["operationsUsed"], status["phase"]) == (2, "Exhausted")
    assert len(e2e_ledger.executions(namespace=namespace)) == 2


def grant_request_approval(namespace: str, name: str) -> dict[str, Any]:
    """A grant request as the controller raises it (no plan behind it here)."""
    return {
        "apiVersion": "minds.dev/v1alpha1",
        "kind": "Approval",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {
            "kind": "grant",
            "mind": MIND,
            "capability": "host.process.list",
            "target": "host",
            "grant": {
                "targetPattern": "host",
                "durationSeconds": 600,
                "operationCap": 2,
                "reason": "diagnosing memory pressure",
            },
            "explanation": {"what": "list processes", "why": "find what eats memory"},
            "origin": {"mind": MIND},
            # As the controller copies them from the Mind when it raises a request.
            "approvers": APPROVERS,
            "expiresAt": (datetime.now(UTC) + timedelta(hours=1)).isoformat(),
        },
    }


def test_the_controller_cannot_mint_a_grant_on_its_own_say_so(
    cluster: Cluster, namespace: str, capability_service: CapabilityService
) -> None:
    mind(cluster, namespace)
    controller = cluster.controller_kubeconfig
    by_approver = {"grantedBy": "approver"}

    bare = create(controller, grant_body(namespace, "minted", **by_approver))
    assert bare.returncode != 0
    assert "only from an approved grant request" in bare.stderr
    as_itself = create(
        controller,
        grant_body(namespace, "minted", approval="minted", grantedBy=CONTROLLER_USER),
    )
    assert as_itself.returncode != 0
    assert "names the person who approved it" in as_itself.stderr

    # An Approval not yet decided vouches for nothing.
    apply(cluster, grant_request_approval(namespace, "asked"))
    pending = create(controller, grant_body(namespace, "asked", approval="asked", **by_approver))
    assert pending.returncode != 0
    assert "is not a grant request a person approved" in pending.stderr

    decided = cluster.kubectl(
        "patch", "approval", "asked", "-n", namespace, "--type=merge",
        "-p", json.dumps({"spec": {"decision": "Approved", "decidedBy": "approver"}}),
        context="approver", check=False,
    )  # fmt: skip
    assert decided.returncode == 0, decided.stderr
    link = {"approval": "asked", **by_approver}
    wider = create(controller, grant_body(namespace, "asked", operationCap=20, **link))
    assert wider.returncode != 0
    assert "the grant is not what approval asked approved" in wider.stderr
    someone_else = create(
        controller, grant_body(namespace, "asked", approval="asked", grantedBy="admin")
    )
    assert someone_else.returncode != 0
    assert "approved as admin" in someone_else.stderr

    # Admission cannot see that a named Approval is missing; the controller can, and such a
    # grant covers nothing.
    ghost = create(controller, grant_body(namespace, "ghost", approval="ghost", **by_approver))
    assert ghost.returncode == 0, ghost.stderr
    eventually(
        lambda: (
            "approval ghost does not exist"
            in (grant_status(cluster, namespace, "ghost").get("message") or "")
        ),
        what="the unvouched grant marked",
    )
    assert capability_service.invoke(processes(namespace, "ghost")).kind is OutcomeKind.PENDING
    assert grant_status(cluster, namespace, "ghost").get("operationsUsed", 0) == 0

    exact = create(controller, grant_body(namespace, "asked", **link))
    assert exact.returncode == 0, exact.stderr
    active(cluster, namespace, "asked")
    assert capability_service.invoke(processes(namespace, "asked")).kind is OutcomeKind.EXECUTED
    assert grant_status(cluster, namespace, "asked")["operationsUsed"] == 1

"""A mind acts only in its own namespace, unless a grant held in the other namespace names it.

The confused-deputy scenario, on the real API server with the controller under its own token:
a tenant who may only create Minds and Plans in its namespace asks the controller (which may
restart workloads in every managed namespace) to restart a Deployment of another team. The
capability layer refuses, records why and shows it on the Plan; a grant created in the other
namespace by someone entitled there, naming the tenant's mind, lets the same request through.
Admission refuses grants and grant requests whose target pattern reaches outside their namespace.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from minds.adapters.drivers.kubernetes import RESTARTED_AT
from minds.adapters.ledger import Ledger
from minds.devenv.kubectl import kubectl
from tests.e2e.executor_support import (
    APPROVERS,
    deployment,
    operator_plan,
    wait_step,
    workload,
)
from tests.fixtures.cluster import Cluster
from tests.fixtures.waiting import eventually

pytestmark = pytest.mark.usefixtures("session_controller", "controller_without_errors")

TENANT = "tenant-a"
OWNER = "team-b"
FENCE = "minds-namespace-fence"


def role(cluster: Cluster, namespace: str, user: str, rules: list[dict[str, Any]]) -> None:
    """Rights for ``user`` in ``namespace`` only."""
    objects = [
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "Role",
            "metadata": {"name": user, "namespace": namespace},
            "rules": rules,
        },
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "RoleBinding",
            "metadata": {"name": user, "namespace": namespace},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": user},
            "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": user}],
        },
    ]
    cluster.kubectl(
        "apply",
        "-f",
        "-",
        input_=json.dumps({"kind": "List", "apiVersion": "v1", "items": objects}),
    )


def as_user(cluster: Cluster, user: str, obj: dict[str, Any]) -> Any:
    return cluster.kubectl("create", f"--as={user}", "-f", "-", input_=json.dumps(obj), check=False)


def mind_body(namespace: str, **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "minds.dev/v1alpha1",
        "kind": "Mind",
        "metadata": {"name": "keeper", "namespace": namespace},
        "spec": spec,
    }


def grant_body(namespace: str, name: str, **spec: Any) -> dict[str, Any]:
    fields = {
        "mind": "keeper",
        "capability": "service.restart",
        "targetPattern": "atlas-*",
        "expiresAt": (datetime.now(UTC) + timedelta(hours=1)).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "operationCap": 1,
        "reason": "team-b lets team-a's keeper restart atlas-worker",
        # Admission checks it is the creator's own name (grant-policy.yaml).
        "grantedBy": "admin",
    }
    return {
        "apiVersion": "minds.dev/v1alpha1",
        "kind": "CapabilityGrant",
        "metadata": {"name": name, "namespace": namespace},
        "spec": fields | spec,
    }


def restart_plan(
    namespace: str, name: str, target_namespace: str, author: str = "admin"
) -> dict[str, Any]:
    steps = [
        {
            "key": "P1",
            "title": "restart atlas-worker",
            "kind": "capability",
            "capability": "service.restart",
            "parameters": workload(target_namespace),
        }
    ]
    return operator_plan(namespace, name, steps, author=author)


def restarted_at(cluster: Cluster, namespace: str) -> str | None:
    obj = cluster.api.get("deployment", "atlas-worker", namespace)
    annotations = obj["spec"]["template"]["metadata"].get("annotations") or {}
    value = annotations.get(RESTARTED_AT)
    return str(value) if value is not None else None


def test_a_tenant_cannot_make_the_controller_restart_another_namespace_without_its_grant(
    cluster: Cluster, namespace: str, other_namespace: str, e2e_ledger: Ledger
) -> None:
    tenant_ns, target_ns = namespace, other_namespace
    role(
        cluster,
        tenant_ns,
        TENANT,
        [
            {
                "apiGroups": ["minds.dev"],
                "resources": ["minds", "plans"],
                "verbs": ["get", "list", "create"],
            }
        ],
    )
    role(
        cluster,
        target_ns,
        OWNER,
        [
            {
                "apiGroups": ["minds.dev"],
                "resources": ["capabilitygrants"],
                "verbs": ["get", "create"],
            }
        ],
    )
    deployment(cluster, target_ns)
    # The mind's own policy allows restarts: only the namespace fence stands in the way.
    created = as_user(
        cluster,
        TENANT,
        mind_body(
            tenant_ns, capabilityPolicy=[{"capability": "service.restart", "decision": "allow"}]
        ),
    )
    assert created.returncode == 0, created.stderr

    plan = as_user(cluster, TENANT, restart_plan(tenant_ns, "reach", target_ns, TENANT))
    assert plan.returncode == 0, plan.stderr
    refused = wait_step(cluster, tenant_ns, "reach", "P1", "failed")

    target = f"{target_ns}/atlas-worker"
    assert refused["reason"].startswith(f"denied: {target} is in namespace {target_ns}, outside")
    assert restarted_at(cluster, target_ns) is None
    [decision] = [
        e
        for e in e2e_ledger.events(namespace=tenant_ns, type="policy_decision")
        if e.payload["capability"] == "service.restart"
    ]
    assert decision.payload["decision"] == "deny"
    assert decision.payload["target"] == target
    assert decision.payload["trail"][-1]["stage"] == "namespace"
    events = json.loads(
        cluster.kubectl(
            "get",
            "events",
            "-n",
            tenant_ns,
            "--field-selector=involvedObject.name=reach",
            "-o",
            "json",
        ).stdout
    )["items"]
    assert any("outside the mind's namespace" in e["message"] for e in events)

    # The tenant cannot give itself the grant: it has no rights in the other namespace.
    crossing = grant_body(target_ns, "let-a-restart", mind=f"{tenant_ns}/keeper", grantedBy=OWNER)
    forbidden = as_user(cluster, TENANT, crossing)
    assert forbidden.returncode != 0
    assert "forbidden" in forbidden.stderr.lower()

    # The other namespace's owner can; then the same request goes through, once.
    given = as_user(cluster, OWNER, crossing)
    assert given.returncode == 0, given.stderr
    again = as_user(cluster, TENANT, restart_plan(tenant_ns, "reach-again", target_ns, TENANT))
    assert again.returncode == 0, again.stderr
    done = wait_step(cluster, tenant_ns, "reach-again", "P1", "completed")

    assert done["status"] == "completed"
    assert restarted_at(cluster, target_ns) is not None
    [execution] = e2e_ledger.executions(namespace=tenant_ns, capability="service.restart")
    assert execution.authority["grant"] == "let-a-restart"
    used = eventually(
        lambda: (
            cluster.api.get("capabilitygrant", "let-a-restart", target_ns)
            .get("status", {})
            .get("operationsUsed")
        ),
        what="the grant's operation is used",
    )
    assert used == 1


def test_grants_and_grant_requests_cannot_reach_outside_their_namespace(
    cluster: Cluster, namespace: str, other_namespace: str
) -> None:
    outside = [f"{other_namespace}/atlas-*", "*/atlas-worker", "t-*/atlas"]

    def refused_first() -> Any:
        proc = cluster.kubectl(
            "create",
            "-f",
            "-",
            input_=json.dumps(grant_body(namespace, "g", targetPattern=outside[0])),
            check=False,
        )
        return proc if FENCE in proc.stderr else None

    # A policy takes effect a moment after it is created; the first refusal waits for it.
    eventually(refused_first, timeout=20, what="the fence policy is in force")
    refusals = [
        cluster.kubectl(
            "create",
            "-f",
            "-",
            input_=json.dumps(grant_body(namespace, f"g{i}", targetPattern=p)),
            check=False,
        )
        for i, p in enumerate(outside)
    ]
    inside = [
        cluster.kubectl(
            "create", "-f", "-", input_=json.dumps(grant_body(namespace, f"ok{i}", targetPattern=p))
        )
        for i, p in enumerate([f"{namespace}/atlas-*", "atlas-*"])
    ]
    request = operator_plan(
        namespace,
        "asks-outside",
        [
            {
                "key": "R1",
                "title": "ask for restarts elsewhere",
                "kind": "request_capability",
                "request": {
                    "capability": "service.restart",
                    "targetPattern": f"{other_namespace}/atlas-*",
                    "durationSeconds": 600,
                    "operationCap": 1,
                    "reason": "r",
                    "risk": "r",
                    "mitigation": "m",
                    "fallback": "f",
                },
            }
        ],
    )
    plan = cluster.kubectl("create", "-f", "-", input_=json.dumps(request), check=False)

    for refused in refusals:
        assert refused.returncode != 0
        assert FENCE in refused.stderr
        assert f"spec.targetPattern reaches outside namespace {namespace}" in refused.stderr
    assert all(proc.returncode == 0 for proc in inside)
    assert plan.returncode != 0
    assert "spec.steps[].request.targetPattern reaches outside" in plan.stderr


def test_the_controller_cannot_create_a_grant_for_a_mind_of_another_namespace(
    cluster: Cluster, namespace: str, other_namespace: str
) -> None:
    # Shaped as a grant from an approved request, so only the fence has a reason to refuse.
    link = {"approval": "self-granted", "grantedBy": "approver"}
    crossing = grant_body(other_namespace, "self-granted", mind=f"{namespace}/keeper", **link)
    own = grant_body(namespace, "self-granted", **link)

    refused = kubectl(
        cluster.controller_kubeconfig, "create", "-f", "-", input_=json.dumps(crossing), check=False
    )
    allowed = kubectl(
        cluster.controller_kubeconfig, "create", "-f", "-", input_=json.dumps(own), check=False
    )

    assert refused.returncode != 0
    assert "cannot create a grant for a mind of another namespace" in refused.stderr
    # With no Approval behind it, admission cannot refuse it; it grants nothing
    # (tests/e2e/test_grants.py).
    assert allowed.returncode == 0, allowed.stderr


def test_an_approved_action_in_another_namespace_spends_the_grant_held_there(
    cluster: Cluster, namespace: str, other_namespace: str, e2e_ledger: Ledger
) -> None:
    """The grant opens the fence and nothing more: the mind's policy still asks a person, and
    the approved restart uses the grant's operation."""
    deployment(cluster, other_namespace)
    cluster.kubectl(
        "apply",
        "-f",
        "-",
        input_=json.dumps(
            mind_body(
                namespace,
                capabilityPolicy=[{"capability": "service.restart", "decision": "approve"}],
                approvers=APPROVERS,
            )
        ),
    )
    crossing = grant_body(other_namespace, "let-a-restart", mind=f"{namespace}/keeper")
    cluster.kubectl("create", "-f", "-", input_=json.dumps(crossing))
    cluster.kubectl(
        "create", "-f", "-", input_=json.dumps(restart_plan(namespace, "asks", other_namespace))
    )

    waiting = wait_step(cluster, namespace, "asks", "P1", "awaiting_approval")
    unused = cluster.api.get("capabilitygrant", "let-a-restart", other_namespace).get("status", {})
    cluster.kubectl(
        "patch", "approval", waiting["approvalRef"], "-n", namespace, "--type=merge",
        "-p", json.dumps({"spec": {"decision": "Approved", "decidedBy": "approver"}}),
        context="approver",
    )  # fmt: skip
    wait_step(cluster, namespace, "asks", "P1", "completed")

    assert unused.get("operationsUsed", 0) == 0
    assert restarted_at(cluster, other_namespace) is not None
    grant = cluster.api.get("capabilitygrant", "let-a-restart", other_namespace)
    assert grant["status"]["operationsUsed"] == 1
    [execution] = e2e_ledger.executions(namespace=namespace, capability="service.restart")
    assert execution.authority["approval"] == waiting["approvalRef"]

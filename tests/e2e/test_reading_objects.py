"""What ``kubectl get`` and ``kubectl explain`` show of our resources, as a person reads them.

No controller: the columns are the API server's rendering of the CRDs, nothing else.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from tests.e2e.executor_support import APPROVERS, apply
from tests.fixtures.cluster import Cluster


def test_expires_shows_the_time_to_come_not_invalid(cluster: Cluster, namespace: str) -> None:
    expires = (datetime.now(UTC) + timedelta(hours=2)).strftime("%Y-%m-%dT%H:%M:%SZ")
    apply(
        cluster,
        {
            "apiVersion": "minds.dev/v1alpha1",
            "kind": "Approval",
            "metadata": {"name": "restart-later", "namespace": namespace},
            "spec": {
                "kind": "action",
                "mind": "keeper",
                "capability": "service.restart",
                "target": f"{namespace}/atlas-worker",
                "parameters": {"namespace": namespace, "name": "atlas-worker"},
                "explanation": {"what": "restart atlas-worker", "why": "it is stuck"},
                "origin": {"mind": "keeper"},
                "approvers": APPROVERS,
                "expiresAt": expires,
            },
        },
    )
    apply(
        cluster,
        {
            "apiVersion": "minds.dev/v1alpha1",
            "kind": "CapabilityGrant",
            "metadata": {"name": "list-later", "namespace": namespace},
            "spec": {
                "mind": "keeper",
                "capability": "host.process.list",
                "targetPattern": "host",
                "expiresAt": expires,
                "operationCap": 5,
                "reason": "diagnosing memory pressure",
                "grantedBy": "admin",
            },
        },
    )
    for kind, name in (("approvals", "restart-later"), ("capabilitygrants", "list-later")):
        table = cluster.kubectl("get", kind, "-n", namespace).stdout
        header, row = table.splitlines()[:2]
        assert "EXPIRES" in header.split()
        assert row.split()[0] == name
        assert "<invalid>" not in row
        column = header.split().index("EXPIRES")
        assert row.split()[column] == expires


def test_kubectl_explain_describes_the_fields(cluster: Cluster) -> None:
    caution = cluster.kubectl("explain", "mind.spec.caution").stdout
    assert "how much risk weighs against forming an intention" in caution
    decision = cluster.kubectl("explain", "approval.spec.decision").stdout
    assert "Approved or Denied" in decision
    spec = cluster.kubectl("explain", "capabilitygrant.spec").stdout
    assert "<no description>" not in spec

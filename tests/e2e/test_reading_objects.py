"""What ``kubectl get`` and ``kubectl explain`` show of our resources, as a person reads them.

No controller: the columns are the API server's rendering of the CRDs, nothing else.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from tests.e2e.executor_support import apply
from tests.e2e.test_status_guard import approval_body, grant_body
from tests.fixtures.cluster import Cluster


def test_expires_shows_the_time_to_come_not_invalid(cluster: Cluster, namespace: str) -> None:
    expires = (datetime.now(UTC) + timedelta(hours=2)).strftime("%Y-%m-%dT%H:%M:%SZ")
    approval = approval_body(namespace, "restart-later")
    grant = grant_body(namespace, "list-later")
    for body in (approval, grant):
        body["spec"]["expiresAt"] = expires
        apply(cluster, body)
    for kind, name in (("approvals", "restart-later"), ("capabilitygrants", "list-later")):
        table = cluster.kubectl("get", kind, "-n", namespace).stdout
        header, row = table.splitlines()[:2]
        assert "EXPIRES" in header.split()
        assert row.split()[0] == name
        assert "<invalid>" not in row
        # Columns are aligned, and an empty cell (no status here) prints as nothing.
        at = header.index("EXPIRES")
        assert row[at:].split()[0] == expires


def explain(cluster: Cluster, field: str) -> str:
    """What kubectl explain says, its line wrapping undone."""
    return " ".join(cluster.kubectl("explain", field).stdout.split())


def test_kubectl_explain_describes_the_fields(cluster: Cluster) -> None:
    assert "how much risk weighs against forming an intention" in explain(
        cluster, "mind.spec.caution"
    )
    assert "Set by a person: Approved or Denied" in explain(cluster, "approval.spec.decision")

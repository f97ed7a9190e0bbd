"""The status of Minds, Plans, Approvals and CapabilityGrants against the real API server: only
the controller's ServiceAccount writes it, whatever RBAC says, and only along legal
transitions (charts/minds-operator/files/status-policy.yaml).

Every identity is tried on every kind through every write path. Impersonating the controller's
ServiceAccount is accepted as that account (the admission request carries the impersonated
user, and the right to impersonate a ServiceAccount is the right to use it): it is held to the
same transitions as the controller itself.
"""

from __future__ import annotations

import json
import subprocess
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from minds.devenv.install import CONTROLLER_ACCOUNT, CONTROLLER_NAMESPACE
from minds.devenv.kubectl import kubectl
from tests.e2e.executor_support import APPROVERS, apply, mind, operator_plan, read_step
from tests.fixtures.cluster import Cluster

pytestmark = [pytest.mark.minutes(2), pytest.mark.usefixtures("no_controller_in_module")]

GUARD = "minds-status-guard"
CONTROLLER = f"system:serviceaccount:{CONTROLLER_NAMESPACE}:{CONTROLLER_ACCOUNT}"
ONLY_THE_CONTROLLER = "only the minds controller writes the status"


@dataclass(frozen=True)
class Identity:
    name: str
    kubeconfig: Callable[[Cluster], Path]
    args: tuple[str, ...] = ()
    writes_status: bool = False
    #: RBAC lets it write status, so a refusal can only come from the status guard.
    rbac_allows: bool = True

    def kubectl(
        self, cluster: Cluster, *args: str, input_: str | None = None
    ) -> subprocess.CompletedProcess[str]:
        return kubectl(self.kubeconfig(cluster), *self.args, *args, input_=input_, check=False)


def _admin(cluster: Cluster) -> Path:
    return cluster.kubeconfig


def _controller(cluster: Cluster) -> Path:
    return cluster.controller_kubeconfig


IDENTITIES = [
    Identity("system-masters", _admin),
    Identity("cluster-admin", _admin, ("--as=ops-admin",)),
    Identity("wildcard-role", _admin, ("--as=wildcard",)),
    Identity("approver", _admin, ("--context=approver",), rbac_allows=False),
    Identity("viewer", _admin, ("--context=viewer",), rbac_allows=False),
    Identity("controller", _controller, writes_status=True),
    Identity("impersonated-controller", _admin, (f"--as={CONTROLLER}",), writes_status=True),
]

KINDS = ["mind", "plan", "approval", "capabilitygrant"]
STATUS_PATHS = ["status-patch", "status-replace", "status-apply"]
PATHS = [*STATUS_PATHS, "main-resource"]


@dataclass(frozen=True)
class Scene:
    namespace: str
    names: dict[str, str]


def _bind(cluster: Cluster, name: str, user: str, role: str) -> None:
    binding = {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "ClusterRoleBinding",
        "metadata": {"name": name},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": role},
        "subjects": [{"kind": "User", "name": user}],
    }
    apply(cluster, binding)


def approval_body(namespace: str, name: str) -> dict[str, Any]:
    return {
        "apiVersion": "minds.dev/v1alpha1",
        "kind": "Approval",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {
            "kind": "action",
            "mind": "keeper",
            "capability": "service.restart",
            "target": f"{namespace}/atlas-worker",
            "parameters": {"namespace": namespace, "name": "atlas-worker"},
            "explanation": {"what": "restart atlas-worker", "why": "it is stuck"},
            "origin": {"mind": "keeper"},
            # As the controller copies them from the Mind when it raises a request.
            "approvers": APPROVERS,
            "expiresAt": (datetime.now(UTC) + timedelta(hours=1)).isoformat(),
        },
    }


def grant_body(namespace: str, name: str, **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "minds.dev/v1alpha1",
        "kind": "CapabilityGrant",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {
            "mind": "keeper",
            "capability": "host.process.list",
            "targetPattern": "host",
            "expiresAt": (datetime.now(UTC) + timedelta(hours=1)).isoformat(),
            "operationCap": 5,
            "reason": "diagnosing memory pressure",
            "grantedBy": "admin",
            **spec,
        },
    }


def create_objects(cluster: Cluster, namespace: str, suffix: str) -> dict[str, str]:
    names = {kind: f"{kind}-{suffix}" for kind in KINDS}
    mind(cluster, namespace, names["mind"])
    apply(cluster, operator_plan(namespace, names["plan"], [read_step("D1", namespace)]))
    apply(cluster, approval_body(namespace, names["approval"]))
    apply(cluster, grant_body(namespace, names["capabilitygrant"]))
    return names


@pytest.fixture(scope="module")
def scene(cluster: Cluster) -> Iterator[Scene]:
    namespace = f"t-{uuid.uuid4().hex[:10]}"
    cluster.kubectl("create", "namespace", namespace)
    wildcard = {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "ClusterRole",
        "metadata": {"name": f"minds-everything-{namespace}"},
        "rules": [{"apiGroups": ["minds.dev"], "resources": ["*"], "verbs": ["*"]}],
    }
    apply(cluster, wildcard)
    _bind(cluster, f"ops-admin-{namespace}", "ops-admin", "cluster-admin")
    _bind(cluster, f"wildcard-{namespace}", "wildcard", f"minds-everything-{namespace}")
    try:
        yield Scene(namespace, create_objects(cluster, namespace, "m"))
    finally:
        for obj in (
            f"clusterrolebinding/ops-admin-{namespace}",
            f"clusterrolebinding/wildcard-{namespace}",
            f"clusterrole/minds-everything-{namespace}",
        ):
            cluster.kubectl("delete", obj, "--wait=false", check=False)
        cluster.kubectl("delete", "namespace", namespace, "--wait=false", check=False)


def body(cluster: Cluster, namespace: str, kind: str, name: str) -> dict[str, Any]:
    out = cluster.kubectl("get", kind, name, "-n", namespace, "-o", "json").stdout
    return dict(json.loads(out))


def status_of(cluster: Cluster, namespace: str, kind: str, name: str) -> dict[str, Any]:
    return dict(body(cluster, namespace, kind, name).get("status") or {})


def marker(kind: str, value: str) -> dict[str, Any]:
    """A status change that is legal for the controller, so only who writes it matters."""
    field = {"mind": "lastCycle", "plan": "reason"}.get(kind, "message")
    return {field: value}


def write(
    cluster: Cluster,
    who: Identity,
    path: str,
    namespace: str,
    kind: str,
    name: str,
    status: dict[str, Any],
) -> subprocess.CompletedProcess[str]:
    where = (kind, name, "-n", namespace)
    if path == "status-patch":
        patch = json.dumps({"status": status})
        return who.kubectl(cluster, "patch", *where, "--subresource=status", "--type=merge",
                           "-p", patch)  # fmt: skip
    if path == "main-resource":
        patch = json.dumps({"status": status})
        return who.kubectl(cluster, "patch", *where, "--type=merge", "-p", patch)
    current = body(cluster, namespace, kind, name)
    if path == "status-replace":
        current["status"] = {**(current.get("status") or {}), **status}
        return who.kubectl(cluster, "replace", "--subresource=status", "-f", "-",
                           input_=json.dumps(current))  # fmt: skip
    applied = {
        "apiVersion": current["apiVersion"],
        "kind": current["kind"],
        "metadata": {"name": name, "namespace": namespace},
        "status": status,
    }
    return who.kubectl(cluster, "apply", "--server-side", "--force-conflicts",
                       "--field-manager=status-forgery", "--subresource=status", "-f", "-",
                       input_=json.dumps(applied))  # fmt: skip


# -- who may write status ----------------------------------------------------------------------


@pytest.mark.parametrize("path", PATHS)
@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("who", IDENTITIES, ids=[i.name for i in IDENTITIES])
def test_only_the_controller_writes_status(
    cluster: Cluster, scene: Scene, who: Identity, kind: str, path: str
) -> None:
    name = scene.names[kind]
    value = f"{who.name}-{path}-{uuid.uuid4().hex[:6]}"
    proc = write(cluster, who, path, scene.namespace, kind, name, marker(kind, value))
    landed = value in json.dumps(status_of(cluster, scene.namespace, kind, name))

    if path == "main-resource":
        # The API server drops status from a write to the main resource, for everyone.
        assert not landed
        return
    if who.writes_status:
        assert proc.returncode == 0, proc.stderr
        assert landed
        return
    assert proc.returncode != 0
    assert not landed
    if who.rbac_allows:
        assert GUARD in proc.stderr
        assert ONLY_THE_CONTROLLER in proc.stderr
    else:
        assert "forbidden" in proc.stderr.lower()


def test_status_given_at_creation_is_dropped(cluster: Cluster, scene: Scene) -> None:
    """Deleting and re-creating an object with a status of one's choosing gets nowhere."""
    forged = approval_body(scene.namespace, "recreated")
    forged["status"] = {"phase": "Approved"}
    created = cluster.kubectl("create", "-f", "-", input_=json.dumps(forged), check=False)
    assert created.returncode == 0, created.stderr
    assert status_of(cluster, scene.namespace, "approval", "recreated").get("phase") != "Approved"


# -- legal transitions, for the controller too ----------------------------------------------

WRITERS = [i for i in IDENTITIES if i.writes_status]


@pytest.fixture(params=WRITERS, ids=[i.name for i in WRITERS])
def writer(request: pytest.FixtureRequest) -> Identity:
    return request.param  # type: ignore[no-any-return]


@pytest.fixture
def fresh(cluster: Cluster, scene: Scene) -> dict[str, str]:
    """Objects of each kind no other test has written."""
    return create_objects(cluster, scene.namespace, uuid.uuid4().hex[:8])


def set_status(
    cluster: Cluster, who: Identity, scene: Scene, kind: str, name: str, status: dict[str, Any]
) -> subprocess.CompletedProcess[str]:
    return write(cluster, who, "status-patch", scene.namespace, kind, name, status)


def decide(cluster: Cluster, scene: Scene, name: str, decision: str) -> None:
    spec = {"decision": decision, "decidedBy": "approver"}
    cluster.kubectl("patch", "approval", name, "-n", scene.namespace, "--type=merge",
                    "-p", json.dumps({"spec": spec}), context="approver")  # fmt: skip


def refused(proc: subprocess.CompletedProcess[str], why: str) -> None:
    assert proc.returncode != 0, proc.stdout
    assert GUARD in proc.stderr
    assert why in proc.stderr


@pytest.mark.parametrize("phase", ["Approved", "Executed", "Denied"])
def test_no_decided_approval_phase_without_the_decision_in_spec(
    cluster: Cluster, scene: Scene, fresh: dict[str, str], writer: Identity, phase: str
) -> None:
    name = fresh["approval"]
    proc = set_status(cluster, writer, scene, "approval", name, {"phase": phase})
    refused(proc, f"status.phase {phase} needs spec.decision")
    assert status_of(cluster, scene.namespace, "approval", name).get("phase") != phase


def test_a_denial_cannot_be_turned_into_an_approval_through_status(
    cluster: Cluster, scene: Scene, fresh: dict[str, str], writer: Identity
) -> None:
    name = fresh["approval"]
    decide(cluster, scene, name, "Denied")
    for phase in ("Approved", "Executed"):
        proc = set_status(cluster, writer, scene, "approval", name, {"phase": phase})
        refused(proc, "needs spec.decision Approved")
    ok = set_status(cluster, writer, scene, "approval", name, {"phase": "Denied"})
    assert ok.returncode == 0, ok.stderr
    for phase in ("Pending", "Approved"):
        proc = set_status(cluster, writer, scene, "approval", name, {"phase": phase})
        refused(proc, "status.phase Denied is terminal")


def test_an_approved_approval_moves_to_executed_and_stays(
    cluster: Cluster, scene: Scene, fresh: dict[str, str], writer: Identity
) -> None:
    name = fresh["approval"]
    decide(cluster, scene, name, "Approved")
    for phase in ("Approved", "Executed"):
        ok = set_status(cluster, writer, scene, "approval", name, {"phase": phase})
        assert ok.returncode == 0, ok.stderr
    again = set_status(cluster, writer, scene, "approval", name, {"phase": "Approved"})
    refused(again, "status.phase Executed is terminal")
    # Removing the phase is a change of it too (the schema's default puts Pending back).
    current = body(cluster, scene.namespace, "approval", name)
    current["status"] = {}
    emptied = writer.kubectl(cluster, "replace", "--subresource=status", "-f", "-",
                             input_=json.dumps(current))  # fmt: skip
    refused(emptied, "status.phase Executed is terminal: it cannot become Pending")


@pytest.mark.parametrize("ended", ["Expired", "Withdrawn"])
def test_an_ended_approval_stays_ended(
    cluster: Cluster, scene: Scene, fresh: dict[str, str], writer: Identity, ended: str
) -> None:
    name = fresh["approval"]
    assert set_status(cluster, writer, scene, "approval", name, {"phase": ended}).returncode == 0
    refused(
        set_status(cluster, writer, scene, "approval", name, {"phase": "Pending"}),
        f"status.phase {ended} is terminal",
    )


def test_an_approved_action_that_ran_after_its_withdrawal_is_recorded_executed(
    cluster: Cluster, scene: Scene, fresh: dict[str, str], writer: Identity
) -> None:
    """The one move out of a terminal phase: what ran is recorded, and only what was approved."""
    undecided, decided = fresh["approval"], f"{fresh['approval']}-approved"
    withdrawn = set_status(cluster, writer, scene, "approval", undecided, {"phase": "Withdrawn"})
    assert withdrawn.returncode == 0, withdrawn.stderr
    refused(
        set_status(cluster, writer, scene, "approval", undecided, {"phase": "Executed"}),
        "status.phase Executed needs spec.decision Approved",
    )
    apply(cluster, approval_body(scene.namespace, decided))
    decide(cluster, scene, decided, "Approved")
    for phase in ("Withdrawn", "Executed"):
        ok = set_status(cluster, writer, scene, "approval", decided, {"phase": phase})
        assert ok.returncode == 0, ok.stderr


def test_a_failed_plan_is_only_ever_handed_to_its_replanning(
    cluster: Cluster, scene: Scene, fresh: dict[str, str], writer: Identity
) -> None:
    """The other move out of a terminal phase: a failed plan makes way for a new revision."""
    name = fresh["plan"]
    assert set_status(cluster, writer, scene, "plan", name, {"phase": "failed"}).returncode == 0
    refused(
        set_status(cluster, writer, scene, "plan", name, {"phase": "executing"}),
        "status.phase failed is terminal",
    )
    for phase in ("replanning", "superseded"):
        ok = set_status(cluster, writer, scene, "plan", name, {"phase": phase})
        assert ok.returncode == 0, ok.stderr


@pytest.mark.parametrize("ended", ["completed", "failed", "superseded", "abandoned"])
def test_a_finished_plan_stays_finished(
    cluster: Cluster, scene: Scene, fresh: dict[str, str], writer: Identity, ended: str
) -> None:
    name = fresh["plan"]
    assert set_status(cluster, writer, scene, "plan", name, {"phase": ended}).returncode == 0
    for phase in ("executing", "validated"):
        refused(
            set_status(cluster, writer, scene, "plan", name, {"phase": phase}),
            f"status.phase {ended} is terminal",
        )


@pytest.mark.parametrize(
    ("counter", "before", "after"),
    [
        ("invocations", 3, 1),
        ("checks", 40, 7),
        ("approvals", 2, 0),
        ("money", 2.5, 1.25),
        ("tokens", 900, 0),
    ],
)
def test_plan_budget_counters_only_grow(
    cluster: Cluster,
    scene: Scene,
    fresh: dict[str, str],
    writer: Identity,
    counter: str,
    before: float,
    after: float,
) -> None:
    name = fresh["plan"]
    grown = set_status(cluster, writer, scene, "plan", name, {"actual": {counter: before}})
    assert grown.returncode == 0, grown.stderr
    refused(
        set_status(cluster, writer, scene, "plan", name, {"actual": {counter: after}}),
        f"status.actual counters only grow: {counter} would shrink",
    )
    actual = status_of(cluster, scene.namespace, "plan", name)["actual"]
    assert actual[counter] == before


def test_a_grant_counter_only_grows_and_never_passes_the_cap(
    cluster: Cluster, scene: Scene, fresh: dict[str, str], writer: Identity
) -> None:
    name = fresh["capabilitygrant"]
    used = set_status(cluster, writer, scene, "capabilitygrant", name, {"operationsUsed": 3})
    assert used.returncode == 0, used.stderr
    refused(
        set_status(cluster, writer, scene, "capabilitygrant", name, {"operationsUsed": 0}),
        "status.operationsUsed only grows: 3 cannot become 0",
    )
    refused(
        set_status(cluster, writer, scene, "capabilitygrant", name, {"operationsUsed": 6}),
        "cannot exceed spec.operationCap",
    )
    assert status_of(cluster, scene.namespace, "capabilitygrant", name)["operationsUsed"] == 3


@pytest.mark.parametrize("ended", ["Exhausted", "Expired", "Revoked"])
def test_an_ended_grant_stays_ended(
    cluster: Cluster, scene: Scene, fresh: dict[str, str], writer: Identity, ended: str
) -> None:
    name = fresh["capabilitygrant"]
    ok = set_status(cluster, writer, scene, "capabilitygrant", name, {"phase": ended})
    assert ok.returncode == 0, ok.stderr
    refused(
        set_status(cluster, writer, scene, "capabilitygrant", name, {"phase": "Active"}),
        f"status.phase {ended} is terminal",
    )


def test_who_granted_is_recorded_once(
    cluster: Cluster, scene: Scene, fresh: dict[str, str], writer: Identity
) -> None:
    name = fresh["capabilitygrant"]
    ok = set_status(cluster, writer, scene, "capabilitygrant", name, {"grantedBy": "admin"})
    assert ok.returncode == 0, ok.stderr
    refused(
        set_status(cluster, writer, scene, "capabilitygrant", name, {"grantedBy": "alice"}),
        "cannot change once recorded",
    )

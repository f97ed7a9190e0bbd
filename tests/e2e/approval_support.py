"""Shared by the approval e2e tests: a plan step that asks, deciding as someone, writing an
Approval's status as someone else would, and reading what the Approval and the ledger say."""

from __future__ import annotations

import json
import subprocess
import threading
from collections.abc import Iterator
from datetime import datetime
from typing import Any

import pytest

from minds.adapters.ledger import Ledger
from minds.devenv.kubectl import kubectl
from tests.e2e.executor_support import deployment, mind, plan_body, restart_request
from tests.fixtures.cluster import Cluster
from tests.fixtures.waiting import eventually

MIND = "keeper"
PLAN = "restart-atlas"


def setup_mind(cluster: Cluster, namespace: str, **spec: Any) -> None:
    """The keeper, whose policy asks a person before a restart, and its workload."""
    mind(
        cluster,
        namespace,
        MIND,
        capabilityPolicy=[{"capability": "service.restart", "decision": "approve"}],
        **spec,
    )
    deployment(cluster, namespace)


def asked(cluster: Cluster, namespace: str, plan: str = PLAN) -> str:
    """A Plan whose one step restarts the workload; returns the Approval its executor raised."""
    return restart_request(cluster, namespace, plan, MIND)


def approval(cluster: Cluster, namespace: str, name: str) -> dict[str, Any]:
    return cluster.api.get("approval", name, namespace)


def shown(cluster: Cluster, namespace: str, name: str) -> str | None:
    phase = (approval(cluster, namespace, name).get("status") or {}).get("phase")
    return str(phase) if phase else None


def phase(
    cluster: Cluster, namespace: str, name: str, want: str, timeout: float = 60
) -> dict[str, Any]:
    return eventually(
        lambda: (
            (a := approval(cluster, namespace, name)).get("status", {}).get("phase") == want and a
        ),
        timeout=timeout,
        what=f"approval {name} {want}",
    )


def decide(
    cluster: Cluster,
    namespace: str,
    name: str,
    decision: str,
    by: str,
    context: str = "approver",
    note: str | None = None,
    impersonate: tuple[str, ...] = (),
    as_controller: bool = False,
) -> subprocess.CompletedProcess[str]:
    """``kubectl patch`` the decision, as ``context`` (``impersonate``: --as/--as-group), or
    with the controller's own ServiceAccount token (``as_controller``)."""
    spec: dict[str, Any] = {"decision": decision, "decidedBy": by}
    if note is not None:
        spec["note"] = note
    args = (
        "patch",
        "approval",
        name,
        "-n",
        namespace,
        "--type=merge",
        "-p",
        json.dumps({"spec": spec}),
        *impersonate,
    )
    if as_controller:
        return kubectl(cluster.controller_kubeconfig, *args, check=False)
    return cluster.kubectl(*args, context=context, check=False)


def restarted_at(cluster: Cluster, namespace: str) -> str | None:
    obj = cluster.api.get("deployment", "atlas-worker", namespace)
    annotations = obj["spec"]["template"]["metadata"].get("annotations") or {}
    return annotations.get("kubectl.kubernetes.io/restartedAt")


def lifecycle(ledger: Ledger, uid: str) -> set[str]:
    """The ledger's event types about one Approval object."""
    return {e.type for e in ledger.events(subject_uid=uid)}


def plan_uid(cluster: Cluster, namespace: str, plan: str = PLAN) -> str:
    return str(plan_body(cluster, namespace, plan)["metadata"]["uid"])


# -- writing status as someone other than the controller's own code --------------------------

#: Who writes: the cluster admin (system:masters), or the controller's own ServiceAccount
#: token used by something that is not the controller's derivation.
WRITERS = ("admin", "controller")
#: How: a merge patch, or a full replace (update) of the status subresource.
PATHS = ("patch", "replace")


def as_writer(
    cluster: Cluster, who: str, *args: str, input_: str | None = None
) -> subprocess.CompletedProcess[str]:
    """kubectl as one of WRITERS."""
    if who == "controller":
        return kubectl(cluster.controller_kubeconfig, *args, input_=input_, check=False)
    return cluster.kubectl(*args, input_=input_, check=False)


def write_status(
    cluster: Cluster, namespace: str, name: str, status: dict[str, Any], who: str, how: str
) -> subprocess.CompletedProcess[str]:
    target = ("approval", name, "-n", namespace, "--subresource=status")
    if how == "patch":
        patch = json.dumps({"status": status})
        return as_writer(cluster, who, "patch", *target, "--type=merge", "-p", patch)
    body = approval(cluster, namespace, name)
    body["status"] = status
    replace = ("replace", "--subresource=status", "-f", "-")
    return as_writer(cluster, who, *replace, input_=json.dumps(body))


def forge(
    cluster: Cluster, namespace: str, name: str, status: dict[str, Any], who: str, how: str
) -> None:
    """Write ``status`` (retrying a lost race with the controller's own write)."""
    last: list[str] = []

    def written() -> bool:
        proc = write_status(cluster, namespace, name, status, who, how)
        last[:] = [proc.stderr]
        return proc.returncode == 0

    try:
        eventually(written, timeout=30, what=f"{who} writes status by {how}")
    except AssertionError as exc:
        raise AssertionError(f"{exc}: {last}") from None


def stamp(at: datetime) -> str:
    return at.strftime("%Y-%m-%dT%H:%M:%SZ")


@pytest.fixture
def no_status_guard(cluster: Cluster) -> Iterator[None]:
    """The cluster without any admission policy on status subresources while the test runs.

    Admission may also refuse a forged status; these tests are about the controller, whose
    rule (status never authorises) must hold on its own, so the guard is taken out of the way
    and put back afterwards. Without such a policy installed, this changes nothing."""
    policies = json.loads(
        cluster.kubectl("get", "validatingadmissionpolicies", "-o", "json").stdout
    )["items"]
    guards = {
        p["metadata"]["name"]
        for p in policies
        for rule in (p["spec"].get("matchConstraints") or {}).get("resourceRules") or []
        if any(r.endswith("/status") or r == "*" for r in rule.get("resources") or [])
    }
    bindings = [
        b
        for b in json.loads(
            cluster.kubectl("get", "validatingadmissionpolicybindings", "-o", "json").stdout
        )["items"]
        if b["spec"]["policyName"] in guards
    ]
    for binding in bindings:
        cluster.kubectl("delete", "validatingadmissionpolicybinding", binding["metadata"]["name"])
    try:
        yield
    finally:
        for binding in bindings:
            meta = binding["metadata"]
            binding["metadata"] = {"name": meta["name"], "labels": meta.get("labels") or {}}
            cluster.kubectl("create", "-f", "-", input_=json.dumps(binding))


class ApprovalVersions:
    """Every version of a namespace's Approvals the API server sends a watch that started
    before any of them existed (from a listing's resourceVersion, so none is missed)."""

    def __init__(self, cluster: Cluster, namespace: str) -> None:
        from kubernetes import client, config, watch

        api = client.CustomObjectsApi(config.new_client_from_config(str(cluster.kubeconfig)))
        where = ("minds.dev", "v1alpha1", namespace, "approvals")
        listed = api.list_namespaced_custom_object(*where)
        self.seen: list[dict[str, Any]] = []
        self._stopped = False
        self._watch = watch.Watch()
        self._stream = self._watch.stream(
            api.list_namespaced_custom_object,
            *where,
            resource_version=listed["metadata"]["resourceVersion"],
            timeout_seconds=600,
        )
        self._thread = threading.Thread(target=self._follow, daemon=True)
        self._thread.start()

    def _follow(self) -> None:
        try:
            for event in self._stream:
                self.seen.append(event["object"])
        except Exception:  # the connection cut by stop(), or the API server going away
            if not self._stopped:
                raise

    def statuses(self, name: str) -> list[dict[str, Any]]:
        """The statuses the Approval showed, in order, each change once: the first is what it
        read when created, every later one a status write that changed something."""
        shown: list[dict[str, Any]] = []
        for version in list(self.seen):
            if version["metadata"]["name"] != name:
                continue
            status = version.get("status") or {}
            if not shown or shown[-1] != status:
                shown.append(status)
        return shown

    def reached(self, name: str, resource_version: str) -> bool:
        return any(
            v["metadata"]["name"] == name and v["metadata"]["resourceVersion"] == resource_version
            for v in list(self.seen)
        )

    def stop(self) -> None:
        self._stopped = True
        self._watch.stop()

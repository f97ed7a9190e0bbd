"""The Kubernetes driver against real workloads in the devcluster.

Nothing runs pods in the devcluster (no controller-manager, no kubelets), so each test writes
the workload's status itself through the status subresource, as a workload controller would,
and checks the state the driver reports from it. Restarts are read back from the API server.
Real pod logs cannot be produced here: the log path (selection across pods, ordering, limit,
filter, masking) is unit-tested on the API's log format in tests/unit/drivers.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
import yaml
from kubernetes import client

from minds.adapters.drivers import RESTART_SUMMARY, DriverResult, Drivers, KubernetesDriver
from minds.adapters.drivers.kubernetes import RBAC_RULES, RESTARTED_AT
from minds.adapters.kube.client import api_client
from minds.devenv.install import service_account_kubeconfig
from minds.domain.capabilities.registry import REGISTRY
from tests.fixtures.cluster import Cluster

NAME = "atlas"
NOW = datetime(2030, 5, 6, 7, 8, 9, tzinfo=UTC)


@pytest.fixture(scope="module")
def admin_api(cluster: Cluster) -> Iterator[client.ApiClient]:
    api = api_client(str(cluster.kubeconfig))
    yield api
    api.close()


@pytest.fixture
def drivers(admin_api: client.ApiClient) -> Drivers:
    return Drivers([KubernetesDriver(admin_api, clock=lambda: NOW)])


def invoke(
    drivers: Drivers, capability: str, namespace: str, *, dry_run: bool = False, **raw: Any
) -> DriverResult:
    parameters = REGISTRY[capability].parse({"namespace": namespace, "name": NAME, **raw})
    return drivers.invoke(capability, parameters, dry_run=dry_run)


def workload(kind: str, replicas: int | None = 3, **spec: Any) -> dict[str, Any]:
    labels = {"app": NAME}
    body: dict[str, Any] = {
        "selector": {"matchLabels": labels},
        "template": {
            "metadata": {"labels": labels},
            "spec": {"containers": [{"name": "app", "image": "atlas:1"}]},
        },
        **spec,
    }
    if replicas is not None:
        body["replicas"] = replicas
    if kind == "StatefulSet":
        body["serviceName"] = NAME
    return {"apiVersion": "apps/v1", "kind": kind, "metadata": {"name": NAME}, "spec": body}


def apply(cluster: Cluster, namespace: str, manifest: dict[str, Any]) -> None:
    cluster.kubectl("apply", "-n", namespace, "-f", "-", input_=yaml.safe_dump(manifest))


def set_status(cluster: Cluster, namespace: str, kind: str, status: dict[str, Any]) -> None:
    cluster.kubectl(
        "patch", kind.lower(), NAME, "-n", namespace, "--subresource=status", "--type=merge",
        "-p", json.dumps({"status": status}),
    )  # fmt: skip


def get(cluster: Cluster, namespace: str, kind: str) -> dict[str, Any]:
    out = cluster.kubectl("get", kind.lower(), NAME, "-n", namespace, "-o", "json").stdout
    return dict(json.loads(out))


def condition(type_: str, status: str, reason: str) -> dict[str, str]:
    return {
        "type": type_,
        "status": status,
        "reason": reason,
        "message": f"{type_} is {status}: {reason}",
        "lastUpdateTime": "2030-05-06T07:00:00Z",
        "lastTransitionTime": "2030-05-06T07:00:00Z",
    }


COMPLETE = condition("Progressing", "True", "NewReplicaSetAvailable")
ROLLING = condition("Progressing", "True", "ReplicaSetUpdated")
DEADLINE = condition("Progressing", "False", "ProgressDeadlineExceeded")
AVAILABLE = condition("Available", "True", "MinimumReplicasAvailable")
UNAVAILABLE = condition("Available", "False", "MinimumReplicasUnavailable")


def counts(replicas: int, updated: int, ready: int, available: int) -> dict[str, int]:
    return {
        "observedGeneration": 1,
        "replicas": replicas,
        "updatedReplicas": updated,
        "readyReplicas": ready,
        "availableReplicas": available,
    }


@pytest.mark.parametrize(
    ("replicas", "status", "state", "ready"),
    [
        (3, {**counts(3, 3, 3, 3), "conditions": [AVAILABLE, COMPLETE]}, "running", 3),
        (3, {**counts(4, 1, 3, 3), "conditions": [AVAILABLE, ROLLING]}, "progressing", 3),
        (3, {**counts(3, 3, 1, 1), "conditions": [UNAVAILABLE, COMPLETE]}, "degraded", 1),
        (3, {**counts(3, 1, 2, 2), "conditions": [UNAVAILABLE, DEADLINE]}, "degraded", 2),
        (0, {"observedGeneration": 1}, "stopped", 0),
    ],
    ids=["running", "progressing", "degraded", "deadline-exceeded", "stopped"],
)
def test_deployment_states_follow_the_status_set(
    cluster: Cluster,
    namespace: str,
    drivers: Drivers,
    replicas: int,
    status: dict[str, Any],
    state: str,
    ready: int,
) -> None:
    apply(cluster, namespace, workload("Deployment", replicas))
    set_status(cluster, namespace, "Deployment", status)

    result = invoke(drivers, "service.status", namespace)

    assert result.ok, result.error
    assert result.fields["state"] == state
    assert result.fields["ready"] is (state == "running")
    assert result.fields["readyReplicas"] == ready
    assert result.fields["desiredReplicas"] == replicas
    assert result.summary.startswith(f"Deployment {namespace}/{NAME} is {state}: ")
    assert isinstance(result.output, dict)
    reported = json.loads(json.dumps(result.output["conditions"]))
    assert [c["type"] for c in reported] == [c["type"] for c in status.get("conditions", [])]


def test_a_spec_the_controller_has_not_observed_is_progressing(
    cluster: Cluster, namespace: str, drivers: Drivers
) -> None:
    apply(cluster, namespace, workload("Deployment"))
    set_status(cluster, namespace, "Deployment", {**counts(3, 3, 3, 3), "conditions": [COMPLETE]})
    assert invoke(drivers, "service.status", namespace).fields["state"] == "running"

    cluster.kubectl("scale", "deployment", NAME, "-n", namespace, "--replicas=5")

    result = invoke(drivers, "service.status", namespace)
    assert result.fields["state"] == "progressing"
    assert "generation 2 not yet observed" in result.summary


def test_restarts_are_counted_from_the_workload_s_pods(
    cluster: Cluster, namespace: str, drivers: Drivers
) -> None:
    apply(cluster, namespace, workload("Deployment", 1))
    set_status(cluster, namespace, "Deployment", counts(1, 1, 1, 1))
    create_pod(cluster, namespace, "atlas-abc", {"app": NAME})
    create_pod(cluster, namespace, "other", {"app": "other"})
    for pod, restarts in (("atlas-abc", 4), ("other", 9)):
        cluster.kubectl(
            "patch", "pod", pod, "-n", namespace, "--subresource=status", "--type=merge", "-p",
            json.dumps({"status": {"containerStatuses": [
                {"name": "app", "image": "atlas:1", "imageID": "", "ready": False,
                 "restartCount": restarts, "state": {"waiting": {"reason": "CrashLoopBackOff"}}}
            ]}}),
        )  # fmt: skip

    result = invoke(drivers, "service.status", namespace)

    assert result.fields["restarts"] == 4
    assert isinstance(result.output, dict)
    assert result.output["pods"] == 1


@pytest.mark.parametrize(
    ("kind", "status", "state"),
    [
        (
            "StatefulSet",
            {"observedGeneration": 1, "replicas": 3, "readyReplicas": 3, "availableReplicas": 3,
             "updatedReplicas": 3, "currentRevision": "atlas-1", "updateRevision": "atlas-1"},
            "running",
        ),
        (
            "StatefulSet",
            {"observedGeneration": 1, "replicas": 3, "readyReplicas": 2, "availableReplicas": 2,
             "updatedReplicas": 1, "currentRevision": "atlas-1", "updateRevision": "atlas-2"},
            "progressing",
        ),
        (
            "DaemonSet",
            {"observedGeneration": 1, "desiredNumberScheduled": 2, "currentNumberScheduled": 2,
             "updatedNumberScheduled": 2, "numberReady": 2, "numberAvailable": 2,
             "numberMisscheduled": 0},
            "running",
        ),
        (
            "DaemonSet",
            {"observedGeneration": 1, "desiredNumberScheduled": 2, "currentNumberScheduled": 2,
             "updatedNumberScheduled": 2, "numberReady": 1, "numberAvailable": 1,
             "numberMisscheduled": 0, "numberUnavailable": 1},
            "degraded",
        ),
        (
            "DaemonSet",
            {"observedGeneration": 1, "desiredNumberScheduled": 0, "currentNumberScheduled": 0,
             "numberReady": 0, "numberMisscheduled": 0},
            "stopped",
        ),
    ],
    ids=["sts-running", "sts-progressing", "ds-running", "ds-degraded", "ds-no-nodes"],
)  # fmt: skip
def test_stateful_sets_and_daemon_sets_are_read(
    cluster: Cluster,
    namespace: str,
    drivers: Drivers,
    kind: str,
    status: dict[str, Any],
    state: str,
) -> None:
    apply(cluster, namespace, workload(kind, None if kind == "DaemonSet" else 3))
    set_status(cluster, namespace, kind, status)

    result = invoke(drivers, "service.status", namespace, kind=kind)

    assert result.ok, result.error
    assert result.fields["state"] == state
    assert result.summary.startswith(f"{kind} {namespace}/{NAME} is {state}")


@pytest.mark.parametrize("kind", ["Deployment", "StatefulSet", "DaemonSet"])
def test_a_missing_workload_is_a_clear_error(namespace: str, drivers: Drivers, kind: str) -> None:
    for capability in ("service.status", "service.restart", "logs.query"):
        result = invoke(drivers, capability, namespace, kind=kind)
        assert not result.ok
        assert result.error == f"{kind} {namespace}/{NAME} not found"
    assert invoke(drivers, "service.status", namespace, kind=kind).fields["state"] == "absent"


@pytest.mark.parametrize("kind", ["Deployment", "StatefulSet", "DaemonSet"])
def test_restart_patches_the_pod_template_and_claims_no_health(
    cluster: Cluster, namespace: str, drivers: Drivers, kind: str
) -> None:
    apply(cluster, namespace, workload(kind, None if kind == "DaemonSet" else 2))
    before = get(cluster, namespace, kind)

    result = invoke(drivers, "service.restart", namespace, kind=kind)

    assert result.ok, result.error
    assert result.summary == RESTART_SUMMARY == "restart requested (health not yet verified)"
    after = get(cluster, namespace, kind)
    annotations = after["spec"]["template"]["metadata"]["annotations"]
    assert annotations[RESTARTED_AT] == "2030-05-06T07:08:09Z"
    assert after["metadata"]["generation"] == before["metadata"]["generation"] + 1
    assert isinstance(result.output, dict)
    assert result.output["generation"] == after["metadata"]["generation"]
    assert result.output["dryRun"] is False


def test_a_dry_run_restart_changes_nothing(
    cluster: Cluster, namespace: str, drivers: Drivers
) -> None:
    apply(cluster, namespace, workload("Deployment"))
    before = get(cluster, namespace, "Deployment")

    result = invoke(drivers, "service.restart", namespace, dry_run=True)

    assert result.ok, result.error
    assert result.summary.startswith("dry run: ")
    assert "health" not in result.summary
    after = get(cluster, namespace, "Deployment")
    assert after["metadata"]["resourceVersion"] == before["metadata"]["resourceVersion"]
    assert RESTARTED_AT not in (after["spec"]["template"]["metadata"].get("annotations") or {})


def test_a_paused_deployment_is_not_restarted(
    cluster: Cluster, namespace: str, drivers: Drivers
) -> None:
    apply(cluster, namespace, workload("Deployment", paused=True))
    result = invoke(drivers, "service.restart", namespace)
    assert not result.ok
    assert "paused" in (result.error or "")
    assert RESTARTED_AT not in (
        get(cluster, namespace, "Deployment")["spec"]["template"]["metadata"].get("annotations")
        or {}
    )


class Reads:
    """The driver's reads of workloads, counted (the same client calls, passed through)."""

    def __init__(self, driver: KubernetesDriver) -> None:
        self.count = 0
        # The one call under test is counted, not replaced.
        apps = driver._apps
        real = apps.read_namespaced_deployment

        def read(*args: Any, **kwargs: Any) -> Any:
            self.count += 1
            return real(*args, **kwargs)

        apps.read_namespaced_deployment = read  # type: ignore[method-assign]


def watched_driver(
    api: client.ApiClient, bodies: dict[str, dict[str, Any]]
) -> tuple[Drivers, Reads]:
    driver = KubernetesDriver(
        api, clock=lambda: NOW, watched=lambda plural, ns, name: bodies.get(f"{plural}/{name}")
    )
    return Drivers([driver]), Reads(driver)


def test_a_watched_workload_is_restarted_from_its_watched_body_without_a_read(
    cluster: Cluster, namespace: str, admin_api: client.ApiClient
) -> None:
    """What the watch brought is what is checked: the patch carries its resourceVersion, so
    the API server applies it to exactly that body."""
    apply(cluster, namespace, workload("Deployment"))
    drivers, reads = watched_driver(
        admin_api, {f"deployments/{NAME}": get(cluster, namespace, "Deployment")}
    )
    result = invoke(drivers, "service.restart", namespace)
    assert result.ok, result.error
    assert reads.count == 0
    annotations = get(cluster, namespace, "Deployment")["spec"]["template"]["metadata"]
    assert annotations["annotations"][RESTARTED_AT] == "2030-05-06T07:08:09Z"


def test_a_watched_body_behind_the_server_is_read_again_and_its_news_decides(
    cluster: Cluster, namespace: str, admin_api: client.ApiClient
) -> None:
    """The watch has not yet brought the pause someone just made: the precondition fails,
    the driver reads the workload, and the pause it finds refuses the restart."""
    apply(cluster, namespace, workload("Deployment"))
    stale = get(cluster, namespace, "Deployment")
    cluster.kubectl("rollout", "pause", f"deployment/{NAME}", "-n", namespace)
    drivers, reads = watched_driver(admin_api, {f"deployments/{NAME}": stale})
    result = invoke(drivers, "service.restart", namespace)
    assert not result.ok
    assert "paused" in (result.error or "")
    assert reads.count == 1
    template = get(cluster, namespace, "Deployment")["spec"]["template"]["metadata"]
    assert RESTARTED_AT not in (template.get("annotations") or {})
    cluster.kubectl("rollout", "resume", f"deployment/{NAME}", "-n", namespace)
    result = invoke(drivers, "service.restart", namespace)  # still the stale body: read again
    assert result.ok, result.error
    assert reads.count == 2


def test_a_dry_run_surfaces_missing_permissions(cluster: Cluster, namespace: str) -> None:
    apply(cluster, namespace, workload("Deployment"))
    intruder = api_client(str(cluster.kubeconfig), context="intruder")
    try:
        drivers = Drivers([KubernetesDriver(intruder)])
        result = invoke(drivers, "service.restart", namespace, dry_run=True)
    finally:
        intruder.close()
    assert not result.ok
    assert (result.error or "").startswith(f"forbidden (Deployment {namespace}/{NAME}): ")
    assert 'User "intruder" cannot get resource "deployments"' in (result.error or "")


def test_logs_with_no_pods_are_ok_and_empty(
    namespace: str, cluster: Cluster, drivers: Drivers
) -> None:
    apply(cluster, namespace, workload("Deployment"))
    result = invoke(drivers, "logs.query", namespace, filter="error")
    assert result.ok, result.error
    assert result.fields == {"lineCount": 0, "text": ""}
    assert isinstance(result.output, dict)
    assert result.output["lines"] == []
    assert result.output["pods"] == []
    assert result.output["masking"] is True
    assert result.summary == f"no pods of Deployment {namespace}/{NAME}: no log lines"


def test_logs_select_the_workload_s_pods_only(
    cluster: Cluster, namespace: str, drivers: Drivers
) -> None:
    apply(cluster, namespace, workload("Deployment"))
    create_pod(cluster, namespace, "atlas-1", {"app": NAME})
    create_pod(cluster, namespace, "atlas-2", {"app": NAME})
    create_pod(cluster, namespace, "bystander", {"app": "other"})

    result = invoke(drivers, "logs.query", namespace)

    assert result.ok, result.error
    assert isinstance(result.output, dict)
    assert result.output["selector"] == f"app={NAME}"
    assert result.output["pods"] == ["atlas-1", "atlas-2"]
    # No kubelet ran these pods, so there is nothing to read; the API says so per container
    # or answers empty, and either way the query succeeds with what it could read.
    assert result.fields["lineCount"] == 0


def test_the_listed_rbac_rules_are_enough(cluster: Cluster, namespace: str, tmp_path: Path) -> None:
    """The drivers under a ServiceAccount bound to RBAC_RULES alone: every capability works."""
    account = "driver"
    rbac = [
        {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": account}},
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "Role",
            "metadata": {"name": account},
            "rules": [dict(rule) for rule in RBAC_RULES],
        },
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "RoleBinding",
            "metadata": {"name": account},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": account},
            "subjects": [{"kind": "ServiceAccount", "name": account, "namespace": namespace}],
        },
    ]
    cluster.kubectl("apply", "-n", namespace, "-f", "-", input_=yaml.safe_dump_all(rbac))
    apply(cluster, namespace, workload("Deployment"))
    set_status(cluster, namespace, "Deployment", counts(3, 3, 3, 3))
    create_pod(cluster, namespace, "atlas-1", {"app": NAME})
    kubeconfig = service_account_kubeconfig(
        cluster.kubeconfig, tmp_path / "driver.kubeconfig", namespace=namespace, account=account
    )
    api = api_client(str(kubeconfig))
    try:
        drivers = Drivers([KubernetesDriver(api)])
        status = invoke(drivers, "service.status", namespace)
        dry_run = invoke(drivers, "service.restart", namespace, dry_run=True)
        restart = invoke(drivers, "service.restart", namespace)
        logs = invoke(drivers, "logs.query", namespace)
    finally:
        api.close()
    for result in (status, dry_run, restart, logs):
        assert result.ok, result.error
    assert status.fields["state"] == "running"
    assert restart.summary == RESTART_SUMMARY


def create_pod(cluster: Cluster, namespace: str, name: str, labels: dict[str, str]) -> None:
    # Without a controller-manager nobody creates the namespace's default ServiceAccount,
    # and pod admission requires it.
    cluster.kubectl("create", "serviceaccount", "default", "-n", namespace, check=False)
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "labels": labels},
        "spec": {"containers": [{"name": "app", "image": "atlas:1"}]},
    }
    apply(cluster, namespace, pod)

"""The controller as a deputy that cannot be confused: what its own token can do to workloads.

Every request here is made with the controller's ServiceAccount token (the kubeconfig the
controller process runs with), against the real API server with the chart's RBAC and admission
policy installed: the capability (a restart) is the only write it can make, and it reads Pods
and logs only in the namespaces the minds manage.
"""

from __future__ import annotations

import json
import subprocess
from typing import Any

import pytest

from minds.adapters.drivers.kubernetes import RESTARTED_AT
from minds.devenv.install import WORKLOADS_ROLE, controller_username, repo_root
from minds.devenv.kubectl import kubectl
from tests.fixtures.cluster import Cluster
from tests.fixtures.docs import sh_commands
from tests.fixtures.waiting import eventually

POLICY = "minds-controller-workload-writes"
RESTART = {
    "spec": {"template": {"metadata": {"annotations": {RESTARTED_AT: "2030-01-02T03:04:05Z"}}}}
}

#: Changes the controller's patch right would accept without admission, each refused now.
REFUSED_PATCHES: dict[str, dict[str, Any]] = {
    "image": {"spec": {"template": {"spec": {"containers": [{"name": "app", "image": "evil:1"}]}}}},
    "secret volume": {
        "spec": {
            "template": {
                "spec": {
                    "volumes": [{"name": "stolen", "secret": {"secretName": "db"}}],
                    "containers": [
                        {"name": "app", "volumeMounts": [{"name": "stolen", "mountPath": "/s"}]}
                    ],
                }
            }
        }
    },
    "service account": {"spec": {"template": {"spec": {"serviceAccountName": "admin"}}}},
    "scale to zero": {"spec": {"replicas": 0}},
    "labels": {"metadata": {"labels": {"owner": "minds"}}},
    "annotations": {"metadata": {"annotations": {"owner": "minds"}}},
    "pod template labels": {"spec": {"template": {"metadata": {"labels": {"extra": "1"}}}}},
    "other pod annotation": {"spec": {"template": {"metadata": {"annotations": {"x": "1"}}}}},
    "restart and image at once": {
        "spec": {
            "template": {
                "metadata": {"annotations": {RESTARTED_AT: "2030-01-02T03:04:06Z"}},
                "spec": {"containers": [{"name": "app", "image": "evil:1"}]},
            }
        }
    },
}


def workload(kind: str, name: str = "atlas") -> dict[str, Any]:
    pod_spec = {"containers": [{"name": "app", "image": "atlas:1"}]}
    spec: dict[str, Any] = {
        "selector": {"matchLabels": {"app": name}},
        "template": {"metadata": {"labels": {"app": name}}, "spec": pod_spec},
    }
    if kind == "StatefulSet":
        spec["serviceName"] = name
    if kind != "DaemonSet":
        spec["replicas"] = 2
    return {"apiVersion": "apps/v1", "kind": kind, "metadata": {"name": name}, "spec": spec}


def create(cluster: Cluster, namespace: str, kind: str) -> dict[str, Any]:
    cluster.kubectl("apply", "-n", namespace, "-f", "-", input_=json.dumps(workload(kind)))
    return get(cluster, namespace, kind)


def get(cluster: Cluster, namespace: str, kind: str) -> dict[str, Any]:
    out = cluster.kubectl("get", kind.lower(), "atlas", "-n", namespace, "-o", "json").stdout
    obj: dict[str, Any] = json.loads(out)
    return obj


def as_controller(cluster: Cluster, *args: str) -> subprocess.CompletedProcess[str]:
    return kubectl(cluster.controller_kubeconfig, *args, check=False)


def controller_patch(
    cluster: Cluster, namespace: str, kind: str, patch: dict[str, Any], *extra: str
) -> subprocess.CompletedProcess[str]:
    return as_controller(
        cluster, "patch", kind.lower(), "atlas", "-n", namespace, "-p", json.dumps(patch), *extra
    )


def refused_by_policy(cluster: Cluster, namespace: str, kind: str, patch: dict[str, Any]) -> str:
    """The refusal's message. Policies take effect a moment after they are created, so the
    first test of a session waits for it."""

    def refusal() -> str:
        proc = controller_patch(cluster, namespace, kind, patch)
        return proc.stderr if proc.returncode != 0 and POLICY in proc.stderr else ""

    return eventually(refusal, timeout=20, what=f"{POLICY} refuses the patch")


@pytest.mark.parametrize("change", sorted(REFUSED_PATCHES))
def test_the_controller_cannot_change_a_deployment_beyond_a_restart(
    cluster: Cluster, namespace: str, change: str
) -> None:
    before = create(cluster, namespace, "Deployment")

    message = refused_by_policy(cluster, namespace, "Deployment", REFUSED_PATCHES[change])

    assert "may only restart a workload" in message
    after = get(cluster, namespace, "Deployment")
    assert after["spec"] == before["spec"]
    assert after["metadata"].get("labels") == before["metadata"].get("labels")
    assert after["metadata"].get("annotations") == before["metadata"].get("annotations")


@pytest.mark.parametrize("kind", ["Deployment", "StatefulSet", "DaemonSet"])
def test_the_controller_can_restart_and_nothing_else(
    cluster: Cluster, namespace: str, kind: str
) -> None:
    create(cluster, namespace, kind)
    refused_by_policy(cluster, namespace, kind, REFUSED_PATCHES["image"])

    dry = controller_patch(cluster, namespace, kind, RESTART, "--dry-run=server")
    restart = controller_patch(cluster, namespace, kind, RESTART)

    assert dry.returncode == 0, dry.stderr
    assert restart.returncode == 0, restart.stderr
    after = get(cluster, namespace, kind)
    assert after["spec"]["template"]["metadata"]["annotations"] == {
        RESTARTED_AT: "2030-01-02T03:04:05Z"
    }
    assert after["spec"]["template"]["spec"]["containers"][0]["image"] == "atlas:1"


def test_the_controller_cannot_remove_the_restart_annotation(
    cluster: Cluster, namespace: str
) -> None:
    create(cluster, namespace, "Deployment")
    assert controller_patch(cluster, namespace, "Deployment", RESTART).returncode == 0

    remove = [{"op": "remove", "path": "/spec/template/metadata/annotations"}]
    proc = as_controller(
        cluster, "patch", "deployment", "atlas", "-n", namespace, "--type=json",
        "-p", json.dumps(remove),
    )  # fmt: skip

    assert proc.returncode != 0
    assert "removing the restart annotation is refused" in proc.stderr


@pytest.mark.parametrize("kind", ["Deployment", "StatefulSet"])
def test_the_controller_cannot_scale_through_the_scale_subresource(
    cluster: Cluster, namespace: str, kind: str
) -> None:
    create(cluster, namespace, kind)
    resource = kind.lower()

    scale = as_controller(cluster, "scale", resource, "atlas", "-n", namespace, "--replicas=0")
    patch = as_controller(
        cluster, "patch", resource, "atlas", "-n", namespace, "--subresource=scale",
        "-p", '{"spec":{"replicas":0}}',
    )  # fmt: skip

    for proc in (scale, patch):
        assert proc.returncode != 0
        assert f'resource "{resource}s/scale"' in proc.stderr
    assert get(cluster, namespace, kind)["spec"]["replicas"] == 2


def test_the_policy_refuses_a_scale_even_where_rbac_would_allow_it(
    cluster: Cluster, namespace: str
) -> None:
    """Defence in depth: a platform team that grants */scale by mistake still gets no scale."""
    create(cluster, namespace, "Deployment")
    cluster.kubectl(
        "create", "role", "scaler", "-n", namespace, "--verb=get,patch,update",
        "--resource=deployments.apps/scale",
    )  # fmt: skip
    cluster.kubectl(
        "create", "rolebinding", "scaler", "-n", namespace, "--role=scaler",
        f"--serviceaccount={controller_username().removeprefix('system:serviceaccount:')}",
    )  # fmt: skip

    def refusal() -> str:
        proc = as_controller(
            cluster, "scale", "deployment", "atlas", "-n", namespace, "--replicas=0"
        )
        return proc.stderr if POLICY in proc.stderr else ""

    message = eventually(refusal, timeout=20, what="the policy refuses the scale")

    assert "UPDATE of scale is refused" in message
    assert get(cluster, namespace, "Deployment")["spec"]["replicas"] == 2


def test_pods_and_logs_are_read_only_in_managed_namespaces(
    cluster: Cluster, namespace: str
) -> None:
    checks = {
        (where, " ".join(query)): as_controller(
            cluster, "auth", "can-i", *query, "-n", where
        ).stdout.strip()
        for where in (namespace, "kube-system")
        for query in (
            ("list", "pods"),
            ("get", "pods", "--subresource=log"),
            ("get", "deployments.apps"),
            ("patch", "deployments.apps"),
        )
    }
    listing = as_controller(cluster, "get", "pods", "-n", "kube-system")

    assert checks == {
        (where, query): "yes" if where == namespace else "no" for where, query in checks
    }
    assert listing.returncode != 0
    assert "forbidden" in listing.stderr.lower()


def resource_rights(cluster: Cluster, namespace: str) -> dict[str, str]:
    """``kubectl auth can-i --list`` for the controller, resources only: resource -> verbs."""
    out = cluster.kubectl(
        "auth", "can-i", "--list", f"--as={controller_username()}", "-n", namespace
    ).stdout
    rights: dict[str, str] = {}
    for line in out.splitlines()[1:]:
        if line.startswith(" "):
            continue  # a non-resource URL (discovery, health): no data behind it
        resource, _urls, _names, verbs = line.split(maxsplit=3)
        rights[resource] = verbs
    return rights


#: What the controller may do anywhere: its own resources, Events, CRD discovery, and the
#: review APIs every authenticated identity has.
CLUSTER_WIDE = {
    "events": "[create patch]",
    "events.events.k8s.io": "[create patch]",
    "approvals.minds.dev/status": "[get update patch]",
    "approvals.minds.dev": "[get list watch create patch]",
    "capabilitygrants.minds.dev/status": "[get update patch]",
    "capabilitygrants.minds.dev": "[get list watch create patch]",
    "minds.minds.dev/status": "[get update patch]",
    "minds.minds.dev": "[get list watch patch]",
    "plans.minds.dev/status": "[get update patch]",
    "plans.minds.dev": "[get list watch create patch delete]",
    "customresourcedefinitions.apiextensions.k8s.io": "[list watch]",
    # Shards: read the declarations, write only the replica's own liveness record.
    "clusterkopfpeerings.kopf.dev": "[list watch]",
    "clusterkopfpeerings.kopf.dev/status": "[patch]",
    "selfsubjectreviews.authentication.k8s.io": "[create]",
    "selfsubjectaccessreviews.authorization.k8s.io": "[create]",
    "selfsubjectrulesreviews.authorization.k8s.io": "[create]",
}
#: And in the namespaces the minds manage, the workload capabilities and the goals' watches.
MANAGED = {
    "pods/log": "[get]",
    "pods": "[list]",
    "daemonsets.apps": "[get patch list watch]",
    "deployments.apps": "[get patch list watch]",
    "statefulsets.apps": "[get patch list watch]",
}


def test_the_controllers_rights_are_exactly_the_documented_ones(
    cluster: Cluster, namespace: str
) -> None:
    assert resource_rights(cluster, "kube-system") == CLUSTER_WIDE
    assert resource_rights(cluster, namespace) == CLUSTER_WIDE | MANAGED


def test_the_documented_binding_is_the_installed_one(cluster: Cluster, namespace: str) -> None:
    """docs/security.md's ``kubectl create rolebinding`` makes the same binding as the install
    code (the fixture's namespace was bound by it)."""
    other = f"{namespace}-doc"
    cluster.kubectl("create", "namespace", other)
    command = next(
        c
        for c in sh_commands(repo_root() / "docs" / "security.md")
        if c.startswith("kubectl create rolebinding")
    )
    argv = command.replace("<namespace>", other).split()[1:]
    cluster.kubectl(*argv)
    documented = cluster.api.get("rolebinding", WORKLOADS_ROLE, other)
    installed = cluster.api.get("rolebinding", WORKLOADS_ROLE, namespace)

    assert documented["roleRef"] == installed["roleRef"]
    assert documented["subjects"] == installed["subjects"]
    assert resource_rights(cluster, other) == CLUSTER_WIDE | MANAGED

"""Install what the controller needs into a cluster: CRDs, RBAC, admission and its ServiceAccount.

They come from the Helm chart, rendered by real helm (``install_chart``), so the dev stack and
the tests exercise exactly what users install; only the controller's Deployment is left out,
since the controller runs on the host here.
"""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import yaml

from minds.devenv.kubectl import kubectl, kubectl_json

CONTROLLER_NAMESPACE = "minds-system"
CONTROLLER_ACCOUNT = "minds-controller"
CONTROLLER_ROLE = "minds-controller"
WORKLOADS_ROLE = "minds-workloads"
"""Bound per managed namespace: workloads, their Pods and logs (see ``manage_namespace``)."""

WORKLOAD_POLICY = "controller-workload-policy.yaml"
"""The admission policy that narrows the controller's workload writes to restarts."""


def controller_username(
    namespace: str = CONTROLLER_NAMESPACE, account: str = CONTROLLER_ACCOUNT
) -> str:
    """The name the API server gives requests made with the controller's ServiceAccount
    token: what the workload admission policy matches on."""
    return f"system:serviceaccount:{namespace}:{account}"


def repo_root() -> Path:
    """The source checkout this package was installed from (editable installs only)."""
    env = os.environ.get("MINDS_REPO_ROOT")
    if env:
        return Path(env)
    here = Path(__file__).resolve()
    for parent in here.parents:
        if (parent / "pyproject.toml").exists() and (parent / "crds").is_dir():
            return parent
    raise RuntimeError("cannot find the minds-operator checkout; set MINDS_REPO_ROOT")


def chart_files(root: Path) -> Path:
    return root / "charts" / "minds-operator" / "files"


#: What the dev stack and the tests install from the rendered chart: everything but the
#: controller's Deployment and its migration Job (no kubelet runs Pods here; the controller runs
#: on the host under the chart's ServiceAccount token, and the stack migrates the ledger itself).
CLUSTER_KINDS = frozenset(
    {
        "CustomResourceDefinition",
        "ServiceAccount",
        "ClusterRole",
        "ClusterRoleBinding",
        "Role",
        "RoleBinding",
        "ValidatingAdmissionPolicy",
        "ValidatingAdmissionPolicyBinding",
    }
)
HELM_VERSION_SCRIPT = Path("scripts") / "build-helm.sh"


def chart_dir(root: Path) -> Path:
    return root / "charts" / "minds-operator"


def helm_binary(root: Path) -> Path:
    """``MINDS_HELM``, else the project's own build in ``.cache/bin`` (built when missing:
    minutes cold, seconds warm, nothing when up to date)."""
    env = os.environ.get("MINDS_HELM")
    if env:
        return Path(env)
    binary = root / ".cache" / "bin" / "helm"
    subprocess.run(["bash", str(root / HELM_VERSION_SCRIPT), str(binary)], check=True)
    return binary


def render_chart(
    root: Path,
    *,
    namespace: str = CONTROLLER_NAMESPACE,
    account: str = CONTROLLER_ACCOUNT,
    managed: Sequence[str] = (),
) -> list[dict[str, Any]]:
    """The chart as ``helm template`` renders it for a release in ``namespace`` whose
    controller runs as ``account``; the cluster-scoped and RBAC part only (``CLUSTER_KINDS``)."""
    values = {
        "serviceAccount.name": account,
        "managedNamespaces": list(managed),
        # Required by the chart for the Deployment and the Job, which are not installed here.
        "migrations.enabled": False,
        "database.url.secretName": "minds-database",
        # Renders the checkpoint ConfigMap and the Role that lets the controller update it
        # (the key itself is a local file: ``controller.ledger_env``).
        "ledger.keys.existingSecret": "minds-ledger-keys",
    }
    args = [str(helm_binary(root)), "template", "minds", str(chart_dir(root))]
    args += ["--namespace", namespace, "--include-crds"]
    args += [a for key, v in values.items() for a in ("--set-json", f"{key}={json.dumps(v)}")]
    proc = subprocess.run(args, capture_output=True, text=True, timeout=120, check=False)
    if proc.returncode != 0:
        raise RuntimeError(f"helm template failed:\n{proc.stderr}")
    return [d for d in yaml.safe_load_all(proc.stdout) if d and _installed(d)]


def _installed(obj: dict[str, Any]) -> bool:
    """The cluster-scoped and RBAC part, and the ledger's checkpoint ConfigMap (created by
    the chart, updated by the controller, which may not create it)."""
    if obj.get("kind") == "ConfigMap":
        return bool(obj["metadata"]["name"].endswith("-ledger-checkpoint"))
    return obj.get("kind") in CLUSTER_KINDS


def install_chart(
    kubeconfig: Path,
    root: Path,
    *,
    namespace: str = CONTROLLER_NAMESPACE,
    account: str = CONTROLLER_ACCOUNT,
    managed: Sequence[str] = (),
) -> None:
    """What the chart gives a cluster (CRDs, the controller's ServiceAccount, RBAC and the
    admission policies), rendered by helm from the chart itself: what the dev stack and the
    tests run on is what users install. CRDs go first and are waited for."""
    objects = render_chart(root, namespace=namespace, account=account, managed=managed)
    crds = [o for o in objects if o["kind"] == "CustomResourceDefinition"]
    rest = [o for o in objects if o["kind"] != "CustomResourceDefinition"]
    namespace_object = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}}
    # Server-side: the largest CRD is too long for the last-applied annotation of client-side.
    for batch in ([namespace_object, *crds], rest):
        manifest = yaml.safe_dump({"apiVersion": "v1", "kind": "List", "items": batch})
        kubectl(kubeconfig, "apply", "--server-side", "--force-conflicts", "-f", "-",
                input_=manifest)  # fmt: skip
        if batch is not rest:
            for crd in crds:
                kubectl(kubeconfig, "wait", "--for=condition=Established", "--timeout=60s",
                        f"crd/{crd['metadata']['name']}")  # fmt: skip


def bind_people(kubeconfig: Path) -> None:
    """Bind the chart's roles for people to the devcluster's groups (``minds:approvers``,
    ``minds:viewers``), as a platform team binds them to its own."""
    bindings = {
        "apiVersion": "v1",
        "kind": "List",
        "items": [
            {
                "apiVersion": "rbac.authorization.k8s.io/v1",
                "kind": "ClusterRoleBinding",
                "metadata": {"name": f"{role}:{group}"},
                "roleRef": _cluster_role(role),
                "subjects": [
                    {"kind": "Group", "name": group, "apiGroup": "rbac.authorization.k8s.io"}
                ],
            }
            for role, group in (
                ("minds-approver", "minds:approvers"),
                ("minds-viewer", "minds:viewers"),
            )
        ],
    }
    kubectl(kubeconfig, "apply", "-f", "-", input_=yaml.safe_dump(bindings))


def _cluster_role(name: str) -> dict[str, str]:
    return {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": name}


def _service_account(namespace: str, account: str) -> dict[str, str]:
    return {"kind": "ServiceAccount", "name": account, "namespace": namespace}


def workloads_binding(
    namespace: str,
    controller_namespace: str = CONTROLLER_NAMESPACE,
    account: str = CONTROLLER_ACCOUNT,
) -> dict[str, object]:
    """The RoleBinding that makes ``namespace`` one the minds manage: the controller may read
    and restart its workloads and read their Pods and logs there, and nowhere else. The same
    binding as ``kubectl create rolebinding minds-workloads -n NAMESPACE
    --clusterrole=minds-workloads --serviceaccount=minds-system:minds-controller``."""
    return {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "RoleBinding",
        "metadata": {"name": WORKLOADS_ROLE, "namespace": namespace},
        "roleRef": _cluster_role(WORKLOADS_ROLE),
        "subjects": [_service_account(controller_namespace, account)],
    }


def manage_namespace(kubeconfig: Path, namespace: str) -> None:
    """Let the minds manage ``namespace``, as a platform team does per team namespace."""
    kubectl(kubeconfig, "apply", "-f", "-", input_=yaml.safe_dump(workloads_binding(namespace)))


def service_account_kubeconfig(
    kubeconfig: Path,
    out: Path,
    namespace: str = CONTROLLER_NAMESPACE,
    account: str = CONTROLLER_ACCOUNT,
    duration: str = "24h",
) -> Path:
    """A kubeconfig that authenticates as the ServiceAccount, so the controller runs with
    exactly the RBAC it will have in a cluster, not as an administrator."""
    token = kubectl(
        kubeconfig, "create", "token", account, "-n", namespace, f"--duration={duration}"
    ).stdout.strip()
    raw = kubectl_json(kubeconfig, "config", "view", "--raw", "--minify")
    cluster = raw["clusters"][0]
    user = controller_username(namespace, account)
    config = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [cluster],
        "users": [{"name": user, "user": {"token": token}}],
        "contexts": [{"name": account, "context": {"cluster": cluster["name"], "user": user}}],
        "current-context": account,
    }
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(yaml.safe_dump(config))
    out.chmod(0o600)
    return out

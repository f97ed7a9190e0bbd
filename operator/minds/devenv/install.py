"""Install what the controller needs into a cluster: CRDs, RBAC and its ServiceAccount.

The manifests are the project's own files (``crds/``, the chart's ``files/``), applied with
kubectl exactly as documented, so the dev stack and the tests exercise what users apply.
"""

from __future__ import annotations

import os
from pathlib import Path

import yaml

from minds.devenv.kubectl import kubectl, kubectl_json

CONTROLLER_NAMESPACE = "minds-system"
CONTROLLER_ACCOUNT = "minds-controller"
CONTROLLER_ROLE = "minds-controller"
WORKLOADS_ROLE = "minds-workloads"
"""Bound per managed namespace: workloads, their Pods and logs (see ``manage_namespace``)."""

WORKLOAD_POLICY = "controller-workload-policy.yaml"
NAMESPACE_POLICY = "namespace-policy.yaml"
CONTROLLER_POLICIES = (WORKLOAD_POLICY, NAMESPACE_POLICY)
"""Admission policies naming the controller's ServiceAccount (see ``controller_policy``)."""


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


def install_crds(kubeconfig: Path, root: Path) -> None:
    kubectl(kubeconfig, "apply", "-f", str(root / "crds"))
    kubectl(
        kubeconfig,
        "wait",
        "--for=condition=Established",
        "--timeout=60s",
        "-f",
        str(root / "crds"),
    )


def install_admission_and_people(kubeconfig: Path, root: Path) -> None:
    """The approval admission policy, the roles for people, and bindings of those roles to the
    devcluster's groups (``minds:approvers``, ``minds:viewers``), as a platform team would."""
    files = chart_files(root)
    kubectl(kubeconfig, "apply", "-f", str(files / "approval-policy.yaml"))
    kubectl(kubeconfig, "apply", "-f", str(files / "user-clusterroles.yaml"))
    bindings = {
        "apiVersion": "v1",
        "kind": "List",
        "items": [
            {
                "apiVersion": "rbac.authorization.k8s.io/v1",
                "kind": "ClusterRoleBinding",
                "metadata": {"name": f"{role}:{group}"},
                "roleRef": {
                    "apiGroup": "rbac.authorization.k8s.io",
                    "kind": "ClusterRole",
                    "name": role,
                },
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


def controller_policy(root: Path, name: str, namespace: str, account: str) -> str:
    """One of the chart's admission policies that name the controller's ServiceAccount.

    The file names the default account; any other is substituted here (as the chart does), and
    a file that no longer names the default fails loudly instead of matching nobody."""
    text = (chart_files(root) / name).read_text()
    default = f"'{controller_username()}'"
    if default not in text:
        raise RuntimeError(f"{name} does not name {default}")
    return text.replace(default, f"'{controller_username(namespace, account)}'")


def install_controller_rbac(
    kubeconfig: Path,
    root: Path,
    namespace: str = CONTROLLER_NAMESPACE,
    account: str = CONTROLLER_ACCOUNT,
) -> None:
    """The ClusterRoles from the chart's files, the controller's ServiceAccount bound to its
    own, and the admission policies that narrow its workload writes to restarts and keep
    grants inside their namespace. The
    workloads role is bound per managed namespace by ``manage_namespace``."""
    files = chart_files(root)
    kubectl(kubeconfig, "apply", "-f", str(files / "controller-clusterrole.yaml"))
    kubectl(kubeconfig, "apply", "-f", str(files / "controller-workloads-clusterrole.yaml"))
    for policy in CONTROLLER_POLICIES:
        kubectl(
            kubeconfig,
            "apply",
            "-f",
            "-",
            input_=controller_policy(root, policy, namespace, account),
        )
    binding = {
        "apiVersion": "v1",
        "kind": "List",
        "items": [
            {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}},
            {
                "apiVersion": "v1",
                "kind": "ServiceAccount",
                "metadata": {"name": account, "namespace": namespace},
            },
            {
                "apiVersion": "rbac.authorization.k8s.io/v1",
                "kind": "ClusterRoleBinding",
                "metadata": {"name": f"{CONTROLLER_ROLE}:{namespace}:{account}"},
                "roleRef": _cluster_role(CONTROLLER_ROLE),
                "subjects": [_service_account(namespace, account)],
            },
        ],
    }
    kubectl(kubeconfig, "apply", "-f", "-", input_=yaml.safe_dump(binding))


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

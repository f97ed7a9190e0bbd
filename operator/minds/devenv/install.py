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


def install_controller_rbac(
    kubeconfig: Path,
    root: Path,
    namespace: str = CONTROLLER_NAMESPACE,
    account: str = CONTROLLER_ACCOUNT,
) -> None:
    """The ClusterRole from the chart's files, bound to the controller's ServiceAccount."""
    kubectl(kubeconfig, "apply", "-f", str(chart_files(root) / "controller-clusterrole.yaml"))
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
                "roleRef": {
                    "apiGroup": "rbac.authorization.k8s.io",
                    "kind": "ClusterRole",
                    "name": CONTROLLER_ROLE,
                },
                "subjects": [{"kind": "ServiceAccount", "name": account, "namespace": namespace}],
            },
        ],
    }
    kubectl(kubeconfig, "apply", "-f", "-", input_=yaml.safe_dump(binding))


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
    user = f"system:serviceaccount:{namespace}:{account}"
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

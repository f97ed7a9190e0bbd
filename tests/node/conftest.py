"""The real node (docs/world.md, "A real node"): a devcluster with its world and one node
whose Pods really run, for the tests marked ``node`` (``make test-node``; root only).

One control plane per session: starting the node takes seconds, but its Pods, images and
release are what the tests share.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from minds.devenv import cluster as devcluster
from minds.devenv.install import repo_root
from minds.devenv.kubectl import kubectl

REPO = repo_root()
CONTAINERD_SOCKET = "/run/devcluster-node/containerd.sock"
NODE_NAME = "devcluster-node"
BRIDGE_IP = "10.88.0.1"
POD_CIDR = "10.88.0.0/24"
TOLERATION = {"key": "minds.dev/real-node", "operator": "Exists", "effect": "NoSchedule"}
ON_REAL_NODE = {"minds.dev/real-node": "true"}


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", "node: needs the devcluster's real node (root, containerd; make test-node)"
    )


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if "/node/" in str(item.fspath):
            item.add_marker(pytest.mark.node)


@dataclass(frozen=True)
class Node:
    kubeconfig: Path
    state: Path

    @property
    def kubelet_kubeconfig(self) -> Path:
        """The kubelet's own kubeconfig: its node identity, a client certificate."""
        return self.state / "node" / "kubelet.kubeconfig"

    def kubectl(self, *args: str, check: bool = True, input_: str | None = None) -> Any:
        return kubectl(self.kubeconfig, *args, check=check, input_=input_)


@pytest.fixture(scope="session")
def node(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Node]:
    if os.geteuid() != 0:
        pytest.fail("the real node needs root (docs/world.md); run make test-node as root")
    missing = [t for t in ("containerd", "runc", "ctr") if shutil.which(t) is None]
    assert not missing, f"missing {missing}: scripts/ensure-tools.sh --node installs them"
    binary = Path(os.environ.get("MINDS_DEVCLUSTER") or devcluster.build_devcluster(REPO))
    state = tmp_path_factory.mktemp("node")
    handle = devcluster.start_cluster(
        binary, state / "devcluster", log_path=state / "log", world=True, real_node=True
    )
    try:
        yield Node(handle.kubeconfig, handle.state_dir)
    finally:
        devcluster.stop_cluster(handle.state_dir)


def import_image(tag: str, work: Path) -> None:
    """Put a buildah image into the node's containerd: no registry, ``imagePullPolicy: Never``."""
    archive = work / "image.tar"
    subprocess.run(
        ["buildah", "push", tag, f"oci-archive:{archive}:{tag}"],
        check=True, capture_output=True, timeout=600,
    )  # fmt: skip
    subprocess.run(
        ["ctr", "--address", CONTAINERD_SOCKET, "-n", "k8s.io", "images", "import", str(archive)],
        check=True, capture_output=True, timeout=600,
    )  # fmt: skip
    archive.unlink()


@pytest.fixture(scope="session")
def base_image(node: Node, tmp_path_factory: pytest.TempPathFactory) -> str:
    """The image the project's image builds on (scripts/image-base.sh), on the node: a shell and
    python3, for Pods that only need to run."""
    tag = subprocess.run(
        ["bash", str(REPO / "scripts" / "image-base.sh")],
        check=True, capture_output=True, text=True, timeout=900,
    ).stdout.strip()  # fmt: skip
    import_image(tag, tmp_path_factory.mktemp("base-image"))
    return tag


def restricted_pod(name: str, image: str, *, on_real_node: bool = True, **spec: Any) -> str:
    """A Pod that passes the restricted Pod Security Standard, sleeping, as JSON."""
    body: dict[str, Any] = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name},
        "spec": {
            "securityContext": {
                "runAsNonRoot": True,
                "runAsUser": 10001,
                "seccompProfile": {"type": "RuntimeDefault"},
            },
            "containers": [
                {
                    "name": "main",
                    "image": image,
                    "imagePullPolicy": "Never",
                    "command": ["sleep", "infinity"],
                    "securityContext": {
                        "allowPrivilegeEscalation": False,
                        "capabilities": {"drop": ["ALL"]},
                        "readOnlyRootFilesystem": True,
                    },
                }
            ],
            "terminationGracePeriodSeconds": 1,
            **spec,
        },
    }
    if on_real_node:
        body["spec"]["tolerations"] = [TOLERATION]
        body["spec"]["nodeSelector"] = ON_REAL_NODE
    return json.dumps(body)

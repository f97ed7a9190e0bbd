"""The real node itself: Pods that tolerate its taint run there and `kubectl exec` reaches them,
the restricted profile is enforced, Pods without the toleration never land there, and the
kubelet's node identity reads only what its own Pods need (docs/world.md)."""

from __future__ import annotations

import json
import subprocess
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from minds.devenv.kubectl import kubectl
from tests.fixtures.waiting import eventually
from tests.node.conftest import BRIDGE_IP, NODE_NAME, ON_REAL_NODE, Node, restricted_pod


@pytest.fixture
def namespace(node: Node) -> Iterator[str]:
    ns = f"node-{uuid.uuid4().hex[:6]}"
    node.kubectl("create", "namespace", ns)
    node.kubectl("label", "namespace", ns, "pod-security.kubernetes.io/enforce=restricted")
    yield ns
    node.kubectl("delete", "namespace", ns, "--wait=false", check=False)


def _pod(node: Node, ns: str, name: str) -> dict:
    return json.loads(node.kubectl("get", "pod", name, "-n", ns, "-o", "json").stdout)


def test_a_pod_that_tolerates_the_taint_runs_there_and_exec_reaches_it(
    node: Node, namespace: str, base_image: str
) -> None:
    node.kubectl("apply", "-n", namespace, "-f", "-", input_=restricted_pod("runs", base_image))
    node.kubectl("wait", "-n", namespace, "--for=condition=Ready", "pod/runs", "--timeout=90s")
    pod = _pod(node, namespace, "runs")
    assert pod["spec"]["nodeName"] == NODE_NAME
    assert pod["status"]["podIP"].startswith("10.88.0.")
    out = node.kubectl("exec", "-n", namespace, "runs", "--", "sh", "-c", "id -u").stdout
    assert out.splitlines()[0] == "10001"
    # The "kubernetes" Service's ClusterIP reaches the API server on the bridge.
    probe = (
        "import socket, ssl; c = ssl.create_default_context(); c.check_hostname = False; "
        "c.verify_mode = ssl.CERT_NONE; "
        "s = c.wrap_socket(socket.create_connection(('10.0.0.1', 443), 5)); "
        "s.send(b'GET /livez HTTP/1.0\\r\\n\\r\\n'); print(s.recv(200).decode().split()[1])"
    )  # fmt: skip
    answer = node.kubectl("exec", "-n", namespace, "runs", "--", "python3", "-c", probe).stdout
    assert answer.strip() in {"200", "401", "403"}, answer
    server = node.kubectl(
        "config", "view", "--minify", "-o", "jsonpath={.clusters[0].cluster.server}"
    )
    assert server.stdout.startswith(f"https://{BRIDGE_IP}:")


def test_the_read_only_root_is_read_only(node: Node, namespace: str, base_image: str) -> None:
    node.kubectl("apply", "-n", namespace, "-f", "-", input_=restricted_pod("ro", base_image))
    node.kubectl("wait", "-n", namespace, "--for=condition=Ready", "pod/ro", "--timeout=90s")
    done = node.kubectl("exec", "-n", namespace, "ro", "--", "touch", "/x", check=False)
    assert done.returncode != 0
    assert "Read-only file system" in done.stderr


def test_a_pod_breaking_the_restricted_profile_is_refused(
    node: Node, namespace: str, base_image: str
) -> None:
    body = json.loads(restricted_pod("privileged", base_image))
    # (A privileged container the API server refuses before admission: --allow-privileged is off.)
    body["spec"]["containers"][0]["securityContext"] = {"allowPrivilegeEscalation": True}
    done = node.kubectl("apply", "-n", namespace, "-f", "-", input_=json.dumps(body), check=False)
    assert done.returncode != 0
    assert 'violates PodSecurity "restricted:latest"' in done.stderr, done.stderr


def test_a_pod_without_the_toleration_never_lands_on_the_real_node(
    node: Node, namespace: str, base_image: str
) -> None:
    # It asks for the real node but does not tolerate the taint: it stays unscheduled.
    body = json.loads(restricted_pod("untolerated", base_image, on_real_node=False))
    body["spec"]["nodeSelector"] = ON_REAL_NODE
    node.kubectl("apply", "-n", namespace, "-f", "-", input_=json.dumps(body))

    def refused() -> str:
        for c in _pod(node, namespace, "untolerated")["status"].get("conditions", []):
            if c["type"] == "PodScheduled" and c["status"] == "False":
                return c.get("message", "")
        return ""

    assert "untolerated taint" in eventually(refused, timeout=60, what="the scheduler refuses")
    # Pods that ask for nothing land on kwok's nodes, every one of them.
    template = json.loads(restricted_pod("anywhere", base_image, on_real_node=False))
    deployment = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "anywhere"},
        "spec": {
            "replicas": 6,
            "selector": {"matchLabels": {"app": "anywhere"}},
            "template": {"metadata": {"labels": {"app": "anywhere"}}, "spec": template["spec"]},
        },
    }
    node.kubectl("apply", "-n", namespace, "-f", "-", input_=json.dumps(deployment))

    def placed() -> list[str]:
        pods = json.loads(node.kubectl("get", "pods", "-n", namespace, "-l", "app=anywhere",
                                       "-o", "json").stdout)["items"]  # fmt: skip
        nodes = [p["spec"].get("nodeName", "") for p in pods]
        return nodes if len(nodes) == 6 and all(nodes) else []

    nodes = eventually(placed, timeout=60, what="six Pods placed")
    assert all(n.startswith("kwok-node-") for n in nodes), nodes
    assert _pod(node, namespace, "untolerated")["spec"].get("nodeName") is None


def test_the_kubelet_reads_only_the_secrets_of_its_own_pods(
    node: Node, namespace: str, base_image: str
) -> None:
    node.kubectl("create", "secret", "generic", "mounted", "-n", namespace, "--from-literal=k=v")
    node.kubectl("create", "secret", "generic", "elsewhere", "-n", namespace, "--from-literal=k=v")
    body = json.loads(restricted_pod("with-secret", base_image))
    body["spec"]["volumes"] = [{"name": "s", "secret": {"secretName": "mounted"}}]
    body["spec"]["containers"][0]["volumeMounts"] = [{"name": "s", "mountPath": "/s"}]
    node.kubectl("apply", "-n", namespace, "-f", "-", input_=json.dumps(body))
    node.kubectl(
        "wait", "-n", namespace, "--for=condition=Ready", "pod/with-secret", "--timeout=90s"
    )

    kubelet = node.kubelet_kubeconfig
    whoami = kubectl_as(kubelet, "auth", "whoami", "-o", "json")
    info = json.loads(whoami.stdout)["status"]["userInfo"]
    assert info["username"] == f"system:node:{NODE_NAME}"
    assert "system:nodes" in info["groups"]
    assert (
        kubectl_as(
            kubelet, "auth", "can-i", "get", "secret/mounted", "-n", namespace
        ).stdout.strip()
        == "yes"
    )
    denied = kubectl_as(kubelet, "auth", "can-i", "get", "secret/elsewhere", "-n", namespace)
    assert denied.stdout.startswith("no"), denied.stdout
    # And a real read, not only the question.
    read = kubectl_as(kubelet, "get", "secret", "elsewhere", "-n", namespace)
    assert read.returncode != 0
    assert "Forbidden" in read.stderr, read.stderr
    assert kubectl_as(kubelet, "get", "secret", "mounted", "-n", namespace).returncode == 0


def kubectl_as(kubeconfig: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return kubectl(kubeconfig, *args, check=False)

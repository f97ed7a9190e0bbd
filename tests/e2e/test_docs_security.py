"""Every command in docs/security.md, run as written against the real control plane with the
chart's RBAC and admission policies, in the order a reader would; the documented
``kubectl auth can-i --list`` outputs are the ones the API server gives."""

from __future__ import annotations

import re
import shlex
import uuid
from collections.abc import Iterator

import pytest

from minds.devenv.kubectl import kubectl
from tests.fixtures.cluster import REPO, Cluster
from tests.fixtures.docs import can_i_rows as rights
from tests.fixtures.docs import sh_commands

DOC = REPO / "docs" / "security.md"
_TEXT = re.compile(r"^```text\n(.*?)^```", re.MULTILINE | re.DOTALL)

#: Commands the doc shows failing, and what their refusal says.
REFUSED = {
    "kubectl scale": 'cannot patch resource "deployments/scale"',
    "kubectl set image": "minds-controller-workload-writes",
}


@pytest.fixture
def unmanaged(cluster: Cluster) -> Iterator[str]:
    """A namespace the minds do not manage yet: the doc's first command hands it over."""
    name = f"t-{uuid.uuid4().hex[:10]}"
    cluster.kubectl("create", "namespace", name)
    yield name
    cluster.kubectl("delete", "namespace", name, "--wait=false", check=False)


def test_every_command_in_the_security_doc_works(cluster: Cluster, unmanaged: str) -> None:
    commands = sh_commands(DOC)
    documented = [rights(block) for block in _TEXT.findall(DOC.read_text())]
    outputs: dict[str, str] = {}
    try:
        for command in commands:
            argv = shlex.split(command.replace("<namespace>", unmanaged))
            assert argv[0] == "kubectl", command
            proc = kubectl(cluster.kubeconfig, *argv[1:], check=False)
            refusal = next(
                (why for start, why in REFUSED.items() if command.startswith(start)), None
            )
            if refusal is None:
                assert proc.returncode == 0, f"{command}\n{proc.stderr}"
            else:
                assert proc.returncode != 0, command
                assert refusal in proc.stderr, proc.stderr
            outputs[command] = proc.stdout
    finally:
        kubectl(cluster.kubeconfig, "delete", "clusterrolebinding", "minds-workloads", check=False)

    listings = [outputs[c] for c in commands if c.startswith("kubectl auth can-i --list")]
    assert [rights(listing) for listing in listings] == documented
    [cluster_wide] = [c for c in commands if c.startswith("kubectl auth can-i list pods")]
    assert outputs[cluster_wide].strip() == "yes"
    image = kubectl(
        cluster.kubeconfig, "get", "deployment", "atlas-worker", "-n", unmanaged,
        "-o", "jsonpath={.spec.template.spec.containers[0].image}",
    ).stdout  # fmt: skip
    assert image == "busybox"
    after = kubectl(
        cluster.kubeconfig, "auth", "can-i", "list", "pods", "-n", "kube-system",
        "--as=system:serviceaccount:minds-system:minds-controller", check=False,
    )  # fmt: skip
    assert after.stdout.strip() == "no"

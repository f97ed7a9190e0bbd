"""``kubectl minds version`` reads the running controller's version as a person can: through
the API server's proxy to the chart's metrics Service, with the rights docs/cli.md grants, and
says so when they are missing. docs/cli.md's commands for it run as written.

The controller runs beside the control plane, not in a Pod: the chart's Service (as helm
renders it) is in the cluster, and a Pod with the controller's labels and this machine's
address stands for the controller's Pod, with the Endpoints the endpoints controller would
write. The API server proxies only to an address that is a Pod's (and never to loopback), so
the controller serves its metrics on this machine's own address.
"""

from __future__ import annotations

import json
import re
import socket
import subprocess
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml

from minds import __version__
from minds.adapters.metrics.serve import BIND_ENV
from minds.devenv.controller import ControllerHandle
from minds.devenv.ports import free_port
from minds.domain.metrics.catalogue import BUILD_INFO
from tests.e2e.test_cli_failures import kubectl_minds
from tests.fixtures.cluster import REPO, Cluster, ControllerFactory
from tests.fixtures.docs import kubeconfig_in, run_documented, sections, sh_commands
from tests.fixtures.helm import Helm, find
from tests.fixtures.metrics import samples, scrape
from tests.fixtures.waiting import eventually

pytestmark = pytest.mark.minutes(1)

DOC = REPO / "docs" / "cli.md"
SECTION = "Versions"
#: The release docs/install.md installs, whose metrics Service docs/cli.md's Role names.
RELEASE = "minds"
SERVICE = f"{RELEASE}-metrics"
#: A version as docs/cli.md's example shows one (the example need not follow each release).
VERSION = r"\d+\.\d+\.\d+\S*"


def this_machines_address() -> str:
    """An address of this machine that is not loopback: the one its route out leaves from
    (a UDP connect sends nothing)."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
        try:
            probe.connect(("10.255.255.255", 1))
        except OSError:
            pytest.fail("this machine has no address but loopback: the proxy cannot reach it")
        return str(probe.getsockname()[0])


@dataclass(frozen=True)
class Installed:
    namespace: str
    controller: ControllerHandle


@pytest.fixture
def installed(
    cluster: Cluster, helm: Helm, controller_factory: ControllerFactory
) -> Iterator[Installed]:
    """The controller's namespace as the chart leaves it, as far as `version` looks."""
    namespace = f"t-{uuid.uuid4().hex[:10]}"
    cluster.kubectl("create", "namespace", namespace)
    address = this_machines_address()
    port = free_port()
    # Only this namespace: a second controller must not act on other tests' minds.
    controller = controller_factory(
        "versioned", extra_env={BIND_ENV: f"{address}:{port}"}, args=("--namespace", namespace)
    )
    objects = helm.objects(namespace=namespace, release=RELEASE)
    service = find(objects, "Service", SERVICE, namespace)
    [deployment] = [o for o in objects if o["kind"] == "Deployment"]
    template = deployment["spec"]["template"]
    account = find(objects, "ServiceAccount", template["spec"]["serviceAccountName"], namespace)
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "controller", "namespace": namespace, **template["metadata"]},
        "spec": template["spec"],
    }
    endpoints = {
        "apiVersion": "v1",
        "kind": "Endpoints",
        "metadata": {"name": SERVICE, "namespace": namespace},
        "subsets": [
            {
                "addresses": [
                    {
                        "ip": address,
                        "targetRef": {"kind": "Pod", "name": "controller", "namespace": namespace},
                    }
                ],
                "ports": [{"name": "metrics", "port": port}],
            }
        ],
    }
    cluster.kubectl(
        "apply", "-f", "-", input_=yaml.safe_dump_all([account, service, pod, endpoints])
    )
    # What the kubelet would report of the Pod: its address, which the proxy checks.
    status = {"status": {"podIP": address, "podIPs": [{"ip": address}]}}
    cluster.kubectl(
        "patch", "pod", "controller", "-n", namespace, "--subresource=status",
        "--type=merge", "-p", json.dumps(status),
    )  # fmt: skip
    yield Installed(namespace, controller)
    cluster.kubectl("delete", "namespace", namespace, "--wait=false", check=False)


def version(
    cluster: Cluster, installed: Installed, *args: str, context: str | None = None
) -> subprocess.CompletedProcess[str]:
    return kubectl_minds(
        "version",
        "--controller-namespace",
        installed.namespace,
        *args,
        kubeconfig=cluster.kubeconfig,
        database_url="",
        context=context,
    )


def test_the_controllers_version_is_read_through_the_charts_service(
    cluster: Cluster, installed: Installed
) -> None:
    exported = samples(scrape(installed.controller.metrics_url))[BUILD_INFO.name]
    [labels] = exported
    assert dict(labels) == {"version": __version__}

    shown = version(cluster, installed)
    assert shown.returncode == 0, shown.stderr
    assert shown.stdout == (
        f"Client Version: {__version__}\n"
        f"Controller Version: {__version__} (Service {installed.namespace}/{SERVICE})\n"
    )
    # docs/cli.md shows it as it is, for the namespace docs/install.md installs into.
    fences = re.findall(r"^```(\w*)\n(.*?)^```", sections(DOC)[SECTION], re.M | re.S)
    [shown_in_doc] = [body for lang, body in fences if not lang]
    printed = shown.stdout.replace(installed.namespace, "minds-system")
    assert re.sub(VERSION, "V", printed) == re.sub(VERSION, "V", shown_in_doc)
    as_yaml = yaml.safe_load(version(cluster, installed, "-o", "yaml").stdout)
    assert as_yaml == {
        "clientVersion": __version__,
        "controllerVersion": __version__,
        "controllerService": f"{installed.namespace}/{SERVICE}",
    }


def test_a_stopped_controller_is_told_after_the_client_version(
    cluster: Cluster, installed: Installed
) -> None:
    from minds.devenv.controller import stop_controller

    stop_controller(installed.controller)
    shown = version(cluster, installed)
    assert shown.returncode == 2, shown.stderr
    assert shown.stdout == f"Client Version: {__version__}\n"
    [line] = shown.stderr.splitlines()
    assert line.startswith("error: the controller's version: the API server failed: ")
    assert "connection refused" in line


def test_no_controller_in_the_namespace_is_said_with_what_to_do(
    cluster: Cluster, namespace: str
) -> None:
    shown = kubectl_minds(
        "version", "--controller-namespace", namespace,
        kubeconfig=cluster.kubeconfig, database_url="",
    )  # fmt: skip
    assert shown.returncode == 1, shown.stderr
    assert shown.stdout == f"Client Version: {__version__}\n"
    assert shown.stderr.startswith(
        f"error: the controller's version: no metrics Service of the controller in namespace "
        f"{namespace}"
    )
    assert "--controller-namespace" in shown.stderr


def test_a_person_without_the_role_is_told_then_the_documented_role_lets_them_read_it(
    cluster: Cluster, installed: Installed, tmp_path: Path
) -> None:
    refused = version(cluster, installed, context="viewer")
    assert refused.returncode == 1, refused.stderr
    assert refused.stdout == f"Client Version: {__version__}\n"
    [line] = refused.stderr.splitlines()
    assert line.startswith("error: the controller's version: refused: services is forbidden: ")
    assert 'User "viewer"' in line

    # docs/cli.md, as written, with its namespace the one the chart is in here.
    [role] = re.findall(r"```yaml\n(.*?)```", sections(DOC)[SECTION], re.DOTALL)
    here = installed.namespace
    (tmp_path / "minds-version-reader.yaml").write_text(role.replace("minds-system", here))
    kubeconfig = kubeconfig_in(cluster.kubeconfig, "default", "admin", tmp_path / "admin")
    commands = [c.replace("minds-system", here) for c in sh_commands(DOC, section=SECTION)]
    granting = [c for c in commands if not c.startswith("kubectl minds")]
    run_documented(
        granting, {"<group>": "minds:viewers"}, {"KUBECONFIG": str(kubeconfig)}, tmp_path
    )

    viewer = kubeconfig_in(cluster.kubeconfig, "default", "viewer", tmp_path / "viewer")
    env = {"KUBECONFIG": str(viewer), "MINDS_CONTROLLER_NAMESPACE": here}

    def allowed() -> bool:
        return version(cluster, installed, context="viewer").returncode == 0

    eventually(allowed, timeout=30, what="the viewer's new Role is in force")
    asking = [c for c in commands if c.startswith("kubectl minds")]
    out = run_documented(asking, {}, env, tmp_path)
    assert out["kubectl minds --version"] == f"{__version__}\n"
    assert f"Controller Version: {__version__}" in out["kubectl minds version"]
    assert yaml.safe_load(out["kubectl minds version --client -o yaml"]) == {
        "clientVersion": __version__
    }


def test_two_releases_are_told_apart_by_controller_service(
    cluster: Cluster, installed: Installed, helm: Helm
) -> None:
    other = find(
        helm.objects(namespace=installed.namespace, release="other"),
        "Service",
        "other-metrics",
        installed.namespace,
    )
    cluster.kubectl("apply", "-f", "-", input_=json.dumps(other))
    both = version(cluster, installed)
    assert both.returncode == 1, both.stderr
    assert both.stdout == f"Client Version: {__version__}\n"
    assert both.stderr == (
        f"error: the controller's version: several controllers' metrics Services in namespace "
        f"{installed.namespace} (minds-metrics, other-metrics): name one with "
        "--controller-service\n"
    )
    named = version(cluster, installed, "--controller-service", SERVICE)
    assert named.returncode == 0, named.stderr
    assert f"Controller Version: {__version__} (Service {installed.namespace}/{SERVICE})" in (
        named.stdout
    )

"""`helm test` checks an install: a Pod hook that reads the controller's metrics through the
chart's Service and passes only when the controller answers and its ledger does
(`minds_ledger_up 1`). Rendered by the real helm; its check run against a real HTTP server."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import kubernetes_validate

from tests.fixtures.helm import Helm, find
from tests.fixtures.prometheus import REPO

KUBE_VERSION = "1.30.0"
INSTALL_DOC = (REPO / "docs" / "install.md").read_text()
NAME = "minds-test-controller"


def hook(helm: Helm) -> dict[str, Any]:
    return find(helm.objects(), "Pod", NAME, "minds-system")


def test_the_hook_is_a_test_pod_of_the_controllers_image_run_as_the_controller(
    helm: Helm,
) -> None:
    objects = helm.objects()
    pod = find(objects, "Pod", NAME, "minds-system")
    kubernetes_validate.validate(pod, KUBE_VERSION, strict=True)
    assert pod["metadata"]["annotations"]["helm.sh/hook"] == "test"
    controller = find(objects, "Deployment", "minds-controller", "minds-system")["spec"]
    controller_pod = controller["template"]["spec"]
    [container] = pod["spec"]["containers"]
    [runs] = [c for c in controller_pod["containers"] if c["name"] == "controller"]
    assert container["image"] == runs["image"]
    assert pod["spec"]["securityContext"] == controller_pod["securityContext"]
    assert container["securityContext"] == runs["securityContext"]
    assert container["securityContext"]["readOnlyRootFilesystem"] is True
    assert pod["spec"]["restartPolicy"] == "Never"
    # It reads one URL: no Kubernetes credentials.
    assert pod["spec"]["automountServiceAccountToken"] is False
    # The metrics Service the chart renders, on its port.
    service = find(objects, "Service", "minds-metrics", "minds-system")
    port = service["spec"]["ports"][0]["port"]
    assert container["args"][1] == f"http://minds-metrics.minds-system.svc:{port}/metrics"
    # Or, where there is no cluster DNS, the address the kubelet puts in the environment.
    assert container["args"][2] == "MINDS_METRICS"
    assert pod["spec"]["enableServiceLinks"] is True
    # How long it looks while a fresh controller starts, as docs/install.md says.
    assert f"looking for up to {container['args'][3]} seconds" in " ".join(INSTALL_DOC.split())


def test_the_hook_follows_the_security_context_values(helm: Helm) -> None:
    """Where the platform assigns the user (runAsUser and runAsGroup null), the check runs the
    same way: still never root."""
    nulls = [
        a
        for field in ("runAsUser", "runAsGroup")
        for where in ("podSecurityContext", "containerSecurityContext")
        for a in ("--set-json", f"controller.{where}.{field}=null")
    ]
    pod = find(helm.objects(None, *nulls), "Pod", NAME, "minds-system")
    kubernetes_validate.validate(pod, KUBE_VERSION, strict=True)
    for context in (
        pod["spec"]["securityContext"],
        pod["spec"]["containers"][0]["securityContext"],
    ):
        assert not {"runAsUser", "runAsGroup"} & set(context)
        assert context["runAsNonRoot"] is True


def test_without_the_metrics_service_there_is_nothing_to_check_through(helm: Helm) -> None:
    objects = helm.objects({"metrics.service.enabled": False})
    assert not [o for o in objects if o["kind"] == "Pod"]


@contextmanager
def serving(text: str) -> Iterator[str]:
    class Metrics(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            body = text.encode()
            self.send_response(200)
            self.send_header("Content-Type", "text/plain; version=0.0.4")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *_: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Metrics)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/metrics"
    finally:
        server.shutdown()


def check(helm: Helm, url: str) -> subprocess.CompletedProcess[str]:
    """The hook's own command, as the Pod runs it, against ``url`` with a short patience."""
    container = hook(helm)["spec"]["containers"][0]
    assert container["command"] == ["python", "-c"]
    script = container["args"][0]
    _, service, _ = container["args"][1:]
    return subprocess.run(
        [sys.executable, "-c", script, url, service, "1"],
        capture_output=True,
        text=True,
        timeout=60,
        env={k: v for k, v in os.environ.items() if not k.startswith(service)},
    )


METRICS = '# HELP minds_build_info ...\nminds_build_info{version="0.1.0"} 1.0\n'


def test_the_check_passes_when_the_controller_and_its_ledger_answer(helm: Helm) -> None:
    with serving(METRICS + "minds_ledger_up 1.0\n") as url:
        done = check(helm, url)
    assert done.returncode == 0, done.stderr
    assert "its ledger answers" in done.stdout


def test_the_check_fails_when_the_ledger_does_not_answer(helm: Helm) -> None:
    with serving(METRICS + "minds_ledger_up 0.0\n") as url:
        done = check(helm, url)
    assert done.returncode == 1
    assert "its ledger does not: minds_ledger_up 0.0" in done.stderr


def test_the_check_reads_the_services_address_from_the_environment(helm: Helm) -> None:
    """As the kubelet gives it: the DNS name is then not needed (it would not resolve here)."""
    container = hook(helm)["spec"]["containers"][0]
    with serving(METRICS + "minds_ledger_up 1.0\n") as url:
        host, port = url.removeprefix("http://").removesuffix("/metrics").split(":")
        done = subprocess.run(
            [sys.executable, "-c", container["args"][0], "http://nowhere.invalid/metrics",
             "MINDS_METRICS", "1"],
            capture_output=True, text=True, timeout=60,
            env={**os.environ, "MINDS_METRICS_SERVICE_HOST": host,
                 "MINDS_METRICS_SERVICE_PORT": port},
        )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert f"answers at {url}" in done.stdout


def test_the_check_fails_when_the_controller_does_not_answer(helm: Helm) -> None:
    with serving("") as url:
        pass  # the server is gone: nothing listens there any more
    done = check(helm, url)
    assert done.returncode == 1
    assert "the controller does not answer" in done.stderr

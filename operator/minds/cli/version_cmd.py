"""``minds version``: this client's version, and the running controller's.

The controller tells its version in the ``minds_build_info{version}`` metric. The CLI reads it
as a person's kubectl can: through the API server's proxy to the chart's metrics Service, so
no port-forward and no network path to the Pods is needed, only the rights to list Services
and to get ``services/proxy`` in the controller's namespace (docs/cli.md has the Role). When
those are missing, or the controller does not answer, the client's version is still printed
and the reason follows on stderr with the exit code of every other failure
(``minds.cli.failures``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import typer

from minds import __version__
from minds.adapters.kube.checkpoints import NAMESPACE_ENV
from minds.cli.options import CONTEXT, KUBECONFIG, OUTPUT, Output, emit
from minds.domain.metrics.catalogue import BUILD_INFO

#: The namespace docs/install.md installs the chart into.
DEFAULT_NAMESPACE = "minds-system"
#: The labels of the chart's metrics Service (templates/metrics-service.yaml), release aside.
SERVICE_SELECTOR = "app.kubernetes.io/name=minds-operator,app.kubernetes.io/component=controller"
#: The Service's port that serves /metrics (its name, so the port number may be any).
PORT_NAME = "metrics"


class ControllerVersionError(Exception):
    """The controller's version cannot be read, for a reason the failures table does not know
    (no Service, several, or metrics without ``minds_build_info``)."""


@dataclass(frozen=True)
class ControllerVersion:
    version: str
    #: NAMESPACE/NAME of the Service the version was read through.
    service: str


def build_info_version(exposition: str) -> str | None:
    """The ``version`` label of ``minds_build_info`` in a Prometheus text exposition."""
    from prometheus_client.parser import text_string_to_metric_families

    for family in text_string_to_metric_families(exposition):
        for sample in family.samples:
            if sample.name == BUILD_INFO.name and "version" in sample.labels:
                return str(sample.labels["version"])
    return None


def _service(api: Any, namespace: str, name: str | None) -> str:
    from kubernetes import client

    if name:
        return name
    found = client.CoreV1Api(api).list_namespaced_service(
        namespace, label_selector=SERVICE_SELECTOR
    )
    names = sorted(str(s.metadata.name) for s in found.items if s.metadata)
    if len(names) == 1:
        return names[0]
    if not names:
        raise ControllerVersionError(
            f"no metrics Service of the controller in namespace {namespace} (labels "
            f"{SERVICE_SELECTOR}): name the controller's namespace with --controller-namespace"
        )
    raise ControllerVersionError(
        f"several controllers' metrics Services in namespace {namespace} ({', '.join(names)}): "
        "name one with --controller-service"
    )


def controller_version(api: Any, namespace: str, service: str | None) -> ControllerVersion:
    """The version the controller behind the chart's metrics Service exports."""
    from kubernetes import client

    name = _service(api, namespace, service)
    # The raw response: the client would otherwise try to read the exposition as JSON.
    response: Any = client.CoreV1Api(api).connect_get_namespaced_service_proxy_with_path(
        f"{name}:{PORT_NAME}", namespace, "metrics", _preload_content=False
    )
    version = build_info_version(response.data.decode("utf-8", errors="replace"))
    if version is None:
        raise ControllerVersionError(
            f"the metrics behind Service {namespace}/{name} have no {BUILD_INFO.name}: "
            "is it the controller's?"
        )
    return ControllerVersion(version, f"{namespace}/{name}")


def version(
    client_only: bool = typer.Option(
        False, "--client", help="Only this client's version; ask no cluster."
    ),
    controller_namespace: str = typer.Option(
        DEFAULT_NAMESPACE,
        "--controller-namespace",
        envvar=NAMESPACE_ENV,
        help="The namespace the chart is installed in.",
    ),
    controller_service: str | None = typer.Option(
        None,
        "--controller-service",
        help="The chart's metrics Service (default: found by its labels in that namespace).",
    ),
    output: Output = OUTPUT,
    kubeconfig: str | None = KUBECONFIG,
    context: str | None = CONTEXT,
) -> None:
    """Print this client's version and the running controller's (exit 1 or 2, after the
    client's version, when the controller's cannot be read)."""
    versions: dict[str, str] = {"clientVersion": __version__}
    failure: BaseException | None = None
    if not client_only:
        try:
            from minds.cli.kube import connect

            with connect(kubeconfig, context) as api:
                found = controller_version(api, controller_namespace, controller_service)
            versions |= {"controllerVersion": found.version, "controllerService": found.service}
        except Exception as exc:  # told after the client's version, as the table says
            failure = exc

    def text() -> str:
        lines = [f"Client Version: {__version__}"]
        if "controllerVersion" in versions:
            lines.append(
                f"Controller Version: {versions['controllerVersion']} "
                f"(Service {versions['controllerService']})"
            )
        return "\n".join(lines)

    emit(output, versions, text)
    if failure is not None:
        raise typer.Exit(_told(failure))


def _told(failure: BaseException) -> int:
    from minds.cli import failures

    told = failures.answer(failure)
    if told is None:
        raise failure
    typer.echo(f"error: the controller's version: {told.line}", err=True)
    return told.code

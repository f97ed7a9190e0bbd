"""The chart starts the controller serving metrics on the port its Service and Pod name."""

from __future__ import annotations

from typing import Any

from minds.adapters.metrics import parse_bind_address
from tests.fixtures.helm import Helm


def _controller(objects: list[dict[str, Any]]) -> dict[str, Any]:
    deployment = next(o for o in objects if o["kind"] == "Deployment")
    containers: list[dict[str, Any]] = deployment["spec"]["template"]["spec"]["containers"]
    return next(c for c in containers if c["name"] == "controller")


def test_the_controller_serves_metrics_on_the_charts_metrics_port(helm: Helm) -> None:
    container = _controller(helm.objects({"metrics.port": 9123}))
    args = container["args"]
    address = args[args.index("--metrics-bind-address") + 1]
    # All interfaces: the Service and the NetworkPolicy decide who reaches it.
    assert address == "0.0.0.0:9123"
    assert parse_bind_address(address) is not None
    ports = {p["name"]: p["containerPort"] for p in container["ports"]}
    assert ports["metrics"] == 9123
    assert ports["liveness"] != 9123

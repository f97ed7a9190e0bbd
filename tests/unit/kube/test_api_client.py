"""The controller's API client keeps as many connections as its threads may use at once."""

from __future__ import annotations

from pathlib import Path

from minds.adapters.kube.client import api_client
from minds.controller.workers import WORKERS

KUBECONFIG = """
apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "https://127.0.0.1:6443", insecure-skip-tls-verify: true}}]
users: [{name: u, user: {token: t}}]
contexts: [{name: x, context: {cluster: c, user: u, namespace: shop}}]
current-context: x
"""


def _pool_size(kubeconfig: Path, connections: int | None) -> int:
    api = api_client(str(kubeconfig), connections=connections)
    return int(api.rest_client.pool_manager.connection_pool_kw["maxsize"])


def test_the_pool_holds_a_connection_for_every_thread_that_calls(tmp_path: Path) -> None:
    kubeconfig = tmp_path / "config"
    kubeconfig.write_text(KUBECONFIG)
    assert WORKERS.api_connections >= WORKERS.handler_threads + WORKERS.tick_threads
    assert _pool_size(kubeconfig, WORKERS.api_connections) == WORKERS.api_connections


def test_the_cli_keeps_the_library_default(tmp_path: Path) -> None:
    kubeconfig = tmp_path / "config"
    kubeconfig.write_text(KUBECONFIG)
    assert _pool_size(kubeconfig, None) < WORKERS.api_connections

"""The controller's API client keeps as many connections as its threads may use at once."""

from __future__ import annotations

from pathlib import Path

import pytest

from minds.adapters.kube import client as client_module
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


def test_credentials_are_looked_at_again_at_most_once_a_minute(tmp_path: Path) -> None:
    """The library re-applies the whole kubeconfig before every request; the client does so at
    most once per TOKEN_REFRESH_SECONDS (a token is renewed five minutes before it expires)."""
    kubeconfig = tmp_path / "config"
    kubeconfig.write_text(KUBECONFIG)
    cfg = api_client(str(kubeconfig)).configuration
    cfg.get_api_key_with_prefix("BearerToken")  # the first request: the kubeconfig applied
    cfg.api_key["BearerToken"] = "changed since"
    cfg.get_api_key_with_prefix("BearerToken")  # the next ones within the minute: untouched
    assert cfg.api_key["BearerToken"] == "changed since"


def test_credentials_are_looked_at_again_once_the_minute_is_over(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    kubeconfig = tmp_path / "config"
    kubeconfig.write_text(KUBECONFIG)
    monkeypatch.setattr(client_module, "TOKEN_REFRESH_SECONDS", 0.0)
    cfg = api_client(str(kubeconfig)).configuration
    cfg.get_api_key_with_prefix("BearerToken")
    cfg.api_key["BearerToken"] = "changed since"
    cfg.get_api_key_with_prefix("BearerToken")
    assert cfg.api_key["BearerToken"] == "Bearer t"

"""The ``/metrics`` endpoint, on its own address: never kopf's liveness port, so a scrape
that takes long cannot make the kubelet think the controller is dead."""

from __future__ import annotations

import threading
from dataclasses import dataclass
from wsgiref.simple_server import WSGIServer

from prometheus_client import CollectorRegistry, start_http_server

#: The variable the controller reads its metrics bind address from (the chart's
#: ``metrics.port``); ``minds controller run --metrics-bind-address`` sets it.
BIND_ENV = "MINDS_METRICS_BIND_ADDRESS"
DEFAULT_BIND_ADDRESS = "0.0.0.0:9090"


class BindAddressError(ValueError):
    """The bind address is not ``HOST:PORT``."""


def parse_bind_address(value: str) -> tuple[str, int] | None:
    """``HOST:PORT`` (``[::]:9090`` for IPv6) as a host and port; empty: serving is off."""
    value = value.strip()
    if not value:
        return None
    host, sep, port = value.rpartition(":")
    host = host.removeprefix("[").removesuffix("]")
    if not sep or not host or not port.isdigit() or not 0 < int(port) < 65536:
        raise BindAddressError(
            f"metrics bind address {value!r}: expected HOST:PORT such as 0.0.0.0:9090, "
            "or an empty string to disable"
        )
    return host, int(port)


@dataclass
class MetricsServer:
    server: WSGIServer
    thread: threading.Thread

    @classmethod
    def start(cls, host: str, port: int, registry: CollectorRegistry) -> MetricsServer:
        server, thread = start_http_server(port, host, registry=registry)
        return cls(server, thread)

    @property
    def port(self) -> int:
        return int(self.server.server_address[1])

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()
        self.thread.join(timeout=5)

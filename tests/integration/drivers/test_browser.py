"""The browser driver against a real HTTP server on 127.0.0.1, with the SSRF guard on.

Only 127.0.0.1 test servers are ever connected to: a fixture wraps `socket.create_connection`
and fails the test if any other address is attempted, so "refused" below always means
refused before a packet was sent.
"""

from __future__ import annotations

import contextlib
import gzip
import socket
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest

from minds.adapters.drivers import BrowserDriver, DriverResult, Drivers
from minds.domain.capabilities.registry import REGISTRY
from tests.unit.drivers.fakes import FakeDns

LOCAL = ["127.0.0.1"]
BIG_BYTES = 3 * 1024 * 1024

PAGE = b"""<!doctype html><html><head><title>Atlas status</title>
<script>document.write("tracking")</script></head>
<body><h1>Atlas</h1><p>All systems nominal.</p>
<a href="/docs">Docs</a> <a href="/docs#part">Docs again</a>
<a href="http://127.0.0.1:1/other">Other</a></body></html>"""


@dataclass
class Server:
    base: str
    port: int
    requests: list[str] = field(default_factory=list)

    def url(self, path: str) -> str:
        return f"{self.base}{path}"


class Handler(BaseHTTPRequestHandler):
    server: ThreadingHTTPServer

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def do_GET(self) -> None:
        record: Server = self.server.record  # type: ignore[attr-defined]
        record.requests.append(self.path)
        parts = urlsplit(self.path)
        query = parse_qs(parts.query)
        if parts.path == "/":
            self._send(200, PAGE)
        elif parts.path == "/redirect":
            self._redirect(query["to"][0])
        elif parts.path == "/hop":
            self._redirect("/")
        elif parts.path == "/loop":
            self._redirect("/loop")
        elif parts.path == "/big":
            self._send_big()
        elif parts.path == "/gzip":
            self._send(200, gzip.compress(PAGE), headers={"Content-Encoding": "gzip"})
        elif parts.path == "/slow":
            time.sleep(3)
            self._send(200, PAGE)
        elif parts.path == "/drip":
            self._drip()
        else:
            self._send(404, b"<title>Not found</title><p>nothing here</p>")

    def _send(self, status: int, body: bytes, headers: dict[str, str] | None = None) -> None:
        self.send_response(status)
        self.send_header("Content-Type", "text/html; charset=utf-8")
        self.send_header("Content-Length", str(len(body)))
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.end_headers()
        # The driver may have given up first (the timeout tests): expected.
        with contextlib.suppress(BrokenPipeError, ConnectionResetError):
            self.wfile.write(body)

    def _redirect(self, location: str) -> None:
        self.send_response(302)
        self.send_header("Location", location)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def _send_big(self) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "text/plain")
        self.send_header("Content-Length", str(BIG_BYTES))
        self.end_headers()
        chunk = b"x" * 65536
        try:
            for _ in range(BIG_BYTES // len(chunk)):
                self.wfile.write(chunk)
        except (BrokenPipeError, ConnectionResetError):
            pass  # the driver stopped reading at its limit: expected

    def _drip(self) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "text/plain")
        self.end_headers()
        try:
            for _ in range(40):
                self.wfile.write(b"tick\n")
                self.wfile.flush()
                time.sleep(0.1)
        except (BrokenPipeError, ConnectionResetError):
            pass


@pytest.fixture
def server() -> Iterator[Server]:
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    httpd.daemon_threads = True
    httpd.block_on_close = False
    port = httpd.server_address[1]
    record = Server(base=f"http://127.0.0.1:{port}", port=port)
    httpd.record = record  # type: ignore[attr-defined]
    thread = threading.Thread(target=httpd.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    yield record
    httpd.shutdown()
    httpd.server_close()


@pytest.fixture(autouse=True)
def only_local_connections(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, int]]:
    """Every TCP connection the driver opens, and a guarantee it is to this machine."""
    attempted: list[tuple[str, int]] = []
    real = socket.create_connection

    def create_connection(address: tuple[str, int], *args: Any, **kwargs: Any) -> socket.socket:
        attempted.append(address)
        assert address[0] in ("127.0.0.1", "::1"), f"tried to connect to {address}"
        return real(address, *args, **kwargs)

    monkeypatch.setattr(socket, "create_connection", create_connection)
    return attempted


def browse(
    capability: str,
    url: str,
    allow: list[str] | None = None,
    driver: BrowserDriver | None = None,
    **extra: Any,
) -> DriverResult:
    drivers = Drivers([driver or BrowserDriver(timeout_seconds=5)])
    parameters = REGISTRY[capability].parse({"url": url, **extra})
    return drivers.invoke(capability, parameters, mind_allowed_hosts=allow or [])


# --- refused ------------------------------------------------------------------------------


def test_loopback_is_refused_unless_allow_listed(
    server: Server, only_local_connections: list[tuple[str, int]]
) -> None:
    result = browse("browser.navigate", server.url("/"))
    assert not result.ok
    assert result.error == (
        "refused: 127.0.0.1 is a loopback address, and not in the mind's allowed hosts"
    )
    assert server.requests == []
    assert only_local_connections == []


@pytest.mark.parametrize(
    ("url", "reason"),
    [
        ("http://10.0.0.1/", "private"),
        ("http://169.254.169.254/latest/meta-data/", "cloud metadata"),
        ("http://[::1]:8080/", "loopback"),
        ("http://0.0.0.0/", "unspecified"),
        ("http://[::ffff:169.254.169.254]/", "cloud metadata"),
        ("http://100.64.1.1/", "carrier-grade NAT"),
        ("http://[fd00:ec2::254]/", "cloud metadata"),
    ],
)
def test_internal_addresses_are_refused_before_connecting(
    url: str, reason: str, only_local_connections: list[tuple[str, int]]
) -> None:
    result = browse("browser.read", url)
    assert not result.ok
    assert reason in (result.error or "")
    assert only_local_connections == []


def test_a_name_resolving_to_loopback_is_refused(server: Server) -> None:
    result = browse("browser.navigate", f"http://localhost:{server.port}/")
    assert not result.ok
    assert "localhost" in (result.error or "")
    assert "loopback" in (result.error or "")
    assert server.requests == []


@pytest.mark.parametrize(
    "target",
    [
        "http://169.254.169.254/latest/meta-data/iam/",
        "http://10.0.0.1/admin",
        "http://[::1]/",
        "http://0.0.0.0:8080/",
        "file:///etc/passwd",
    ],
)
def test_a_redirect_to_a_refused_address_is_refused(server: Server, target: str) -> None:
    # The allow-list holds exactly the test server's address: the redirect's target is judged
    # on its own.
    result = browse("browser.read", server.url(f"/redirect?to={target}"), LOCAL)
    assert not result.ok
    assert f"redirected to {target}" in (result.error or "")
    assert server.requests == [f"/redirect?to={target}"]


def test_rebinding_after_the_check_is_refused_at_connect_time(server: Server) -> None:
    dns = FakeDns({"rebind.test": [["93.184.216.34"], ["127.0.0.1"]]})
    driver = BrowserDriver(timeout_seconds=5, resolver=dns)
    result = browse("browser.navigate", f"http://rebind.test:{server.port}/", driver=driver)
    assert not result.ok
    assert "loopback" in (result.error or "")
    assert server.requests == []


def test_a_connection_failure_is_reported() -> None:
    result = browse("browser.navigate", "http://127.0.0.1:1/", LOCAL)
    assert not result.ok
    assert (result.error or "").startswith("could not load http://127.0.0.1:1/: ")


# --- allowed ------------------------------------------------------------------------------


def test_an_allow_listed_server_is_navigated_through_redirects(server: Server) -> None:
    result = browse("browser.navigate", server.url("/hop"), LOCAL)
    assert result.ok, result.error
    assert result.fields == {
        "statusCode": 200,
        "title": "Atlas status",
        "finalUrl": server.url("/"),
    }
    assert isinstance(result.output, dict)
    assert result.output["redirects"] == [server.url("/")]
    assert server.requests == ["/hop", "/"]


def test_an_allow_listed_server_is_read(server: Server) -> None:
    result = browse("browser.read", server.url("/"), LOCAL)
    assert result.ok, result.error
    assert result.fields["text"] == "Atlas\nAll systems nominal.\nDocs Docs again Other"
    assert "tracking" not in str(result.fields["text"])


def test_an_allow_listed_server_s_links_are_listed(server: Server) -> None:
    result = browse("browser.links", server.url("/"), LOCAL)
    assert result.ok, result.error
    assert isinstance(result.output, dict)
    assert result.output["links"] == [server.url("/docs"), "http://127.0.0.1:1/other"]
    assert result.fields == {"count": 2}


def test_an_allow_listed_name_is_followed(server: Server) -> None:
    result = browse("browser.navigate", f"http://localhost:{server.port}/", ["localhost"])
    assert result.ok, result.error
    assert result.fields["statusCode"] == 200


def test_a_missing_page_is_an_observation_not_a_failure(server: Server) -> None:
    result = browse("browser.navigate", server.url("/missing"), LOCAL)
    assert result.ok
    assert result.fields["statusCode"] == 404
    assert result.fields["title"] == "Not found"


def test_compressed_pages_are_decoded(server: Server) -> None:
    result = browse("browser.read", server.url("/gzip"), LOCAL)
    assert result.ok, result.error
    assert "All systems nominal." in str(result.fields["text"])


# --- limits -------------------------------------------------------------------------------


def test_an_oversized_body_is_cut_at_the_limit(server: Server) -> None:
    result = browse("browser.navigate", server.url("/big"), LOCAL)
    assert result.ok, result.error
    assert result.truncated
    assert isinstance(result.output, dict)
    assert result.output["bytes"] == 2 * 1024 * 1024
    assert result.output["bodyTruncated"] is True
    assert "body cut" in result.summary


def test_a_slow_server_is_reported_as_a_timeout(server: Server) -> None:
    started = time.monotonic()
    result = browse(
        "browser.navigate", server.url("/slow"), LOCAL, BrowserDriver(timeout_seconds=0.5)
    )
    assert not result.ok
    assert result.error == f"timed out after 0.5s loading {server.url('/slow')}"
    assert time.monotonic() - started < 2.5


def test_a_dripping_body_is_stopped_at_the_deadline(server: Server) -> None:
    started = time.monotonic()
    result = browse("browser.read", server.url("/drip"), LOCAL, BrowserDriver(timeout_seconds=1))
    assert not result.ok
    assert "timed out after 1s" in (result.error or "")
    assert time.monotonic() - started < 3


def test_redirect_loops_stop_after_five(server: Server) -> None:
    result = browse("browser.navigate", server.url("/loop"), LOCAL)
    assert not result.ok
    assert "more than 5 redirects" in (result.error or "")
    assert len(server.requests) == 6

"""A private CA for an internal model endpoint, as docs/install.md mounts it: the guarded
transport the model client connects through trusts the CA that SSL_CERT_FILE names, and
without it refuses the same server. A real TLS server on loopback, with a CA and a
certificate made by openssl for this test."""

from __future__ import annotations

import http.server
import ssl
import subprocess
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest

from minds.adapters.drivers.ssrf import AllowList, Guard, GuardedTransport

pytestmark = pytest.mark.integration


@dataclass(frozen=True)
class PrivateServer:
    url: str
    ca: Path


def _openssl(*args: str, cwd: Path) -> None:
    subprocess.run(["openssl", *args], cwd=cwd, check=True, capture_output=True, timeout=60)


def _certificates(work: Path) -> tuple[Path, Path, Path]:
    """A CA, and a certificate for 127.0.0.1 that it signed: (ca, certificate, key)."""
    _openssl(
        "req",
        "-x509",
        "-newkey",
        "rsa:2048",
        "-nodes",
        "-days",
        "1",
        "-subj",
        "/CN=minds-test-ca",
        "-keyout",
        "ca.key",
        "-out",
        "ca.crt",
        cwd=work,
    )
    _openssl(
        "req",
        "-newkey",
        "rsa:2048",
        "-nodes",
        "-subj",
        "/CN=127.0.0.1",
        "-keyout",
        "server.key",
        "-out",
        "server.csr",
        cwd=work,
    )
    (work / "san.ext").write_text("subjectAltName=IP:127.0.0.1\n")
    _openssl("x509", "-req", "-in", "server.csr", "-CA", "ca.crt", "-CAkey", "ca.key",
             "-CAcreateserial", "-days", "1", "-extfile", "san.ext", "-out", "server.crt",
             cwd=work)  # fmt: skip
    return work / "ca.crt", work / "server.crt", work / "server.key"


class _Ok(http.server.BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        self.send_response(200)
        self.send_header("Content-Length", "2")
        self.end_headers()
        self.wfile.write(b"ok")

    def log_message(self, format: str, *args: object) -> None:
        """Quiet: the test reads the client's answer, not the server's log."""


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[PrivateServer]:
    ca, certificate, key = _certificates(tmp_path_factory.mktemp("private-ca"))
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Ok)
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(certificate, key)
    httpd.socket = context.wrap_socket(httpd.socket, server_side=True)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield PrivateServer(f"https://127.0.0.1:{httpd.server_address[1]}/", ca)
    finally:
        httpd.shutdown()
        httpd.server_close()


def _get(url: str) -> httpx.Response:
    """Through the transport the model client builds: only loopback allowed, as an admin's
    allowedAddresses would allow an internal endpoint."""
    transport = GuardedTransport(Guard(AllowList.of(["127.0.0.1"])))
    with httpx.Client(transport=transport, timeout=10) as client:
        return client.get(url)


def test_the_ca_named_by_ssl_cert_file_is_trusted(
    server: PrivateServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SSL_CERT_FILE", str(server.ca))
    response = _get(server.url)
    assert (response.status_code, response.text) == (200, "ok")


def test_without_it_the_private_certificate_is_refused(
    server: PrivateServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("SSL_CERT_FILE", raising=False)
    monkeypatch.delenv("SSL_CERT_DIR", raising=False)
    with pytest.raises(httpx.ConnectError, match="CERTIFICATE_VERIFY_FAILED"):
        _get(server.url)

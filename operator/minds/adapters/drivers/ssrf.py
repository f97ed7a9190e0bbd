"""The SSRF guard: a mind's browser may reach the public web, not the inside of its own house.

A URL is judged by the addresses its host resolves to, never by how its name looks: names
such as `localhost`, `127.1`, `2130706433` or a public name an attacker points at 10.0.0.1
all end up at an address, and the address is what is checked. The same check runs at connect
time, inside the HTTP transport, on the address the socket is then opened to, so a name that
resolves to a public address for the check and to a private one a moment later (DNS
rebinding) still cannot get a connection; and it runs for every redirect hop, because each
hop opens its own connection.

Refused unless allow-listed: loopback, private (10/8, 172.16/12, 192.168/16, fc00::/7),
carrier-grade NAT (100.64/10), link-local (169.254/16, fe80::/10), cloud metadata endpoints,
unspecified, multicast, reserved and anything else that is not globally routable, including
these written as IPv4-mapped, IPv4-compatible, 6to4 or NAT64 IPv6 addresses.

The model client uses the same guard for every model call, under the allow-list the cluster
admin configured for that endpoint (docs/models.md), never one a Mind wrote.

The mind's allow-list (`spec.browser.allowedHosts`) holds host names, IP addresses or CIDR
networks. A listed name is trusted for whatever it resolves to, except a cloud metadata
address: that needs the address itself listed, so whoever controls a listed name's DNS cannot
point it at the credentials endpoint.
"""

from __future__ import annotations

import ipaddress
import socket
import ssl
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Final
from urllib.parse import urlsplit

import httpcore
import httpx

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
IPNetwork = ipaddress.IPv4Network | ipaddress.IPv6Network

# socket.getaddrinfo's shape; tests pass a fake to simulate DNS without any traffic.
Resolver = Callable[..., Sequence[tuple[Any, ...]]]

ALLOWED_SCHEMES: Final = frozenset({"http", "https"})

METADATA_ADDRESSES: Final = frozenset(
    ipaddress.ip_address(address)
    for address in (
        "169.254.169.254",  # AWS, GCP, Azure, OpenStack and most others
        "169.254.170.2",  # AWS ECS task credentials
        "fd00:ec2::254",  # AWS over IPv6
        "100.100.100.200",  # Alibaba Cloud
        "168.63.129.16",  # Azure wire server: a public address, refused all the same
    )
)
CARRIER_GRADE_NAT: Final = ipaddress.ip_network("100.64.0.0/10")
NAT64: Final = ipaddress.ip_network("64:ff9b::/96")
IPV4_COMPATIBLE: Final = ipaddress.ip_network("::/96")


class SsrfRefused(Exception):
    """The URL or address may not be reached by this mind."""


class ResolutionFailed(Exception):
    """The host name could not be resolved."""


def forbidden_reason(address: IPAddress) -> str | None:
    """Why `address` may not be reached without an allow-list entry, or None if it may."""
    if isinstance(address, ipaddress.IPv6Address):
        embedded = _embedded_ipv4(address)
        if embedded is not None:
            reason = forbidden_reason(embedded)
            return f"{reason} ({embedded} inside an IPv6 address)" if reason else None
    if address in METADATA_ADDRESSES:
        return "a cloud metadata address"
    checks: tuple[tuple[bool, str], ...] = (
        (address.is_loopback, "a loopback address"),
        (address.is_unspecified, "the unspecified address"),
        (address.is_link_local, "a link-local address"),
        (address in CARRIER_GRADE_NAT, "a carrier-grade NAT (shared) address"),
        (address.is_multicast, "a multicast address"),
        (address.is_reserved, "a reserved address"),
        (address.is_private, "a private address"),
        (getattr(address, "is_site_local", False), "a site-local address"),
        (not address.is_global, "not a globally routable address"),
    )
    for refused, reason in checks:
        if refused:
            return reason
    return None


def _embedded_ipv4(address: ipaddress.IPv6Address) -> ipaddress.IPv4Address | None:
    """The IPv4 address an IPv6 form carries, for the forms that route to it."""
    if address.ipv4_mapped is not None:
        return address.ipv4_mapped
    if address.sixtofour is not None:
        return address.sixtofour
    if address in NAT64 or (address in IPV4_COMPATIBLE and int(address) > 1):
        return ipaddress.IPv4Address(int(address) & 0xFFFFFFFF)
    return None


def parse_address(host: str) -> IPAddress | None:
    """`host` as an IP address (brackets and zone allowed), or None for a name."""
    try:
        return ipaddress.ip_address(host.strip("[]"))
    except ValueError:
        return None


@dataclass(frozen=True, slots=True)
class AllowList:
    """The hosts a mind may reach although they are internal."""

    names: frozenset[str] = frozenset()
    networks: tuple[IPNetwork, ...] = ()

    @classmethod
    def of(cls, entries: Iterable[str]) -> AllowList:
        names: set[str] = set()
        networks: list[IPNetwork] = []
        for raw in entries:
            entry = raw.strip()
            if not entry:
                continue
            try:
                networks.append(ipaddress.ip_network(entry.strip("[]"), strict=False))
            except ValueError:
                names.add(normalise_name(entry))
        return cls(frozenset(names), tuple(networks))

    def allows_name(self, host: str) -> bool:
        return normalise_name(host) in self.names

    def allows_address(self, address: IPAddress) -> bool:
        candidates: list[IPAddress] = [address]
        if isinstance(address, ipaddress.IPv6Address):
            if address.scope_id:
                candidates.append(ipaddress.IPv6Address(str(address).split("%", 1)[0]))
            embedded = _embedded_ipv4(address)
            if embedded is not None:
                candidates.append(embedded)
        return any(
            candidate.version == network.version and candidate in network
            for candidate in candidates
            for network in self.networks
        )


def normalise_name(host: str) -> str:
    """Lower case, no trailing dot, and international names in their ASCII (IDNA) form, which
    is how the HTTP transport hands them to the guard at connect time."""
    name = host.strip().strip("[]").rstrip(".").lower()
    try:
        return name.encode("idna").decode("ascii")
    except UnicodeError:
        return name


class Guard:
    """Resolves and checks hosts for one invocation, under one mind's allow-list."""

    def __init__(self, allow: AllowList, resolver: Resolver = socket.getaddrinfo) -> None:
        self.allow = allow
        self._resolver = resolver

    def check_url(self, url: str) -> None:
        """Refuse a URL that is not plain http(s) or whose host may not be reached."""
        try:
            parts = urlsplit(url)
            port = parts.port
        except ValueError as error:
            raise SsrfRefused(f"not a valid URL: {error}") from error
        if parts.scheme.lower() not in ALLOWED_SCHEMES:
            raise SsrfRefused(f"only http and https URLs may be read, not {parts.scheme!r}")
        if parts.username is not None or parts.password is not None:
            raise SsrfRefused("URLs carrying credentials are not read")
        if not parts.hostname:
            raise SsrfRefused("the URL names no host")
        default_port = 443 if parts.scheme.lower() == "https" else 80
        self.addresses(parts.hostname, port or default_port)

    def addresses(self, host: str, port: int) -> list[str]:
        """The addresses of `host` a connection may be opened to; raises `SsrfRefused` if any
        address the host resolves to is refused, `ResolutionFailed` if it resolves to none."""
        literal = parse_address(host)
        if literal is not None:
            self._check(literal, host, name_listed=False)
            return [str(literal)]
        name_listed = self.allow.allows_name(host)
        resolved = self._resolve(host, port)
        for address in resolved:
            self._check(address, host, name_listed=name_listed)
        return [str(address) for address in resolved]

    def _check(self, address: IPAddress, host: str, *, name_listed: bool) -> None:
        if self.allow.allows_address(address):
            return
        reason = forbidden_reason(address)
        if reason is None:
            return
        if name_listed and address not in METADATA_ADDRESSES:
            return
        shown = host if parse_address(host) is not None else f"{host} ({address})"
        raise SsrfRefused(f"{shown} is {reason}, and not in the mind's allowed hosts")

    def _resolve(self, host: str, port: int) -> list[IPAddress]:
        try:
            infos = self._resolver(host, port, type=socket.SOCK_STREAM)
        except (OSError, UnicodeError) as error:
            raise ResolutionFailed(f"cannot resolve {host}: {error}") from error
        addresses: list[IPAddress] = []
        for info in infos:
            address = ipaddress.ip_address(str(info[4][0]))
            if address not in addresses:
                addresses.append(address)
        if not addresses:
            raise ResolutionFailed(f"{host} resolves to no address")
        return addresses


class GuardedBackend(httpcore.SyncBackend):
    """Opens TCP connections only to addresses the guard accepted for the host, so what was
    checked is what is connected to."""

    def __init__(self, guard: Guard) -> None:
        self._guard = guard

    def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,
        local_address: str | None = None,
        socket_options: Iterable[httpcore.SOCKET_OPTION] | None = None,
    ) -> httpcore.NetworkStream:
        last: Exception | None = None
        for address in self._guard.addresses(host, port):
            try:
                return super().connect_tcp(address, port, timeout, local_address, socket_options)
            except (httpcore.ConnectError, httpcore.ConnectTimeout) as error:
                last = error
        assert last is not None
        raise last


class GuardedTransport(httpx.HTTPTransport):
    """httpx's transport with the guarded backend under its connection pool."""

    def __init__(self, guard: Guard, ssl_context: ssl.SSLContext | None = None) -> None:
        super().__init__(trust_env=False)
        # httpx has no parameter for the network backend, so the pool is replaced with one
        # built the same way (unit tests pin this against httpx upgrades).
        self._pool = httpcore.ConnectionPool(
            ssl_context=ssl_context or httpx.create_ssl_context(),
            max_connections=4,
            network_backend=GuardedBackend(guard),
        )

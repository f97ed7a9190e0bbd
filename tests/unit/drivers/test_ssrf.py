"""The SSRF guard's rules, with DNS simulated by a fake resolver: no traffic leaves this test."""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Sequence

import pytest

from minds.adapters.drivers.ssrf import (
    AllowList,
    Guard,
    GuardedBackend,
    GuardedTransport,
    ResolutionFailed,
    SsrfRefused,
    forbidden_reason,
)
from tests.unit.drivers.fakes import FakeDns


@pytest.mark.parametrize(
    ("address", "reason"),
    [
        ("127.0.0.1", "loopback"),
        ("127.8.9.10", "loopback"),
        ("::1", "loopback"),
        ("10.0.0.1", "private"),
        ("172.16.5.4", "private"),
        ("192.168.1.1", "private"),
        ("fc00::1", "private"),
        ("fd12:3456::1", "private"),
        ("100.64.0.1", "carrier-grade NAT"),
        ("100.127.255.254", "carrier-grade NAT"),
        ("169.254.10.10", "link-local"),
        ("fe80::1", "link-local"),
        ("169.254.169.254", "cloud metadata"),
        ("fd00:ec2::254", "cloud metadata"),
        ("168.63.129.16", "cloud metadata"),
        ("0.0.0.0", "unspecified"),  # noqa: S104 - an address under test, not a bind
        ("::", "unspecified"),
        ("224.0.0.1", "multicast"),
        ("ff02::1", "multicast"),
        ("240.0.0.1", "reserved"),
        ("255.255.255.255", "reserved"),
        ("192.0.2.10", "private|not a globally routable"),
        ("2001:db8::1", "private|not a globally routable"),
        ("fec0::1", "site-local"),
        ("::ffff:127.0.0.1", "loopback"),
        ("::ffff:169.254.169.254", "cloud metadata"),
        ("::ffff:10.1.2.3", "private"),
        ("::127.0.0.1", "loopback"),
        ("64:ff9b::a9fe:a9fe", "cloud metadata"),
        ("2002:7f00:1::", "loopback"),
        ("2002:a00:1::", "private"),
    ],
)
def test_internal_addresses_are_refused(address: str, reason: str) -> None:
    refused = forbidden_reason(ipaddress.ip_address(address))
    assert refused is not None
    assert re.search(reason, refused)


@pytest.mark.parametrize("address", ["8.8.8.8", "93.184.216.34", "2606:4700::1111", "1.1.1.1"])
def test_public_addresses_are_allowed(address: str) -> None:
    assert forbidden_reason(ipaddress.ip_address(address)) is None


def guard(dns: FakeDns, allow: Sequence[str] = ()) -> Guard:
    return Guard(AllowList.of(allow), dns)


def test_a_public_name_is_allowed_and_its_addresses_returned() -> None:
    dns = FakeDns({"docs.example": [["93.184.216.34", "2606:2800:220:1::1"]]})
    assert guard(dns).addresses("docs.example", 443) == ["93.184.216.34", "2606:2800:220:1::1"]


def test_a_name_resolving_to_an_internal_address_is_refused() -> None:
    dns = FakeDns({"intranet.example": [["10.0.0.5"]]})
    with pytest.raises(SsrfRefused, match=r"intranet.example \(10.0.0.5\) is a private address"):
        guard(dns).addresses("intranet.example", 80)


def test_one_internal_address_among_public_ones_refuses_the_name() -> None:
    dns = FakeDns({"mixed.example": [["93.184.216.34", "127.0.0.1"]]})
    with pytest.raises(SsrfRefused, match="loopback"):
        guard(dns).addresses("mixed.example", 80)


def test_an_unresolvable_name_is_a_resolution_failure() -> None:
    with pytest.raises(ResolutionFailed, match=r"cannot resolve nowhere\.example"):
        guard(FakeDns({})).addresses("nowhere.example", 80)


def test_ip_literals_are_checked_without_dns() -> None:
    dns = FakeDns({})
    with pytest.raises(SsrfRefused, match=r"169\.254\.169\.254 is a cloud metadata address"):
        guard(dns).addresses("169.254.169.254", 80)
    with pytest.raises(SsrfRefused, match="loopback"):
        guard(dns).addresses("[::1]", 80)
    assert dns.asked == []


@pytest.mark.parametrize(
    ("allow", "host", "answer"),
    [
        (["127.0.0.1"], "127.0.0.1", None),
        (["127.0.0.1"], "localhost", ["127.0.0.1"]),
        (["10.0.0.0/8"], "10.20.30.40", None),
        (["intranet.example"], "intranet.example", ["10.0.0.5"]),
        (["Intranet.Example."], "INTRANET.example", ["10.0.0.5"]),
        (["bücher.example"], "xn--bcher-kva.example", ["10.0.0.5"]),
        (["127.0.0.1"], "::ffff:127.0.0.1", None),
        (["::1"], "[::1]", None),
    ],
)
def test_the_allow_list_admits_names_addresses_and_networks(
    allow: list[str], host: str, answer: list[str] | None
) -> None:
    dns = FakeDns({host: [answer]} if answer else {})
    assert guard(dns, allow).addresses(host, 80)


def test_an_allow_listed_name_cannot_be_pointed_at_the_metadata_service() -> None:
    dns = FakeDns({"intranet.example": [["169.254.169.254"]]})
    with pytest.raises(SsrfRefused, match="cloud metadata"):
        guard(dns, ["intranet.example"]).addresses("intranet.example", 80)
    assert guard(dns, ["169.254.169.254"]).addresses("intranet.example", 80)


def test_allow_listing_one_address_does_not_open_its_neighbours() -> None:
    with pytest.raises(SsrfRefused):
        guard(FakeDns({}), ["127.0.0.1"]).addresses("127.0.0.2", 80)


@pytest.mark.parametrize(
    ("url", "message"),
    [
        ("file:///etc/passwd", "only http and https"),
        ("gopher://example.com/", "only http and https"),
        ("http://user:pw@example.com/", "credentials"),
        ("http:///path", "no host"),
        ("http://example.com:99999/", "not a valid URL"),
        ("http://2130706433/", "loopback"),
        ("http://0x7f.1/", "loopback"),
    ],
)
def test_check_url_refuses_other_schemes_credentials_and_disguised_loopback(
    url: str, message: str
) -> None:
    # Numeric host spellings go through the real resolver, which answers locally from the
    # spelling itself (inet_aton), so no DNS query and no traffic happen.
    with pytest.raises(SsrfRefused, match=message):
        Guard(AllowList()).check_url(url)


def test_rebinding_is_refused_at_connect_time() -> None:
    """The name is public when checked and loopback a moment later, when the connection is
    opened: the transport resolves through the guard again and refuses before connecting."""
    dns = FakeDns({"rebind.example": [["93.184.216.34"], ["127.0.0.1"]]})
    checked = guard(dns)
    checked.check_url("http://rebind.example/")
    backend = GuardedBackend(checked)
    with pytest.raises(SsrfRefused, match="loopback"):
        backend.connect_tcp("rebind.example", 80, timeout=1)
    assert dns.asked == ["rebind.example", "rebind.example"]


def test_the_transport_keeps_httpx_s_pool_but_with_the_guarded_backend() -> None:
    # httpx has no parameter for the network backend; this pins the one private attribute the
    # guarded transport replaces, so an httpx upgrade that renames it fails here, loudly.
    transport = GuardedTransport(guard(FakeDns({})))
    pool = transport._pool
    assert isinstance(pool._network_backend, GuardedBackend)  # type: ignore[attr-defined]

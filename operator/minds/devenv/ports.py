"""Loopback ports for the local processes (controllers, Postgres, Prometheus) that a test or
the demo stops and starts again on the same port.

The usual way, bind to port 0 and let the kernel choose, picks from the kernel's ephemeral
range: the same range every outgoing connection takes its source port from. A controller
stopped for a minute (as the tests that need to be alone stop the shared one) then finds its
port taken by one of the thousands of connections made meanwhile by the other processes on
the machine, and cannot start again ("Address already in use"). So ports are chosen below that
range, where the kernel never hands one out by itself; a port in use is skipped.
"""

from __future__ import annotations

import random
import socket
from pathlib import Path
from typing import Final

HOST: Final = "127.0.0.1"
#: The lowest port chosen: above the well-known and most registered services' ports.
LOWEST: Final = 10000
_RANGE_FILE: Final = Path("/proc/sys/net/ipv4/ip_local_port_range")
#: Linux's default ephemeral range, when the kernel does not say.
_EPHEMERAL_DEFAULT: Final = (32768, 60999)
_TRIES: Final = 200


def ephemeral_range(path: Path = _RANGE_FILE) -> tuple[int, int]:
    """The ports the kernel chooses from by itself (inclusive)."""
    try:
        low, high = (int(part) for part in path.read_text().split())
    except (OSError, ValueError):
        return _EPHEMERAL_DEFAULT
    return low, high


def free_port(*, chooser: random.Random | None = None) -> int:
    """A loopback TCP port nobody listens on, outside the kernel's ephemeral range when there
    is room below it (else any port the kernel gives)."""
    pick = chooser or random.SystemRandom()
    low, _ = ephemeral_range()
    if low - LOWEST >= _TRIES:
        for _ in range(_TRIES):
            port = pick.randrange(LOWEST, low)
            if _bindable(port):
                return port
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind((HOST, 0))
        return int(probe.getsockname()[1])


def _bindable(port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        try:
            probe.bind((HOST, port))
        except OSError:
            return False
    return True

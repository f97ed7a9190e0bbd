"""Ports for processes that stop and start again are chosen where no connection takes one."""

from __future__ import annotations

import random
import socket
from pathlib import Path

from minds.devenv.ports import HOST, LOWEST, ephemeral_range, free_port


class Replay(random.Random):
    """Chooses the given ports in order."""

    def __init__(self, *ports: int) -> None:
        super().__init__()
        self._ports = list(ports)

    def randrange(self, start: int, stop: int | None = None, step: int = 1) -> int:
        port = self._ports.pop(0)
        assert stop is not None
        assert start <= port < stop
        return port


def test_a_port_is_chosen_below_the_kernels_own_range() -> None:
    low, _ = ephemeral_range()
    for _ in range(20):
        assert LOWEST <= free_port() < low


def test_a_port_someone_listens_on_is_skipped() -> None:
    busy = free_port()
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as taken:
        taken.bind((HOST, busy))
        taken.listen()
        other = free_port()
        assert other != busy
        assert free_port(chooser=Replay(busy, other)) == other


def test_the_range_is_read_from_the_kernel(tmp_path: Path) -> None:
    told = tmp_path / "ip_local_port_range"
    told.write_text("40000\t50000\n")
    assert ephemeral_range(told) == (40000, 50000)
    assert ephemeral_range(tmp_path / "missing") == (32768, 60999)

"""Test doubles shared by the driver tests."""

from __future__ import annotations

import socket
from collections.abc import Sequence
from typing import Any


class FakeDns:
    """getaddrinfo's shape; each name answers its addresses in turn (for rebinding)."""

    def __init__(self, answers: dict[str, Sequence[Sequence[str]]]) -> None:
        self.answers = {name: list(replies) for name, replies in answers.items()}
        self.asked: list[str] = []

    def __call__(self, host: str, port: int, *args: Any, **kwargs: Any) -> list[tuple[Any, ...]]:
        self.asked.append(host)
        replies = self.answers.get(host)
        if not replies:
            raise socket.gaierror(socket.EAI_NONAME, "Name or service not known")
        addresses = replies.pop(0) if len(replies) > 1 else replies[0]
        return [
            (
                socket.AF_INET6 if ":" in address else socket.AF_INET,
                socket.SOCK_STREAM,
                6,
                "",
                (address, port),
            )
            for address in addresses
        ]

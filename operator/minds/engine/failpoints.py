"""Failpoints: crash on purpose at a named point, to prove crash safety for real.

``MINDS_FAILPOINTS=after-write-ahead:service.restart`` makes the process kill itself with
SIGKILL right after the write-ahead row of a ``service.restart`` execution is recorded and
before the driver acts: exactly the window the recovery rules exist for. Unset (the default),
a failpoint is a dictionary lookup. Never set it in production.
"""

from __future__ import annotations

import os
import signal

_ACTIVE = frozenset(
    p.strip() for p in os.environ.get("MINDS_FAILPOINTS", "").split(",") if p.strip()
)


def hit(point: str, detail: str = "") -> None:
    if f"{point}:{detail}" in _ACTIVE or point in _ACTIVE:
        os.kill(os.getpid(), signal.SIGKILL)

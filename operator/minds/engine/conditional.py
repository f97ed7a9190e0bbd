"""Apply a computed status with one conditional write, re-reading on conflict.

This is the imperative half of "functional core, imperative shell": ``compute`` is pure and
sees the freshly read object each time, so a stale copy can never overwrite a newer state.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

from minds.domain.resources.kinds import Kind
from minds.engine.ports import Conflict, ResourcePort

T = TypeVar("T")

MAX_ATTEMPTS = 8


class TooMuchContention(RuntimeError):
    """Every attempt lost its race; the caller's retry policy takes over."""


def write_status(
    resources: ResourcePort,
    kind: Kind,
    namespace: str,
    name: str,
    compute: Callable[[dict[str, Any]], tuple[dict[str, Any] | None, T]],
    max_attempts: int = MAX_ATTEMPTS,
) -> tuple[dict[str, Any] | None, T]:
    """Read, compute the new status, write it conditionally; repeat on 409.

    ``compute`` returns ``(status or None, result)``; None means nothing to write. Returns the
    object as written (or as read, when nothing was written) and the computed result.
    """
    for _ in range(max_attempts):
        body = resources.get(kind, namespace, name)
        status, result = compute(body)
        if status is None or status == body.get("status"):
            return body, result
        try:
            return resources.replace_status(kind, body, status), result
        except Conflict:
            continue
    raise TooMuchContention(f"{kind.kind} {namespace}/{name}: status kept changing under us")

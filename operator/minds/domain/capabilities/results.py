"""What one invocation of a capability found or did, as drivers report it.

It lives in the domain because the capability service (engine) records it and the executor
adopts it, while only drivers (adapters) produce it: both sides name it without one importing
the other.
"""

from __future__ import annotations

from collections.abc import Mapping

from pydantic import JsonValue

from minds.domain.base import Model

__all__ = ["DriverResult", "FieldValue"]

FieldValue = bool | int | float | str


class DriverResult(Model):
    """What one invocation of a capability found or did.

    `ok` says whether the driver did what was asked (a read was made, a request accepted),
    never whether the world is healthy: a restart that was accepted is `ok` with the summary
    "restart requested (health not yet verified)". `fields` are the registry's observation
    fields for read-only capabilities; `output` is the bounded detail; `truncated` says some of
    it was cut.
    """

    ok: bool
    summary: str
    fields: dict[str, FieldValue] = {}
    output: JsonValue = None
    error: str | None = None
    truncated: bool = False

    @classmethod
    def success(
        cls,
        summary: str,
        *,
        fields: Mapping[str, FieldValue] | None = None,
        output: JsonValue = None,
        truncated: bool = False,
    ) -> DriverResult:
        return cls(
            ok=True, summary=summary, fields=dict(fields or {}), output=output, truncated=truncated
        )

    @classmethod
    def failure(
        cls,
        error: str,
        *,
        summary: str | None = None,
        fields: Mapping[str, FieldValue] | None = None,
        output: JsonValue = None,
    ) -> DriverResult:
        return cls(
            ok=False,
            summary=summary or error,
            fields=dict(fields or {}),
            output=output,
            error=error,
        )

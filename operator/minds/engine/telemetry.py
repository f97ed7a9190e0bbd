"""What the engine tells about what it does, for the controller's process-local counters.

A port like the others: the engine never imports a metrics library. The default tells nobody,
so services built without it (tests, the CLI) behave exactly the same.
"""

from __future__ import annotations

from typing import Final, Protocol


class Telemetry(Protocol):
    def approval_decided(
        self, namespace: str, mind: str, outcome: str, waited_seconds: float | None
    ) -> None:
        """An Approval reached ``outcome`` (approved, denied, expired, withdrawn) after
        ``waited_seconds`` since it was created (None when its creation time is unknown)."""
        ...

    def invoked(self, namespace: str, mind: str, capability: str, outcome: str) -> None:
        """The capability layer answered an invocation with ``outcome``."""
        ...


class NoTelemetry:
    def approval_decided(
        self, namespace: str, mind: str, outcome: str, waited_seconds: float | None
    ) -> None:
        return None

    def invoked(self, namespace: str, mind: str, capability: str, outcome: str) -> None:
        return None


NO_TELEMETRY: Final = NoTelemetry()

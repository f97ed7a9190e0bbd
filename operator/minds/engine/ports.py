"""The engine's view of the world: small protocols the adapters implement.

The engine never imports a Kubernetes or database client directly; it is handed objects that
satisfy these protocols, which keeps each use case readable and lets the wiring choose the
real adapters.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from typing import Any, Protocol

from minds.domain.errors import AlreadyExists, Conflict, NotFound
from minds.domain.ledger import EventRecord, MindRecord
from minds.domain.resources.kinds import Kind

Clock = Callable[[], datetime]

__all__ = [
    "AlreadyExists",
    "Clock",
    "Conflict",
    "EventPort",
    "LedgerPort",
    "NotFound",
    "ResourcePort",
    "ResourceReader",
    "ResourceWriter",
]


class LedgerPort(Protocol):
    def append_event(self, record: EventRecord) -> bool:
        """Append once; False when a row with the same idempotency key already exists."""
        ...

    def upsert_mind(self, record: MindRecord) -> object: ...

    def mark_mind_deleted(
        self, namespace: str, name: str, uid: str | None, at: datetime
    ) -> object: ...


class ResourceReader(Protocol):
    """Reads of the operator's own resources; a watch-fed cache may serve them."""

    def get(self, kind: Kind, namespace: str, name: str) -> dict[str, Any]:
        """The object as the API server has it now; raises NotFound."""
        ...

    def list(
        self, kind: Kind, namespace: str, label_selector: str | None = None
    ) -> list[dict[str, Any]]: ...


class ResourceWriter(Protocol):
    """Writes, always to the API server; status writes are conditional."""

    def create(self, kind: Kind, namespace: str, body: dict[str, Any]) -> dict[str, Any]:
        """Create; raises AlreadyExists when the name is taken."""
        ...

    def replace_status(
        self, kind: Kind, body: dict[str, Any], status: dict[str, Any]
    ) -> dict[str, Any]:
        """Write ``status`` conditionally on ``body``'s resourceVersion; raises Conflict."""
        ...


class ResourcePort(ResourceReader, ResourceWriter, Protocol):
    """Both halves: what a use case that reads and writes is handed."""


class EventPort(Protocol):
    def post(self, body: dict[str, Any], *, type_: str, reason: str, message: str) -> None:
        """Post a Kubernetes Event about ``body`` (best effort: an Event is not the record).

        The adapter masks the message and then cuts it to what an Event holds; callers pass it
        whole, since a cut made first could leave half a secret that no rule recognises."""
        ...

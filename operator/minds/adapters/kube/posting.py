"""Events posted beside the work, not in its way.

An Event is a courtesy to the person running ``kubectl describe``; the ledger is the record. A
synchronous post put a round trip to the API server on the path between a person's approval
and the action it allows, once per Event. Here a post is queued and one thread sends them in
order. The queue is bounded: when the API server is slower than the controller for long, the
newest Events are dropped and counted in the log, never the work that told them.
"""

from __future__ import annotations

import logging
import queue
import threading
from dataclasses import dataclass
from typing import Any, Protocol

log = logging.getLogger(__name__)


class Poster(Protocol):
    def post(self, body: dict[str, Any], *, type_: str, reason: str, message: str) -> None: ...


@dataclass(frozen=True)
class _Post:
    body: dict[str, Any]
    type_: str
    reason: str
    message: str


def _reference(body: dict[str, Any]) -> dict[str, Any]:
    """What an Event names of its object, copied now: the caller may change the body later."""
    meta = body.get("metadata") or {}
    kept = ("name", "namespace", "uid", "resourceVersion")
    return {
        "apiVersion": body.get("apiVersion"),
        "kind": body.get("kind"),
        "metadata": {key: meta[key] for key in kept if key in meta},
    }


class BackgroundEvents:
    """The engine's ``EventPort``: ``post`` queues and returns; a thread posts in order."""

    def __init__(self, inner: Poster, *, capacity: int = 1000) -> None:
        self._inner = inner
        # Besides Events: a threading.Event to set once all before it were sent, None to stop.
        self._queue: queue.Queue[_Post | threading.Event | None] = queue.Queue(maxsize=capacity)
        self._dropped = 0
        self._thread = threading.Thread(target=self._drain, name="minds-events", daemon=True)
        self._thread.start()

    def post(self, body: dict[str, Any], *, type_: str, reason: str, message: str) -> None:
        try:
            self._queue.put_nowait(_Post(_reference(body), type_, reason, message))
        except queue.Full:
            self._dropped += 1
            if self._dropped % 100 == 1:
                log.warning("the API server is behind: %d Events dropped so far", self._dropped)

    def flush(self, timeout: float) -> bool:
        """Wait until every queued Event was sent; False if they were not within ``timeout``."""
        done = threading.Event()
        try:
            self._queue.put(done, timeout=timeout)
        except queue.Full:
            return False
        return done.wait(timeout)

    def close(self, timeout: float = 5.0) -> None:
        """Send what is queued (for at most ``timeout``), then stop the thread."""
        try:
            self._queue.put(None, timeout=timeout)
        except queue.Full:
            return
        self._thread.join(timeout)

    def _drain(self) -> None:
        while (item := self._queue.get()) is not None:
            if isinstance(item, threading.Event):
                item.set()
                continue
            try:
                self._inner.post(
                    item.body, type_=item.type_, reason=item.reason, message=item.message
                )
            except Exception:  # an Event is best effort; the thread must live on
                log.warning("could not post event %s", item.reason, exc_info=True)

"""Repeated Events kept as one series, as Kubernetes keeps them.

The kubelet and client-go's event recorder do not create a second Event when the same thing
happens again to the same object: they raise ``count`` and ``lastTimestamp`` on the first
one, and ``kubectl describe`` shows it as "(x3 over 5m)". Without that, a step blocked again
and again or a decision ignored on every patch grows the namespace's Events one object per
repeat, and the story a person reads is buried under its own copies. This module remembers
which Event each repeat belongs to; ``KubeEvents`` does the writing.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Final

#: A repeat within this time of the last one is counted on the same Event (client-go's
#: correlator uses the same ten minutes). Later, a new Event starts a new series.
WINDOW: Final = timedelta(minutes=10)
#: How many series are remembered, least recently seen forgotten first (client-go: 4096). A
#: forgotten series only costs a new Event at its next repeat.
KEPT: Final = 4096

#: What makes two Events the same: the object (namespace, kind, uid or name), type, reason
#: and the message as posted.
Key = tuple[str, str, str, str, str, str]


@dataclass(frozen=True)
class Series:
    """An Event already posted: its name, how many times it happened, when it last did."""

    name: str
    count: int
    first: datetime
    last: datetime


class EventSeries:
    """The series of recent Events, by what they say and of what (thread-safe)."""

    def __init__(self, *, window: timedelta = WINDOW, kept: int = KEPT) -> None:
        self._window = window
        self._kept = kept
        self._series: OrderedDict[Key, Series] = OrderedDict()
        self._lock = threading.Lock()

    def repeat_of(self, key: Key, now: datetime) -> Series | None:
        """The series this Event repeats (its count and last time already raised), or None
        when it starts a new one."""
        with self._lock:
            found = self._series.get(key)
            if found is None or now - found.last >= self._window:
                return None
            raised = Series(found.name, found.count + 1, found.first, now)
            self._series[key] = raised
            self._series.move_to_end(key)
            return raised

    def started(self, key: Key, name: str, now: datetime) -> None:
        """A new Event ``name`` was created for ``key``."""
        with self._lock:
            self._series[key] = Series(name, 1, now, now)
            self._series.move_to_end(key)
            while len(self._series) > self._kept:
                self._series.popitem(last=False)

    def forget(self, key: Key) -> None:
        """The Event is gone (expired by the API server's TTL, or deleted)."""
        with self._lock:
            self._series.pop(key, None)

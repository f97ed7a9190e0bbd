"""What a Mind's health is read from: its ledger's answer (asked at most every few seconds,
whatever the number of Minds) and the times in its own body."""

from __future__ import annotations

import threading
from collections.abc import Mapping
from datetime import datetime, timedelta
from typing import Any

from minds.domain.mind_rules import Vitals
from minds.domain.resources.common import parse_timestamp
from minds.engine.ports import Clock, LedgerPort

#: How long one answer of the ledger stands for all Minds: a thousand Minds' checks cost one
#: query every few seconds, not a thousand.
PULSE = timedelta(seconds=3)
DEFAULT_INTERVAL = 60


class LedgerPulse:
    """The ledger's last answer, asked again once it is older than ``PULSE``."""

    def __init__(self, ledger: LedgerPort, clock: Clock) -> None:
        self._ledger = ledger
        self._clock = clock
        self._lock = threading.Lock()
        self._last: tuple[datetime, bool] | None = None

    def answers(self) -> bool:
        now = self._clock()
        with self._lock:
            if self._last is not None and now - self._last[0] < PULSE:
                return self._last[1]
        answer = self._ledger.answers()
        with self._lock:
            self._last = (now, answer)
        return answer


def vitals_of(body: Mapping[str, Any], ledger_answers: bool, started_at: datetime) -> Vitals:
    spec = body.get("spec") or {}
    status = body.get("status") or {}
    created = parse_timestamp((body.get("metadata") or {}).get("creationTimestamp"))
    since = max(created, started_at) if created is not None else started_at
    return Vitals(
        ledger_answers=ledger_answers,
        last_cycle_at=parse_timestamp(status.get("lastCycleAt")),
        since=since,
        interval=timedelta(seconds=int(spec.get("cycleIntervalSeconds") or DEFAULT_INTERVAL)),
        active=bool(spec.get("active", True)),
    )

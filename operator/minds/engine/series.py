"""Recording routine as series: read the subject's series, let the domain decide (is this the
same as the last? is a cut due?), write the step with one conditional write.

``minds.domain.series`` holds the rules. A routine occurrence costs one UPDATE of its series'
row (and, every `CUT_EVERY`, one journal row); any other is written in full by the caller's
``full``, in one transaction with the close of the series before it and the opening of its own.
Every write is conditional on the series' version as read: a writer that lost a race reads
again and decides again, so nothing is counted twice.
"""

from __future__ import annotations

from collections.abc import Callable, Collection
from datetime import datetime
from typing import Protocol

from minds.domain.series import Occurrence, SeriesKind, ended, recorded
from minds.engine.ports import SeriesStore, Transactional

__all__ = ["SeriesLedger", "close_untouched", "note"]

#: Reads and decisions again after losing a race for a series' row; a mind's cycle writes its
#: series alone (under its lock), so one is already rare.
ATTEMPTS = 5


class SeriesLedger(SeriesStore, Transactional, Protocol):
    """What recording series needs of the ledger."""


class _Moved(Exception):
    """The series' row moved between reading and writing it."""


def note(ledger: SeriesLedger, occurrence: Occurrence, full: Callable[[], bool]) -> bool:
    """Record one occurrence; True when it extended its series (no row of its own). Otherwise
    ``full`` writes it in full (False: another writer had recorded it already, and the series
    is left to that writer), in one transaction with the series' rows, and this returns False."""
    for _ in range(ATTEMPTS):
        found = ledger.series(
            occurrence.namespace,
            occurrence.mind,
            kind=occurrence.kind,
            subject=occurrence.subject,
        )
        step = recorded(found[0] if found else None, occurrence)
        if step.routine:
            if ledger.save_series(step.series, replaces=step.replaces, told=step.rows):
                return True
            continue
        try:
            with ledger.transaction():
                # The full record first: its rows take the chains' locks in the order every
                # writer takes them (docs/ledger.md); the series' row is this mind's alone.
                if full() and not ledger.save_series(
                    step.series, replaces=step.replaces, told=step.rows
                ):
                    raise _Moved
        except _Moved:
            continue
        return False
    raise RuntimeError(f"the series of {occurrence.subject!r} kept moving while recorded")


def close_untouched(
    ledger: SeriesLedger,
    namespace: str,
    mind: str,
    kind: SeriesKind,
    touched: Collection[str],
    now: datetime,
) -> int:
    """Close the mind's open series of ``kind`` that nothing extended or opened this time;
    how many were closed (one that moved meanwhile is left to the writer that moved it)."""
    steps = ended(ledger.series(namespace, mind, kind=kind), kind, touched, now)
    return sum(
        ledger.save_series(step.series, replaces=step.replaces, told=step.rows) for step in steps
    )

"""Routine is a series, change is a row.

An observation that finds what the last observation of the same subject found, and a cycle of
a mind that decided nothing, as the last did, are not written as rows of their own: they extend
a **series** (count, first and last seen, the last result), as Kubernetes counts a repeated
Event on the first (``events.k8s.io/v1`` ``series.count``, ``series.lastObservedTime``).

**The same** (`same`): two occurrences are the same when they have one identity (namespace,
mind, kind, subject) and equal ``facts``, and the newer changes nothing by itself:

- an *observation* (kind `observation`), a mind's look at a goal: its subject is the
  capability, its target and the goal (`service.status on NS/NAME for goal G`); its facts are
  the Mind's uid, the goal, the parameters, the authority's decision with every stage of its
  trail (the rule that decided), the result (ok, summary, fields, output, error) and the belief
  conclusion (the belief the result is evidence about, which way, and its confidence after);
- a *cycle* (kind `cycle`, subject `cycle`): its facts are the Mind's uid and what the cycle
  did (observed, findings taken in, formed, decisions, refuted predictions).

An occurrence **changes** something when an observation's evidence would move or form a belief,
or a cycle formed an intention, took in a finding or recorded a decision: it is never routine.
An action that spent a grant is not an occurrence at all (``observation`` returns None).

The first occurrence that is not the same is written in full, as any other, and opens a new
series (count 1: the full record is its first member); the series before it is closed. A
series lives in a current-state row, updated in place; it reaches the chained, append-only
journal as one ``series_closed`` row when it closes, and as one ``series_cut`` row every
`CUT_EVERY` while it is open and growing: a crash, or an edit of the current-state row, can
lose or change at most what was counted since the last cut. A series of one is its full record
alone and writes no row when it closes.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta
from enum import StrEnum
from typing import Annotated, Any, Final

from pydantic import AwareDatetime, Field, JsonValue

from minds.domain.base import Model
from minds.domain.capabilities.authority import AuthorityDecision
from minds.domain.capabilities.results import DriverResult
from minds.domain.ledger import EventRecord, SubjectRef, idempotency_key, mask_secrets

__all__ = [
    "CUT_EVERY",
    "SERIES_CLOSED",
    "SERIES_CUT",
    "SERIES_EVENTS",
    "Occurrence",
    "Series",
    "SeriesKind",
    "Step",
    "cut_due",
    "cycle",
    "ended",
    "latest",
    "observation",
    "recorded",
    "same",
    "series_from_row",
    "tell",
]

#: How often an open series that grew is written into the journal (see the module notes).
CUT_EVERY: Final = timedelta(hours=4)

#: The journal's rows of a series: a checkpoint of an open one, and the end of one.
SERIES_CUT: Final = "series_cut"
SERIES_CLOSED: Final = "series_closed"
SERIES_EVENTS: Final = (SERIES_CUT, SERIES_CLOSED)

#: What a cycle's payload says it did, by what the `cycle_completed` row calls it: any of
#: these above zero and the cycle changed something.
_DECIDED: Final = ("findingsTakenIn", "formed", "decisions")

Name = Annotated[str, Field(min_length=1, max_length=253)]


class SeriesKind(StrEnum):
    OBSERVATION = "observation"
    CYCLE = "cycle"


class Occurrence(Model):
    """One observation or cycle, as a series sees it.

    ``record_key`` is the key its full record is written under (an execution's origin key, a
    `cycle_completed` row's idempotency key): the series it opens names it. ``told`` is how a
    series of it reads ("observed running"); ``last`` what the series keeps of it."""

    namespace: Name
    mind: Name
    kind: SeriesKind
    subject: Annotated[str, Field(min_length=1, max_length=1000)]
    facts: dict[str, JsonValue]
    changes: bool
    at: AwareDatetime
    told: str
    last: dict[str, JsonValue]
    record_key: str

    @property
    def digest(self) -> str:
        """What must be equal, as one hash (of the facts as the ledger would hold them)."""
        canonical = json.dumps(
            mask_secrets(self.facts), sort_keys=True, separators=(",", ":"), ensure_ascii=False
        )
        return hashlib.sha256(canonical.encode("utf-8", "surrogatepass")).hexdigest()


class Series(Model):
    """The current state of one series (its `observation_series` row).

    ``count`` includes the full record that opened it (``opened_by``); ``cut_count`` and
    ``cut_at`` are the count and time the journal last had (at opening, the full record and
    its time); ``version`` moves with every write, so a write is conditional on the one read."""

    id: str
    namespace: Name
    mind: Name
    kind: SeriesKind
    subject: Annotated[str, Field(min_length=1, max_length=1000)]
    digest: str
    told: str
    count: Annotated[int, Field(ge=1)]
    first_seen: AwareDatetime
    last_seen: AwareDatetime
    last: dict[str, JsonValue]
    opened_by: str
    cut_count: Annotated[int, Field(ge=1)]
    cut_at: AwareDatetime
    closed_at: AwareDatetime | None = None
    version: Annotated[int, Field(ge=1)] = 1

    @property
    def open(self) -> bool:
        return self.closed_at is None


@dataclass(frozen=True)
class Step:
    """What recording one occurrence (or closing a series) writes: ``series`` in place of the
    row at version ``replaces`` (None: there is none), with ``rows`` appended to the journal in
    the same transaction. ``routine``: the occurrence extended its series and has no rows of
    its own; otherwise it is written in full, in the same transaction."""

    series: Series
    rows: tuple[EventRecord, ...]
    routine: bool
    replaces: int | None


# -- what an occurrence is -------------------------------------------------------------------


def observation(
    *,
    namespace: str,
    mind: str,
    capability: str,
    scope: str,
    decision: AuthorityDecision,
    result: DriverResult,
    facts: Mapping[str, JsonValue],
    conclusion: JsonValue,
    changes: bool,
    at: datetime,
    record_key: str,
) -> Occurrence | None:
    """A read a mind takes routinely (``scope``: whose look it is, a goal), as a series sees
    it; None for one that spent a grant, which is always a row of its own."""
    if decision.grant is not None:
        return None
    state = result.fields.get("state")
    told = f"observed {state}" if isinstance(state, str) else f"observed {_outcome(result)}"
    return Occurrence(
        namespace=namespace,
        mind=mind,
        kind=SeriesKind.OBSERVATION,
        subject=f"{capability} on {decision.target} for {scope}",
        facts={
            **facts,
            "capability": capability,
            "parameters": decision.parameters or {},
            "authority": {
                "decision": decision.decision.value,
                "trail": [s.to_k8s() for s in decision.trail],
            },
            "result": {
                "ok": result.ok,
                "summary": result.summary,
                "fields": dict(result.fields),
                "output": result.output,
                "error": result.error,
            },
            "conclusion": conclusion,
        },
        changes=changes,
        at=at,
        told=told,
        last={"summary": result.summary, "fields": dict(result.fields)},
        record_key=record_key,
    )


def _outcome(result: DriverResult) -> str:
    return "ok" if result.ok else "failing"


def cycle(
    *, namespace: str, mind: str, uid: str, did: Mapping[str, JsonValue], at: datetime, key: str
) -> Occurrence:
    """A cycle of a mind, as a series sees it: ``did`` is its `cycle_completed` payload."""
    decided = any(isinstance(did.get(k), int) and did[k] for k in _DECIDED)
    return Occurrence(
        namespace=namespace,
        mind=mind,
        kind=SeriesKind.CYCLE,
        subject="cycle",
        facts={"mind": uid, **did},
        changes=decided,
        at=at,
        told="completed a cycle that decided nothing",
        last=dict(did),
        record_key=key,
    )


# -- the rules -------------------------------------------------------------------------------


def same(series: Series | None, occurrence: Occurrence) -> bool:
    """Whether ``occurrence`` extends ``series``: it is open, of the same identity and facts,
    and the occurrence changes nothing by itself (see the module notes)."""
    return (
        series is not None
        and series.open
        and not occurrence.changes
        and _identity(series) == _identity(occurrence)
        and series.digest == occurrence.digest
    )


def cut_due(series: Series, now: datetime, every: timedelta = CUT_EVERY) -> bool:
    """Whether an open series that grew since the journal last had it should be written now."""
    return series.open and series.count > series.cut_count and now - series.cut_at >= every


def recorded(current: Series | None, occurrence: Occurrence) -> Step:
    """Record ``occurrence`` against its subject's ``current`` series: extend it (cut when a
    cut is due), or close it and open a new one with the occurrence's full record."""
    now = occurrence.at
    if current is not None and same(current, occurrence):
        grown = current.model_copy(
            update={
                "count": current.count + 1,
                "last_seen": now,
                "last": occurrence.last,
                "version": current.version + 1,
            }
        )
        rows: tuple[EventRecord, ...] = ()
        if cut_due(grown, now):
            since = grown.count - grown.cut_count
            grown = grown.model_copy(update={"cut_count": grown.count, "cut_at": now})
            rows = (_row(grown, SERIES_CUT, now, since),)
        return Step(grown, rows, routine=True, replaces=current.version)
    closing = _closed(current, now)[1] if current is not None and current.open else ()
    opened = Series(
        id=_series_id(occurrence, now),
        namespace=occurrence.namespace,
        mind=occurrence.mind,
        kind=occurrence.kind,
        subject=occurrence.subject,
        digest=occurrence.digest,
        told=occurrence.told,
        count=1,
        first_seen=now,
        last_seen=now,
        last=occurrence.last,
        opened_by=occurrence.record_key,
        cut_count=1,
        cut_at=now,
        version=current.version + 1 if current is not None else 1,
    )
    return Step(
        opened, closing, routine=False, replaces=None if current is None else current.version
    )


def ended(
    series: Iterable[Series], kind: SeriesKind, touched: Collection[str], now: datetime
) -> list[Step]:
    """Close the open series of ``kind`` whose subjects nothing extended or opened this time
    (``touched``): a look no longer taken, or taken and answered otherwise (refused, say)."""
    return [
        Step(*_closed(s, now), routine=False, replaces=s.version)
        for s in series
        if s.open and s.kind is kind and s.subject not in touched
    ]


def _closed(series: Series, now: datetime) -> tuple[Series, tuple[EventRecord, ...]]:
    """The series closed, and the journal's row that says so: none for a series of one (its
    full record is all there is to say)."""
    closed = series.model_copy(
        update={
            "closed_at": now,
            "cut_count": series.count,
            "cut_at": now if series.count > series.cut_count else series.cut_at,
            "version": series.version + 1,
        }
    )
    if series.count == 1:
        return closed, ()
    return closed, (_row(closed, SERIES_CLOSED, now, series.count - series.cut_count),)


def _identity(item: Series | Occurrence) -> tuple[str, str, SeriesKind, str]:
    return (item.namespace, item.mind, item.kind, item.subject)


def _series_id(occurrence: Occurrence, at: datetime) -> str:
    return "ser-" + idempotency_key("series", *_identity(occurrence), at.isoformat())[:24]


# -- the journal's rows, and reading them back -----------------------------------------------


def _row(series: Series, type_: str, now: datetime, since: int) -> EventRecord:
    """The journal's row of ``series`` as it stands after the cut or close; ``since``: how
    many of its count the journal did not have before."""
    payload: dict[str, JsonValue] = series.model_dump(
        mode="json", by_alias=True, exclude={"version", "namespace", "mind"}
    )
    payload["sinceCut"] = since
    return EventRecord(
        mind=series.mind,
        namespace=series.namespace,
        type=type_,
        subject=SubjectRef(kind="Series", name=series.id, uid=series.id),
        payload=payload,
        occurred_at=now,
        idempotency_key=idempotency_key("series", series.id, type_, str(series.count)),
    )


def series_from_row(row: EventRecord) -> Series:
    """The series as a `series_cut` or `series_closed` row has it."""
    fields: dict[str, Any] = {k: v for k, v in row.payload.items() if k != "sinceCut"}
    return Series.model_validate(
        {**fields, "namespace": row.namespace, "mind": row.mind, "version": 1}
    )


def latest(rows: Iterable[EventRecord], current: Iterable[Series]) -> list[Series]:
    """Every series of a mind that counted more than its full record, as it stands last: the
    journal's rows of it (in the order written), unless the current-state row holds it (which
    is never behind them). Oldest first."""
    found: dict[str, Series] = {}
    for row in rows:
        if row.type in SERIES_EVENTS:
            found[row.subject.name] = series_from_row(row)
    for series in current:
        if series.count > 1:
            found[series.id] = series
    return sorted(found.values(), key=lambda s: (s.first_seen, s.id))


def tell(series: Series) -> str:
    """One line: "observed running 1,440 times between T1 and T2 (open)"."""
    if series.count == 1:
        when = f"once at {series.first_seen.isoformat()}"
    else:
        when = (
            f"{series.count:,} times between {series.first_seen.isoformat()} and "
            f"{series.last_seen.isoformat()}"
        )
    return f"{series.told} {when}" + (" (open)" if series.open else "")

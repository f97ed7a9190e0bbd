"""Routine as series in the ledger: one current-state row per subject (``observation_series``),
written in place and only conditionally on the version read; the journal rows a step brings (a
cut, a close) are appended in the same transaction (see ``minds.domain.series``)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sqlalchemy import bindparam, select, update
from sqlalchemy.dialects.postgresql import insert

from minds.adapters.ledger.schema import ObservationSeriesRow, table_of
from minds.adapters.ledger.store_common import SessionOwner, insert_events
from minds.domain.ledger import EventRecord, mask_secrets
from minds.domain.series import Series, SeriesKind

__all__ = ["SeriesStore"]

_SERIES = table_of(ObservationSeriesRow)
_KEY = ("namespace", "mind", "kind", "subject")
_OPEN = (
    insert(_SERIES)
    .on_conflict_do_nothing(index_elements=[_SERIES.c[k] for k in _KEY])
    .returning(_SERIES.c.version)
)
_STATE = tuple(c.name for c in _SERIES.columns if c.name not in _KEY)
# Built once (see store_common): a routine observation is one execution of it.
_MOVE = (
    update(_SERIES)
    .where(*(_SERIES.c[k] == bindparam(f"at_{k}") for k in _KEY))
    .where(_SERIES.c.version == bindparam("replaces"))
    .values({name: bindparam(name) for name in _STATE})
    .returning(_SERIES.c.version)
)


class SeriesStore(SessionOwner):
    def series(
        self,
        namespace: str,
        mind: str,
        *,
        kind: SeriesKind | None = None,
        subject: str | None = None,
    ) -> list[Series]:
        query = (
            select(ObservationSeriesRow)
            .where(ObservationSeriesRow.namespace == namespace, ObservationSeriesRow.mind == mind)
            .order_by(ObservationSeriesRow.kind, ObservationSeriesRow.subject)
        )
        if kind is not None:
            query = query.where(ObservationSeriesRow.kind == kind.value)
        if subject is not None:
            query = query.where(ObservationSeriesRow.subject == subject)
        with self.session() as session:
            return [_series(row) for row in session.scalars(query)]

    def save_series(
        self, series: Series, *, replaces: int | None, told: Sequence[EventRecord] = ()
    ) -> bool:
        """Write ``series`` as its subject's row if the row there is at version ``replaces``
        (None: there is none), with ``told`` appended in the same transaction; False, writing
        nothing, when the row is not as read."""
        values = _values(series)
        with self.session() as session:
            if replaces is None:
                written = session.execute(_OPEN, values).scalar_one_or_none()
            else:
                where = {f"at_{k}": values[k] for k in _KEY}
                state = {name: values[name] for name in _STATE}
                written = session.execute(
                    _MOVE, {**where, **state, "replaces": replaces}
                ).scalar_one_or_none()
            if written is None:
                return False
            insert_events(session, told)
            return True


def _values(series: Series) -> dict[str, Any]:
    return {
        "namespace": series.namespace,
        "mind": series.mind,
        "kind": series.kind.value,
        "subject": series.subject,
        "id": series.id,
        "digest": series.digest,
        "told": series.told,
        "count": series.count,
        "first_seen": series.first_seen,
        "last_seen": series.last_seen,
        "last": mask_secrets(series.last),
        "opened_by": series.opened_by,
        "cut_count": series.cut_count,
        "cut_at": series.cut_at,
        "closed_at": series.closed_at,
        "version": series.version,
    }


def _series(row: ObservationSeriesRow) -> Series:
    return Series(
        id=row.id,
        namespace=row.namespace,
        mind=row.mind,
        kind=SeriesKind(row.kind),
        subject=row.subject,
        digest=row.digest,
        told=row.told,
        count=row.count,
        first_seen=row.first_seen,
        last_seen=row.last_seen,
        last=row.last,
        opened_by=row.opened_by,
        cut_count=row.cut_count,
        cut_at=row.cut_at,
        closed_at=row.closed_at,
        version=row.version,
    )

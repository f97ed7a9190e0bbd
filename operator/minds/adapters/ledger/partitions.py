"""The chained tables' monthly partitions: made ahead by the owner, counted in the default.

Since migration 0011 each chained table is partitioned by RANGE of `recorded_at` (see
docs/adr/0002-ledger-partitions.md): `<table>_legacy` holds every row from before the
migration, `<table>_YYYY_MM` one month (UTC) each, and `<table>_default` whatever no month
covers. `ensure_partitions` (run by `minds db upgrade` and `minds db maintain`, as the owner)
creates the months up to three ahead of the current one; an append never waits for it, as the
default partition catches a row no month takes, and `default_rows` counts those, so an operator
sees that maintenance stopped. Every partition gets the append-only trigger of its table: a
statement-level trigger of a partitioned table does not fire for a statement that names one of
its partitions. The application role holds no privilege on a partition: it appends through
the partitioned table, and cannot detach, drop or delete from one.

All SQL here is assembled from the code's own table names and from dates it computes, never
from input (hence the S608 waivers).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import UTC, datetime

from sqlalchemy import Connection, text

from minds.adapters.ledger.chain import CHAINED_TABLES

__all__ = [
    "MONTHS_AHEAD",
    "PARTITIONED_TABLES",
    "PARTITION_NAME",
    "Maintenance",
    "closed_partitions",
    "default_rows",
    "ensure_partitions",
    "is_partitioned",
    "month_partition",
    "not_a_partition",
]

PARTITIONED_TABLES = tuple(t.name for t in CHAINED_TABLES)
#: Months made ahead of the current one.
MONTHS_AHEAD = 3

#: A partition's name: the models know the partitioned tables, not their partitions.
PARTITION_NAME = re.compile(rf"^({'|'.join(PARTITIONED_TABLES)})_(legacy|default|\d{{4}}_\d{{2}})$")

_APPEND_ONLY = (
    "CREATE TRIGGER {partition}_append_only BEFORE UPDATE OR DELETE OR TRUNCATE ON {partition} "
    "FOR EACH STATEMENT EXECUTE FUNCTION minds_refuse_mutation()"
)
_BOUND = re.compile(r"TO \('([^']+)'\)")
_LOWER = re.compile(r"FROM \('([^']+)'\)")


@dataclass(frozen=True)
class Maintenance:
    """What one run of `ensure_partitions` did and found."""

    created: tuple[str, ...]
    default_rows: dict[str, int]

    def describe(self) -> list[str]:
        """One line for what was made, one per table whose default partition holds rows."""
        made = ", ".join(self.created) if self.created else "none (every month ahead exists)"
        lines = [f"partitions created: {made}"]
        lines += [
            f"{table}: {rows} rows in {table}_default, which no month took; the months from "
            "theirs on are not made until the owner moves them (see docs/ledger.md)"
            for table, rows in self.default_rows.items()
            if rows
        ]
        return lines


def _month_start(at: datetime) -> datetime:
    return datetime(at.year, at.month, 1, tzinfo=UTC)


def _next_month(at: datetime) -> datetime:
    return datetime(at.year + at.month // 12, at.month % 12 + 1, 1, tzinfo=UTC)


def month_partition(table: str, month: datetime) -> str:
    """The name of ``table``'s partition of the month that ``month`` falls in (UTC)."""
    return f"{table}_{month.astimezone(UTC):%Y_%m}"


def not_a_partition(obj: object, name: str | None, type_: str, *_: object) -> bool:
    """For Alembic's ``include_object``: compare the models with tables, not their partitions
    (nor a partition's indexes)."""
    table = getattr(obj, "table", obj) if type_ != "table" else obj
    return PARTITION_NAME.match(str(getattr(table, "name", name))) is None


def is_partitioned(connection: Connection, table: str = "events") -> bool:
    found = connection.execute(
        text(
            "SELECT c.relkind = 'p' FROM pg_class AS c WHERE c.relname = :t "
            "AND c.relnamespace = current_schema()::regnamespace"
        ),
        {"t": table},
    ).scalar()
    return bool(found)


def _ranges(connection: Connection, table: str) -> list[tuple[datetime | None, datetime]]:
    """(lower, upper) of ``table``'s range partitions, in order; None for MINVALUE."""
    bounds = connection.execute(
        text(
            "SELECT pg_get_expr(c.relpartbound, c.oid) FROM pg_inherits AS i "
            "JOIN pg_class AS c ON c.oid = i.inhrelid "
            "WHERE i.inhparent = format('%I.%I', current_schema(), CAST(:t AS text))::regclass"
        ),
        {"t": table},
    ).scalars()
    ranges: list[tuple[datetime | None, datetime]] = []
    for bound in bounds:
        upper = _BOUND.search(bound or "")
        if upper is None:
            continue  # the default
        lower = _LOWER.search(bound)
        ranges.append((_parse(lower.group(1)) if lower else None, _parse(upper.group(1))))
    return sorted(ranges, key=lambda r: r[1])


def closed_partitions(
    connection: Connection, table: str, before: datetime
) -> list[tuple[str, tuple[str | None, str]]]:
    """``table``'s range partitions that end on or before ``before``, oldest first, each with
    its bounds as ISO text (None: from MINVALUE)."""
    found = connection.execute(
        text(
            "SELECT c.relname, pg_get_expr(c.relpartbound, c.oid) FROM pg_inherits AS i "
            "JOIN pg_class AS c ON c.oid = i.inhrelid "
            "WHERE i.inhparent = format('%I.%I', current_schema(), CAST(:t AS text))::regclass"
        ),
        {"t": table},
    ).all()
    closed: list[tuple[datetime, str, tuple[str | None, str]]] = []
    for name, bound in found:
        upper = _BOUND.search(bound or "")
        if upper is None or _parse(upper.group(1)) > before:
            continue
        lower = _LOWER.search(bound)
        closed.append(
            (
                _parse(upper.group(1)),
                str(name),
                (
                    _parse(lower.group(1)).isoformat() if lower else None,
                    _parse(upper.group(1)).isoformat(),
                ),
            )
        )
    return [(name, bounds) for _, name, bounds in sorted(closed)]


def _parse(bound: str) -> datetime:
    return datetime.fromisoformat(bound).astimezone(UTC)


def _upper_bound(connection: Connection, table: str) -> datetime | None:
    """The highest upper bound of ``table``'s range partitions (the default has none)."""
    ranges = _ranges(connection, table)
    return ranges[-1][1] if ranges else None


def _quoted(at: datetime) -> str:
    return f"'{at.astimezone(UTC).isoformat()}'"


def _create(connection: Connection, table: str, name: str, bound: str) -> None:
    connection.execute(text(f"CREATE TABLE {name} PARTITION OF {table} {bound}"))
    connection.execute(text(_APPEND_ONLY.format(partition=name)))


def ensure_partitions(
    connection: Connection, *, now: datetime | None = None, months_ahead: int = MONTHS_AHEAD
) -> Maintenance:
    """Create, in the caller's transaction, each chained table's default partition and its
    months from where its partitions end up to ``months_ahead`` after the current one; what
    exists already is left as it is, so a second run creates nothing. A table whose default
    partition holds rows gets no month (Postgres would refuse one over them): `Maintenance`
    says so."""
    now = (now or datetime.now(UTC)).astimezone(UTC)
    until = _month_start(now)
    for _ in range(months_ahead + 1):
        until = _next_month(until)
    created: list[str] = []
    waiting = default_rows(connection)
    for table in PARTITIONED_TABLES:
        default = f"{table}_default"
        if not _exists(connection, default):
            _create(connection, table, default, "DEFAULT")
            created.append(default)
        lower = _upper_bound(connection, table) or _month_start(now)
        # A month made over rows the default holds would be refused: those wait for the owner.
        while lower < until and not waiting.get(table):
            upper = _next_month(lower)
            name = month_partition(table, lower)
            _create(
                connection, table, name, f"FOR VALUES FROM ({_quoted(lower)}) TO ({_quoted(upper)})"
            )
            created.append(name)
            lower = upper
    return Maintenance(created=tuple(created), default_rows=default_rows(connection))


def _exists(connection: Connection, name: str) -> bool:
    found = connection.execute(
        text("SELECT to_regclass(format('%I.%I', current_schema(), CAST(:n AS text)))"),
        {"n": name},
    ).scalar()
    return found is not None


def default_rows(connection: Connection) -> dict[str, int]:
    """Rows in each chained table's default partition (a row no month took): more than none
    means the months ahead were not made, i.e. `minds db maintain` has not run."""
    if not is_partitioned(connection):
        return {}
    counts: dict[str, int] = {}
    for table in PARTITIONED_TABLES:
        # The default holds exactly the rows outside every range: past the last one, or in a
        # hole between two (a month dropped, or never made). Read through the partitioned
        # table, which the reader may read, with those ranges, which prune to the default.
        outside: list[str] = []
        params: dict[str, datetime] = {}
        previous: datetime | None = None
        for n, (lower, upper) in enumerate(_ranges(connection, table)):
            if previous is not None and lower is not None and lower > previous:
                outside.append(f"(recorded_at >= :a{n} AND recorded_at < :b{n})")
                params.update({f"a{n}": previous, f"b{n}": lower})
            previous = upper
        if previous is not None:
            outside.append("recorded_at >= :last")
            params["last"] = previous
        where = " OR ".join(outside) or "true"
        counted = connection.execute(
            text(f"SELECT count(*) FROM {table} WHERE {where}"),  # noqa: S608
            params,
        )
        counts[table] = int(counted.scalar_one())
    return counts

"""Recompute every hash chain of the ledger and say where one breaks.

For each chained table and mind, in chain order, a row is intact when its `prev_hash` is the
`row_hash` of the row before it (NULL for the first) and its `row_hash` is the hash of its own
content after that (`chain.row_hash_sql`, evaluated here in a query of our own, not by any
function stored in the database). An edited row breaks its own seal; a deleted row breaks the
link of the row after it; a row slipped in breaks the link of the row after it, or its own seal.

What the chain cannot show on its own: removing a mind's newest rows, or an owner rewriting a
whole chain consistently. For that, `Verification.heads` gives each chain's newest hash: kept
somewhere the database's owner cannot write and passed back as `anchors` on the next run, each
must still be a row of its chain, or history was rewritten (`Verification.lost`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from sqlalchemy import URL, Connection, text
from sqlalchemy.pool import NullPool

from minds.adapters.ledger.chain import (
    CANONICAL_SETTINGS,
    CHAINED_TABLES,
    ChainedTable,
    row_hash_sql,
)
from minds.adapters.ledger.db import make_engine

__all__ = [
    "CHANGED",
    "UNLINKED",
    "ChainBreak",
    "ChainHead",
    "Verification",
    "parse_heads",
    "verify_chains",
    "verify_chains_on",
]


@dataclass(frozen=True)
class ChainBreak:
    """The first row of one mind's chain in one table that does not hold."""

    table: str
    namespace: str
    mind: str
    position: int
    previous: int | None
    reason: str

    def describe(self) -> str:
        after = f" (after row {self.previous})" if self.previous is not None else ""
        return (
            f"{self.table}: chain of mind {self.namespace}/{self.mind} breaks at row "
            f"{self.position}{after}: {self.reason}"
        )


@dataclass(frozen=True)
class ChainHead:
    """The newest hash of one mind's chain in one table; `line()` and `parse_heads` are the
    file format of `minds db verify --heads-file`."""

    table: str
    namespace: str
    mind: str
    row_hash: str

    def line(self) -> str:
        return f"head {self.table} {self.namespace}/{self.mind} {self.row_hash}"


def parse_heads(text_: str) -> list[ChainHead]:
    """Heads written by `ChainHead.line`; any other line is refused, naming it."""
    heads = []
    for number, line in enumerate(text_.splitlines(), start=1):
        parts = line.split()
        if not parts:
            continue
        mind = parts[2].split("/") if len(parts) == 4 else []
        if parts[0] != "head" or len(mind) != 2 or not _is_hex(parts[3]):
            raise ValueError(f"line {number} is not `head TABLE NAMESPACE/MIND HASH`: {line!r}")
        heads.append(ChainHead(parts[1], mind[0], mind[1], parts[3]))
    return heads


def _is_hex(value: str) -> bool:
    try:
        bytes.fromhex(value)
    except ValueError:
        return False
    return bool(value)


@dataclass(frozen=True)
class Verification:
    rows: int
    chains: int
    breaks: tuple[ChainBreak, ...]
    heads: tuple[ChainHead, ...]
    lost: tuple[ChainHead, ...] = ()

    @property
    def intact(self) -> bool:
        return not self.breaks and not self.lost


def _rows_sql(table: ChainedTable) -> str:
    return f"""
SELECT namespace, mind, position, previous, linked, sealed FROM (
    SELECT t.namespace, t.mind, t.{table.order} AS position,
           lag(t.{table.order}) OVER w AS previous,
           t.prev_hash IS NOT DISTINCT FROM lag(t.row_hash) OVER w AS linked,
           t.row_hash IS NOT DISTINCT FROM {row_hash_sql("t.prev_hash", "t")} AS sealed
    FROM {table.name} AS t
    WINDOW w AS (PARTITION BY t.namespace, t.mind ORDER BY t.{table.order})
) AS checked
WHERE NOT (linked AND sealed)
ORDER BY namespace, mind, position
"""  # noqa: S608


def _heads_sql(table: ChainedTable) -> str:
    return f"""
SELECT DISTINCT ON (t.namespace, t.mind) t.namespace, t.mind, encode(t.row_hash, 'hex')
FROM {table.name} AS t ORDER BY t.namespace, t.mind, t.{table.order} DESC
"""  # noqa: S608


UNLINKED = "its prev_hash is not the row_hash of the row before it (a row was removed or added)"
CHANGED = "its row_hash does not match its content (the row was changed)"


def _reason(linked: bool) -> str:
    return CHANGED if linked else UNLINKED


def _lost(connection: Connection, anchors: Sequence[ChainHead]) -> list[ChainHead]:
    """The anchors that are no longer a row of their chain."""
    tables = {t.name: t for t in CHAINED_TABLES}
    lost = []
    for anchor in anchors:
        table = tables.get(anchor.table)
        found = (
            table is not None
            and connection.execute(
                text(
                    f"SELECT 1 FROM {table.name} WHERE namespace = :ns AND mind = :mind "  # noqa: S608
                    "AND row_hash = decode(:hash, 'hex')"
                ),
                {"ns": anchor.namespace, "mind": anchor.mind, "hash": anchor.row_hash},
            ).first()
        )
        if not found:
            lost.append(anchor)
    return lost


def verify_chains_on(connection: Connection, anchors: Sequence[ChainHead] = ()) -> Verification:
    """Verify every chain, and that every anchor (a head kept from an earlier run) is still in
    its chain, in one snapshot (so appends racing the check are wholly in it or not at all)."""
    for name, value in CANONICAL_SETTINGS.items():
        connection.execute(text("SELECT set_config(:n, :v, true)"), {"n": name, "v": value})
    rows = chains = 0
    breaks: list[ChainBreak] = []
    heads: list[ChainHead] = []
    for table in CHAINED_TABLES:
        rows += int(connection.execute(text(f"SELECT count(*) FROM {table.name}")).scalar_one())  # noqa: S608
        seen: set[tuple[str, str]] = set()
        for namespace, mind, position, previous, linked, _sealed in connection.execute(
            text(_rows_sql(table))
        ):
            if (namespace, mind) in seen:
                continue  # after its first break a chain says nothing more
            seen.add((namespace, mind))
            reason = _reason(bool(linked))
            breaks.append(ChainBreak(table.name, namespace, mind, position, previous, reason))
        for namespace, mind, head in connection.execute(text(_heads_sql(table))):
            chains += 1
            heads.append(ChainHead(table.name, namespace, mind, head))
    return Verification(
        rows=rows,
        chains=chains,
        breaks=tuple(breaks),
        heads=tuple(heads),
        lost=tuple(_lost(connection, anchors)),
    )


def verify_chains(url: str | URL, anchors: Sequence[ChainHead] = ()) -> Verification:
    engine = make_engine(url, read_only=True, poolclass=NullPool, isolation_level="REPEATABLE READ")
    try:
        with engine.begin() as connection:
            return verify_chains_on(connection, anchors)
    finally:
        engine.dispose()

"""Recompute every hash chain of the ledger and say where one breaks.

For each chained table and mind, in chain order, a row is intact when its `prev_hash` is the
`row_hash` of the row before it (NULL for the first) and its `row_hash` is the hash of its own
content after that (`chain.row_hash_sql`, evaluated here in a query of our own, not by any
function stored in the database). An edited row breaks its own seal; a deleted row breaks the
link of the row after it; a row slipped in breaks the link of the row after it, or its own seal.

What the chain cannot show on its own: removing a mind's newest rows, or an owner rewriting a
whole chain consistently. `Verification.heads` gives each chain's last hash, to be kept
somewhere the database's owner cannot write and compared on the next run.
"""

from __future__ import annotations

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

__all__ = ["CHANGED", "UNLINKED", "ChainBreak", "Verification", "verify_chains", "verify_chains_on"]


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
class Verification:
    rows: int
    chains: int
    breaks: tuple[ChainBreak, ...]
    heads: tuple[tuple[str, str, str, str], ...]

    @property
    def intact(self) -> bool:
        return not self.breaks


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


def verify_chains_on(connection: Connection) -> Verification:
    """Verify every chain, reading in one REPEATABLE READ snapshot (so appends racing the
    check are either wholly in it or not at all)."""
    for name, value in CANONICAL_SETTINGS.items():
        connection.execute(text("SELECT set_config(:n, :v, true)"), {"n": name, "v": value})
    rows = chains = 0
    breaks: list[ChainBreak] = []
    heads: list[tuple[str, str, str, str]] = []
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
            heads.append((table.name, namespace, mind, head))
    return Verification(rows=rows, chains=chains, breaks=tuple(breaks), heads=tuple(heads))


def verify_chains(url: str | URL) -> Verification:
    engine = make_engine(url, poolclass=NullPool, isolation_level="REPEATABLE READ")
    try:
        with engine.begin() as connection:
            return verify_chains_on(connection)
    finally:
        engine.dispose()

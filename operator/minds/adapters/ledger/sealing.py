"""Sealing what a transaction appends: one place for every chained table.

Each insert into a chained table is built by `returning_chained` and run by `appended`, which
keeps the rows it wrote with their chain columns (order, namespace, mind, `row_hash`). When the
transaction is about to commit, `Sealer.seal` computes the HMAC of each (the key never reaches
the database) and writes them all in one INSERT into `ledger_seals`, and, for a chain whose
first sealed row this is, the chain's switch, in the same transaction: a row is committed
sealed or not at all. Without a key (the development mode docs/ledger.md describes) nothing is
sealed: the controller says so in its log and in ``minds_ledger_sealed``.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from typing import Any, Final

from sqlalchemy import Table
from sqlalchemy.dialects.postgresql import Insert, insert
from sqlalchemy.orm import Session
from sqlalchemy.sql.dml import ReturningInsert

from minds.adapters.ledger.chain import CHAINED_TABLES
from minds.adapters.ledger.schema import ChainSwitchRow, LedgerSealRow, table_of
from minds.domain.ledger_seal import SEAL_ALGORITHM, SealingKey, row_message, switch_message

__all__ = ["Sealer", "appended", "chain_columns", "returning_chained"]

#: Key in ``Session.info`` (which lives as long as the transaction): rows to seal.
_UNSEALED: Final = "minds.unsealed"
_ORDER = {t.name: t.order for t in CHAINED_TABLES}
# RETURNING makes SQLAlchemy send one multi-row INSERT for a list of rows ("insertmanyvalues"),
# where without it psycopg would run one INSERT per row.
_SEAL_TABLE, _SWITCH_TABLE = table_of(LedgerSealRow), table_of(ChainSwitchRow)
_SEALS = insert(_SEAL_TABLE).returning(_SEAL_TABLE.c.row_order)
_SWITCHES = (
    insert(_SWITCH_TABLE).on_conflict_do_nothing().returning(_SWITCH_TABLE.c.first_sealed_order)
)


def chain_columns(table: Table) -> tuple[Any, ...]:
    """What an insert into a chained table returns, after its own columns, for sealing."""
    return (table.c[_ORDER[table.name]], table.c.namespace, table.c.mind, table.c.row_hash)


def returning_chained(statement: Insert, column: Any) -> ReturningInsert[Any]:
    """``statement`` (an insert into a chained table) returning ``column`` and, after it, the
    `chain_columns` that `appended` keeps for sealing."""
    return statement.returning(column, *chain_columns(statement.table))  # type: ignore[arg-type]


def appended(session: Session, statement: ReturningInsert[Any], params: Any = None) -> list[Any]:
    """Run an insert built by `returning_chained` in ``session``; keep the rows it wrote to be
    sealed at commit, and return the first column of each."""
    rows = session.execute(statement, params).all()
    pending = session.info.setdefault(_UNSEALED, [])
    table = str(statement.table.name)
    for row in rows:
        order, namespace, mind, row_hash = row[-4:]
        pending.append((table, namespace, mind, int(order), bytes(row_hash)))
    return [row[0] for row in rows]


class Sealer:
    """Seals with the active key; ``None``: unsealed (development only)."""

    def __init__(self, key: SealingKey | None = None) -> None:
        self.key = key
        # Chains whose switch this process has seen written: no second insert is tried.
        self._switched: set[tuple[str, str, str]] = set()
        self._lock = threading.Lock()

    def seal(self, session: Session) -> list[tuple[str, str, str]]:
        """Seal every row this transaction appended (call just before it commits); returns
        the chains whose switch it wrote (or found), for ``remember`` once it committed."""
        pending: list[tuple[str, str, str, int, bytes]] = session.info.pop(_UNSEALED, [])
        if not pending or self.key is None:
            return []
        key = self.key
        session.execute(
            _SEALS,
            [
                {
                    "table_name": table,
                    "row_order": order,
                    "seal": key.seal(row_message(table, namespace, mind, order, row_hash)),
                    "seal_key": key.id,
                    "seal_alg": SEAL_ALGORITHM,
                }
                for table, namespace, mind, order, row_hash in pending
            ],
        )
        firsts: dict[tuple[str, str, str], int] = {}
        for table, namespace, mind, order, _ in pending:
            chain = (table, namespace, mind)
            firsts[chain] = min(order, firsts.get(chain, order))
        with self._lock:
            new = {chain: order for chain, order in firsts.items() if chain not in self._switched}
        if not new:
            return []
        # A chain with a switch already keeps it (ON CONFLICT DO NOTHING): the appends of one
        # chain take turns under its lock, so the first sealed row is the first to get here.
        session.execute(
            _SWITCHES,
            [
                {
                    "table_name": table,
                    "namespace": namespace,
                    "mind": mind,
                    "first_sealed_order": order,
                    "seal": key.seal(switch_message(table, namespace, mind, order)),
                    "seal_key": key.id,
                    "seal_alg": SEAL_ALGORITHM,
                }
                for (table, namespace, mind), order in new.items()
            ],
        )
        return list(new)

    def remember(self, chains: Sequence[tuple[str, str, str]]) -> None:
        with self._lock:
            self._switched.update(chains)

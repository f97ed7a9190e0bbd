"""The ledger's side of checkpoints: every chain's head, and each checkpoint as a sealed row.

A checkpoint is sealed here, where the key is (`Ledger.sealer`), and recorded in
`ledger_checkpoints`; the engine keeps the same sealed checkpoint outside the database
(`minds.engine.checkpoints`). `minds db verify --checkpoint` compares the two.
"""

from __future__ import annotations

from sqlalchemy import text
from sqlalchemy.dialects.postgresql import insert

from minds.adapters.ledger.chain import CHAINED_TABLES
from minds.adapters.ledger.schema import LedgerCheckpointRow, table_of
from minds.adapters.ledger.sealing import Sealer
from minds.adapters.ledger.store_common import SessionOwner
from minds.domain.ledger_seal import Checkpoint, CheckpointHead, SealedCheckpoint

__all__ = ["CheckpointStore"]

_RECORD = insert(table_of(LedgerCheckpointRow)).on_conflict_do_nothing()

_TIPS = " UNION ALL ".join(
    f"SELECT '{t.name}', max({t.order}) FROM {t.name}"  # noqa: S608
    for t in CHAINED_TABLES
)


def _heads_sql(order: str, table: str) -> str:
    return f"""
SELECT DISTINCT ON (t.namespace, t.mind) t.namespace, t.mind, t.{order},
       encode(t.row_hash, 'hex'), encode(s.seal, 'hex')
FROM {table} AS t
LEFT JOIN ledger_seals AS s ON s.table_name = '{table}' AND s.row_order = t.{order}
ORDER BY t.namespace, t.mind, t.{order} DESC
"""  # noqa: S608


class CheckpointStore(SessionOwner):
    sealer: Sealer

    def chain_tips(self) -> dict[str, int]:
        """The newest order of each chained table (cheap: one index look-up each): whether
        anything was appended since they were last read."""
        with self.session() as session:
            return {name: int(tip or 0) for name, tip in session.execute(text(_TIPS))}

    def chain_heads(self) -> list[CheckpointHead]:
        """The newest row of every chain, with its seal (None where it has none)."""
        heads = []
        with self.session() as session:
            for table in CHAINED_TABLES:
                for namespace, mind, order, row_hash, seal in session.execute(
                    text(_heads_sql(table.order, table.name))
                ):
                    heads.append(
                        CheckpointHead(table.name, namespace, mind, int(order), row_hash, seal)
                    )
        return heads

    def newest_checkpoint(self, name: str) -> int:
        """The highest sequence recorded for the checkpoint object ``name`` (0: none)."""
        with self.session() as session:
            newest = session.execute(
                text("SELECT max(sequence) FROM ledger_checkpoints WHERE name = :name"),
                {"name": name},
            ).scalar()
        return int(newest or 0)

    def seal_checkpoint(self, checkpoint: Checkpoint) -> SealedCheckpoint | None:
        """The checkpoint sealed with the active key; None without one (unsealed mode)."""
        key = self.sealer.key
        return None if key is None else SealedCheckpoint.sealed(checkpoint, key)

    def record_checkpoint(self, sealed: SealedCheckpoint) -> None:
        with self.session() as session:
            session.execute(
                _RECORD,
                {
                    "name": sealed.checkpoint.name,
                    "sequence": sealed.checkpoint.sequence,
                    "document": sealed.checkpoint.document(),
                    "seal": bytes.fromhex(sealed.seal),
                    "seal_key": sealed.key,
                    "seal_alg": sealed.alg,
                },
            )

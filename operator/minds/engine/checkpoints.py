"""Keep the ledger's chain heads outside the database, sealed, as they move.

Every ``interval`` (the controller's work queue calls `LedgerCheckpoints.run`), if anything was
appended since the last look, every chain's head (table, namespace, mind, order, row_hash,
seal) is written, with a sequence that only grows and sealed with the ledger's key, to an
object the database's owner cannot write (a ConfigMap only the controller may update), and then
recorded as a sealed ledger row. In that order: a failure between the two leaves the object
ahead of the database, never behind it, and `minds db verify --checkpoint` takes a database
that recorded a newer checkpoint than the object holds for an old checkpoint put back.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Protocol

from minds.domain.ledger_seal import Checkpoint, CheckpointHead, SealedCheckpoint

__all__ = ["CheckpointLedger", "CheckpointObject", "LedgerCheckpoints"]

log = logging.getLogger(__name__)


class CheckpointLedger(Protocol):
    def chain_tips(self) -> dict[str, int]: ...

    def chain_heads(self) -> list[CheckpointHead]: ...

    def newest_checkpoint(self, name: str) -> int: ...

    def seal_checkpoint(self, checkpoint: Checkpoint) -> SealedCheckpoint | None: ...

    def record_checkpoint(self, sealed: SealedCheckpoint) -> None: ...


class CheckpointObject(Protocol):
    """The object outside the database: what it holds and its version, and a write
    conditional on that version (None: create it)."""

    name: str

    def read(self) -> tuple[SealedCheckpoint | None, str | None]: ...

    def write(self, checkpoint: SealedCheckpoint, version: str | None) -> None: ...


@dataclass
class LedgerCheckpoints:
    ledger: CheckpointLedger
    store: CheckpointObject
    clock: Callable[[], datetime]
    #: The tables' newest orders at the last checkpoint written or found current.
    _tips: dict[str, int] | None = field(default=None, init=False)

    def run(self) -> Checkpoint | None:
        """Write a checkpoint if the heads moved since the last; the one written, if any."""
        tips = self.ledger.chain_tips()
        if tips == self._tips:
            return None
        heads = self.ledger.chain_heads()
        stored, version = self.store.read()
        if stored is not None and stored.checkpoint.same_heads(heads):
            self._tips = tips
            return None
        sequence = 1 + max(
            stored.checkpoint.sequence if stored is not None else 0,
            self.ledger.newest_checkpoint(self.store.name),
        )
        checkpoint = Checkpoint(
            name=self.store.name,
            sequence=sequence,
            written_at=self.clock().isoformat(),
            heads=tuple(heads),
        )
        sealed = self.ledger.seal_checkpoint(checkpoint)
        if sealed is None:
            log.warning("ledger checkpoint skipped: the ledger is unsealed (no key)")
            return None
        self.store.write(sealed, version)
        self.ledger.record_checkpoint(sealed)
        self._tips = tips
        log.info("ledger checkpoint %s of %d chains", sequence, len(heads))
        return checkpoint

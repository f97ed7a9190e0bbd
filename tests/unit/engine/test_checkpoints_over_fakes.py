"""The checkpoint's schedule over fakes: written only when a chain moved, numbered past both
the object's and the database's newest, the object first and the ledger row after, and
nothing without a key."""

from __future__ import annotations

from datetime import UTC, datetime

from minds.domain.ledger_seal import Checkpoint, CheckpointHead, SealedCheckpoint, SealingKey
from minds.engine.checkpoints import LedgerCheckpoints

KEY = SealingKey("k1", b"k" * 32)
T0 = datetime(2026, 12, 10, 12, 0, tzinfo=UTC)


class FakeLedger:
    def __init__(self, key: SealingKey | None = KEY) -> None:
        self.key = key
        self.heads = [CheckpointHead("events", "ops", "keeper", 1, "aa", "bb")]
        self.recorded: list[SealedCheckpoint] = []
        self.newest = 0
        self.log: list[str] = []

    def chain_tips(self) -> dict[str, int]:
        return {"events": max(h.order for h in self.heads)}

    def chain_heads(self) -> list[CheckpointHead]:
        return list(self.heads)

    def newest_checkpoint(self, name: str) -> int:
        return self.newest

    def seal_checkpoint(self, checkpoint: Checkpoint) -> SealedCheckpoint | None:
        return None if self.key is None else SealedCheckpoint.sealed(checkpoint, self.key)

    def record_checkpoint(self, sealed: SealedCheckpoint) -> None:
        self.log.append("ledger")
        self.recorded.append(sealed)
        self.newest = sealed.checkpoint.sequence


class FakeObject:
    name = "minds-ledger-checkpoint"

    def __init__(self, log: list[str]) -> None:
        self.held: SealedCheckpoint | None = None
        self.log = log

    def read(self) -> tuple[SealedCheckpoint | None, str | None]:
        return self.held, None if self.held is None else "7"

    def write(self, checkpoint: SealedCheckpoint, version: str | None) -> None:
        self.log.append("object")
        self.held = checkpoint


def test_a_checkpoint_is_written_when_a_chain_moved_and_only_then() -> None:
    ledger = FakeLedger()
    kept = FakeObject(ledger.log)
    checkpoints = LedgerCheckpoints(ledger, kept, lambda: T0)
    first = checkpoints.run()
    assert first is not None
    assert first.sequence == 1
    assert ledger.log == ["object", "ledger"]  # the object is never behind the database
    assert checkpoints.run() is None
    ledger.heads = [CheckpointHead("events", "ops", "keeper", 2, "cc", "dd")]
    second = checkpoints.run()
    assert second is not None
    assert second.sequence == 2
    assert kept.held is not None
    assert kept.held.holds(KEY)


def test_the_sequence_passes_the_databases_newest_and_the_objects() -> None:
    ledger = FakeLedger()
    ledger.newest = 41  # an object put back, older than what the database recorded
    checkpoint = LedgerCheckpoints(ledger, FakeObject(ledger.log), lambda: T0).run()
    assert checkpoint is not None
    assert checkpoint.sequence == 42


def test_a_restarted_controller_writes_nothing_when_the_object_is_current() -> None:
    ledger = FakeLedger()
    kept = FakeObject(ledger.log)
    LedgerCheckpoints(ledger, kept, lambda: T0).run()
    assert LedgerCheckpoints(ledger, kept, lambda: T0).run() is None
    assert len(ledger.recorded) == 1


def test_nothing_is_written_without_a_key() -> None:
    ledger = FakeLedger(key=None)
    kept = FakeObject(ledger.log)
    assert LedgerCheckpoints(ledger, kept, lambda: T0).run() is None
    assert kept.held is None
    assert ledger.recorded == []

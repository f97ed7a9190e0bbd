"""The keyed seal of the ledger: HMAC-SHA256 under a key the database never holds.

The database's own chain (`row_hash = sha256(prev_hash || content)`) binds a row's content,
its id, its `recorded_at` and its predecessor, but anyone who can write the tables can edit a
row and recompute every hash after it. A seal cannot be recomputed without the key:

    seal = HMAC-SHA256(key, message("row", table, namespace, mind, order, row_hash))

`message` is domain-separated: a fixed prefix, what is sealed ("row", "switch",
"checkpoint"), then each field length-prefixed, so no two different tuples give the same
bytes. The controller seals each row it appends in the same transaction; the first sealed row
of a chain records the chain's switch (sealed too), and the checkpoints the controller keeps
outside the database carry a seal of their own. Pure: the key is handed in.
"""

from __future__ import annotations

import hashlib
import hmac
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

__all__ = [
    "MIN_KEY_BYTES",
    "SEAL_ALGORITHM",
    "Checkpoint",
    "CheckpointHead",
    "SealedCheckpoint",
    "SealingKey",
    "checkpoint_from_document",
    "row_message",
    "switch_message",
]

#: The only algorithm: the name stored beside each seal, so a later one can be told apart.
SEAL_ALGORITHM: Final = "hmac-sha256"
#: A shorter key is refused: HMAC-SHA256's strength is capped by the key's length.
MIN_KEY_BYTES: Final = 32
_PREFIX: Final = b"minds-ledger-seal/v1"


def message(purpose: str, *fields: str | bytes | int) -> bytes:
    """The bytes a seal is computed over: the prefix, the purpose, each field prefixed with
    its length (8 bytes, big-endian); ints as decimal text."""
    parts = [_PREFIX, purpose.encode()]
    for field in fields:
        raw = field if isinstance(field, bytes) else str(field).encode()
        parts.append(raw)
    return b"".join(len(part).to_bytes(8, "big") + part for part in parts)


def row_message(table: str, namespace: str, mind: str, order: int, row_hash: bytes) -> bytes:
    return message("row", table, namespace, mind, order, row_hash)


def switch_message(table: str, namespace: str, mind: str, first_sealed_order: int) -> bytes:
    return message("switch", table, namespace, mind, first_sealed_order)


def cut_message(
    table: str, namespace: str, mind: str, last_order: int, head: bytes, manifest: str
) -> bytes:
    """A cut of one chain: its rows up to ``last_order`` (whose hash is ``head``) left the
    database into the archive whose manifest has the sha256 ``manifest``."""
    return message("cut", table, namespace, mind, last_order, head, manifest)


def manifest_message(document: bytes) -> bytes:
    return message("archive-manifest", document)


@dataclass(frozen=True)
class SealingKey:
    """One key: its id (the name it is stored under) and its bytes."""

    id: str
    secret: bytes

    def __post_init__(self) -> None:
        if len(self.secret) < MIN_KEY_BYTES:
            raise ValueError(
                f"ledger key {self.id!r} has {len(self.secret)} bytes; at least "
                f"{MIN_KEY_BYTES} are needed"
            )

    def __repr__(self) -> str:  # never the bytes
        return f"SealingKey({self.id!r})"

    def seal(self, data: bytes) -> bytes:
        return hmac.new(self.secret, data, hashlib.sha256).digest()

    def holds(self, data: bytes, seal: bytes) -> bool:
        return hmac.compare_digest(self.seal(data), seal)


@dataclass(frozen=True)
class CheckpointHead:
    """The newest row of one chain at a checkpoint."""

    table: str
    namespace: str
    mind: str
    order: int
    row_hash: str  # hex
    seal: str | None  # hex; None for a chain not sealed yet

    @property
    def chain(self) -> tuple[str, str, str]:
        return (self.table, self.namespace, self.mind)

    def as_json(self) -> dict[str, Any]:
        return {
            "table": self.table,
            "namespace": self.namespace,
            "mind": self.mind,
            "order": self.order,
            "row_hash": self.row_hash,
            "seal": self.seal,
        }


@dataclass(frozen=True)
class Checkpoint:
    """Every chain's head at one moment, numbered: ``sequence`` only grows, per ``name`` (the
    object it is kept in). ``document`` is the canonical text that is sealed and kept."""

    name: str
    sequence: int
    written_at: str  # ISO 8601, UTC
    heads: tuple[CheckpointHead, ...]

    def document(self) -> str:
        body = {
            "name": self.name,
            "sequence": self.sequence,
            "written_at": self.written_at,
            "heads": [head.as_json() for head in sorted(self.heads, key=_head_key)],
        }
        return json.dumps(body, sort_keys=True, separators=(",", ":"))

    def message(self) -> bytes:
        return message("checkpoint", self.document())

    def same_heads(self, heads: Sequence[CheckpointHead]) -> bool:
        return sorted(self.heads, key=_head_key) == sorted(heads, key=_head_key)


def _head_key(head: CheckpointHead) -> tuple[str, str, str]:
    return head.chain


def checkpoint_from_document(document: str) -> Checkpoint:
    """The checkpoint a ``Checkpoint.document()`` text holds; ValueError if it is not one."""
    try:
        body = json.loads(document)
        heads = tuple(
            CheckpointHead(
                table=str(h["table"]),
                namespace=str(h["namespace"]),
                mind=str(h["mind"]),
                order=int(h["order"]),
                row_hash=str(h["row_hash"]),
                seal=None if h.get("seal") is None else str(h["seal"]),
            )
            for h in body["heads"]
        )
        return Checkpoint(
            name=str(body["name"]),
            sequence=int(body["sequence"]),
            written_at=str(body["written_at"]),
            heads=heads,
        )
    except (ValueError, KeyError, TypeError) as exc:
        raise ValueError(f"not a ledger checkpoint: {exc}") from exc


@dataclass(frozen=True)
class SealedCheckpoint:
    """A checkpoint with its seal: what the controller keeps in its object outside the
    database (``data()``, a ConfigMap's data) and records as a ledger row."""

    checkpoint: Checkpoint
    seal: str  # hex
    key: str
    alg: str = SEAL_ALGORITHM

    @classmethod
    def sealed(cls, checkpoint: Checkpoint, key: SealingKey) -> SealedCheckpoint:
        return cls(checkpoint, key.seal(checkpoint.message()).hex(), key.id)

    def data(self) -> dict[str, str]:
        return {
            "checkpoint": self.checkpoint.document(),
            "seal": self.seal,
            "key": self.key,
            "alg": self.alg,
        }

    @classmethod
    def from_data(cls, data: Mapping[str, Any]) -> SealedCheckpoint:
        """ValueError unless ``data`` is what ``data()`` gives."""
        try:
            return cls(
                checkpoint_from_document(str(data["checkpoint"])),
                seal=str(data["seal"]),
                key=str(data["key"]),
                alg=str(data["alg"]),
            )
        except KeyError as exc:
            raise ValueError(f"not a sealed ledger checkpoint: no {exc}") from exc

    def holds(self, key: SealingKey) -> bool:
        try:
            seal = bytes.fromhex(self.seal)
        except ValueError:
            return False
        return self.alg == SEAL_ALGORITHM and key.holds(self.checkpoint.message(), seal)

"""The ledger's sealing keys, read from a directory the database never sees.

In a cluster the directory is a Kubernetes Secret mounted into the controller's Pod: one file
per key, named by the key's id, holding the key's bytes (at least 32), raw or base64 (a file
whose whole content, whitespace trimmed, is base64 of at least 32 bytes is decoded). Names
starting with a dot are skipped: a mounted Secret keeps its bookkeeping (``..data``) there.

One key is *active*: it seals what the controller appends from now on. The others stay to
verify what they sealed. Rotation is adding a file and naming it active.
"""

from __future__ import annotations

import base64
import binascii
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Final

from minds.domain.ledger_seal import MIN_KEY_BYTES, SealingKey

__all__ = [
    "ACTIVE_KEY_ENV",
    "KEYS_DIR_ENV",
    "LedgerKeyError",
    "LedgerKeys",
    "keys_from_env",
    "load_keys",
]

KEYS_DIR_ENV: Final = "MINDS_LEDGER_KEYS_DIR"
ACTIVE_KEY_ENV: Final = "MINDS_LEDGER_ACTIVE_KEY"
_KEY_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,62}$")


class LedgerKeyError(ValueError):
    """The keys cannot be used as configured; the message says what to fix."""


@dataclass(frozen=True)
class LedgerKeys:
    """Every key by id, and the active one (None: verifying only)."""

    keys: dict[str, SealingKey] = field(default_factory=dict)
    active: SealingKey | None = None

    def get(self, key_id: str) -> SealingKey | None:
        return self.keys.get(key_id)

    def __bool__(self) -> bool:
        return bool(self.keys)


def _decoded(raw: bytes) -> bytes:
    text = raw.strip()
    try:
        decoded = base64.b64decode(text, validate=True)
    except (binascii.Error, ValueError):
        return raw
    return decoded if len(decoded) >= MIN_KEY_BYTES else raw


def load_keys(directory: str | Path, active: str | None = None) -> LedgerKeys:
    """The keys in ``directory``; ``active`` names the one that seals (None: only verify).

    Raises LedgerKeyError naming the problem: a missing directory, no key, a key too short, an
    active id with no file."""
    path = Path(directory)
    if not path.is_dir():
        raise LedgerKeyError(f"{KEYS_DIR_ENV}={path}: not a directory")
    keys: dict[str, SealingKey] = {}
    for entry in sorted(path.iterdir()):
        if entry.name.startswith(".") or not entry.is_file():
            continue
        if not _KEY_ID.match(entry.name):
            raise LedgerKeyError(f"{entry}: a key file is named by its id (letters, digits, . _ -)")
        try:
            keys[entry.name] = SealingKey(entry.name, _decoded(entry.read_bytes()))
        except ValueError as exc:
            raise LedgerKeyError(f"{entry}: {exc}") from exc
    if not keys:
        raise LedgerKeyError(f"{path}: holds no key file")
    chosen = None
    if active:
        chosen = keys.get(active)
        if chosen is None:
            raise LedgerKeyError(
                f"{ACTIVE_KEY_ENV}={active}: no such key in {path} (it has {', '.join(keys)})"
            )
    return LedgerKeys(keys=keys, active=chosen)


def keys_from_env() -> LedgerKeys | None:
    """The controller's keys: None when ``MINDS_LEDGER_KEYS_DIR`` is unset (unsealed mode).
    With a directory, the active key must be named unless the directory holds exactly one."""
    directory = os.environ.get(KEYS_DIR_ENV, "").strip()
    if not directory:
        return None
    active = os.environ.get(ACTIVE_KEY_ENV, "").strip()
    keys = load_keys(directory, active or None)
    if keys.active is None:
        if len(keys.keys) != 1:
            raise LedgerKeyError(
                f"{ACTIVE_KEY_ENV} is not set and {directory} holds {len(keys.keys)} keys: "
                "name the one that seals"
            )
        only = next(iter(keys.keys.values()))
        keys = LedgerKeys(keys=keys.keys, active=only)
    return keys

"""The keyed seal's pure rules and the keys' directory: what is sealed is domain-separated, a
key is at least 32 bytes, a mounted Secret's files are read raw or base64, the active key is
named (or the only one), and a checkpoint's document and seal go to and from its object."""

from __future__ import annotations

import base64
from pathlib import Path

import pytest

from minds.adapters.ledger.keys import LedgerKeyError, keys_from_env, load_keys
from minds.controller.settings import ConfigError, ControllerConfig, checkpoint_interval
from minds.domain.ledger_seal import (
    Checkpoint,
    CheckpointHead,
    SealedCheckpoint,
    SealingKey,
    message,
    row_message,
    switch_message,
)

KEY = SealingKey("k1", bytes(range(32)))
HEAD = CheckpointHead("events", "ops", "keeper", 4, "ab" * 32, "cd" * 32)


def test_the_sealed_bytes_are_domain_separated_and_unambiguous() -> None:
    assert row_message("events", "ops", "keeper", 1, b"h") != switch_message(
        "events", "ops", "keeper", 1
    )
    # A field's bytes never run into the next one's.
    assert message("row", "ab", "c") != message("row", "a", "bc")
    assert row_message("events", "ops", "keeper", 12, b"h") != row_message(
        "events", "ops", "keeper", 1, b"2h"
    )


def test_a_seal_holds_only_for_its_bytes_and_key() -> None:
    data = row_message("events", "ops", "keeper", 1, b"\x01" * 32)
    seal = KEY.seal(data)
    assert KEY.holds(data, seal)
    assert not KEY.holds(row_message("events", "ops", "keeper", 2, b"\x01" * 32), seal)
    assert not SealingKey("k2", bytes(32)).holds(data, seal)
    assert "\\x00" not in repr(SealingKey("k2", bytes(32)))  # never the bytes


def test_a_short_key_is_refused() -> None:
    with pytest.raises(ValueError, match="has 31 bytes; at least 32"):
        SealingKey("k1", bytes(31))


def test_the_keys_directory_reads_raw_and_base64_and_skips_the_secrets_bookkeeping(
    tmp_path: Path,
) -> None:
    (tmp_path / "raw").write_bytes(b"r" * 32)
    (tmp_path / "b64").write_bytes(base64.b64encode(b"b" * 48) + b"\n")
    (tmp_path / "..data").mkdir()
    (tmp_path / ".hidden").write_bytes(b"x")
    keys = load_keys(tmp_path, "b64")
    assert sorted(keys.keys) == ["b64", "raw"]
    assert keys.keys["raw"].secret == b"r" * 32
    assert keys.keys["b64"].secret == b"b" * 48
    assert keys.active == keys.keys["b64"]


@pytest.mark.parametrize(
    ("files", "active", "error"),
    [
        ({}, None, "holds no key file"),
        ({"k1": b"short"}, None, "has 5 bytes; at least 32"),
        ({"k1": b"k" * 32}, "k9", "MINDS_LEDGER_ACTIVE_KEY=k9: no such key"),
    ],
)
def test_unusable_keys_are_refused_naming_the_problem(
    tmp_path: Path, files: dict[str, bytes], active: str | None, error: str
) -> None:
    for name, content in files.items():
        (tmp_path / name).write_bytes(content)
    with pytest.raises(LedgerKeyError, match=error):
        load_keys(tmp_path, active)


def test_the_controller_seals_with_the_named_key_or_the_only_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("MINDS_LEDGER_KEYS_DIR", raising=False)
    assert keys_from_env() is None  # unsealed: development only
    (tmp_path / "k1").write_bytes(b"1" * 32)
    monkeypatch.setenv("MINDS_LEDGER_KEYS_DIR", str(tmp_path))
    keys = keys_from_env()
    assert keys is not None
    assert keys.active is not None
    assert keys.active.id == "k1"
    (tmp_path / "k2").write_bytes(b"2" * 32)
    with pytest.raises(LedgerKeyError, match="holds 2 keys: name the one that seals"):
        keys_from_env()
    monkeypatch.setenv("MINDS_LEDGER_ACTIVE_KEY", "k2")
    rotated = keys_from_env()
    assert rotated is not None
    assert rotated.active is not None
    assert rotated.active.id == "k2"


def test_a_controller_with_a_broken_key_does_not_start(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MINDS_DATABASE_URL", "postgresql://minds@127.0.0.1/minds")
    monkeypatch.setenv("MINDS_LEDGER_KEYS_DIR", str(tmp_path / "missing"))
    with pytest.raises(ConfigError, match="not a directory"):
        ControllerConfig.from_env()


def test_the_checkpoint_interval_is_whole_positive_seconds() -> None:
    assert checkpoint_interval("").total_seconds() == 300
    assert checkpoint_interval("60").total_seconds() == 60
    for bad in ("0", "-5", "1.5", "soon"):
        with pytest.raises(ConfigError, match="MINDS_LEDGER_CHECKPOINT_SECONDS"):
            checkpoint_interval(bad)


def test_a_checkpoint_goes_to_its_object_and_back_and_holds_only_unchanged() -> None:
    checkpoint = Checkpoint("minds-ledger-checkpoint", 3, "2026-12-10T12:00:00+00:00", (HEAD,))
    sealed = SealedCheckpoint.sealed(checkpoint, KEY)
    back = SealedCheckpoint.from_data(sealed.data())
    assert back == sealed
    assert back.holds(KEY)
    forged = SealedCheckpoint(
        Checkpoint(checkpoint.name, 9, checkpoint.written_at, checkpoint.heads), sealed.seal, "k1"
    )
    assert not forged.holds(KEY)
    with pytest.raises(ValueError, match="no 'seal'"):
        SealedCheckpoint.from_data({"checkpoint": checkpoint.document()})

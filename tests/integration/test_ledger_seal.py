"""The keyed seal against a real Postgres with the real roles: what the controller appends is
sealed under a key the database never holds, so an owner who edits a row and recomputes the
plain chain with the database's own rule is found by `minds db verify --keys-dir`; an
unsealed row after a chain's switch is refused; the application role cannot touch a seal;
rotation keeps old rows verifiable; and a checkpoint kept outside the database finds a
truncated tail and an old checkpoint put back."""

from __future__ import annotations

import base64
import json
import subprocess
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import psycopg
import pytest

from minds.adapters.ledger import APPEND_ONLY_SQLSTATE, Ledger
from minds.adapters.ledger.chain import CANONICAL_SETTINGS, row_hash_sql
from minds.adapters.ledger.schema import SEAL_TABLES
from minds.domain.ledger_seal import SealedCheckpoint, SealingKey
from minds.engine.checkpoints import LedgerCheckpoints
from tests.fixtures.postgres import LedgerDatabase, connect
from tests.integration.test_ledger_chain import event, problems
from tests.integration.test_ledger_chain import verify as verify_as_app

pytestmark = pytest.mark.integration

T0 = datetime(2026, 12, 10, 12, 0, tzinfo=UTC)  # the checkpoints' clock
INSUFFICIENT_PRIVILEGE = "42501"
K1 = SealingKey("k1", b"1" * 32)
K2 = SealingKey("k2", b"2" * 40)


@pytest.fixture
def keys_dir(tmp_path: Path) -> Path:
    """Both keys as a mounted Secret holds them: k1 raw, k2 base64."""
    directory = tmp_path / "keys"
    directory.mkdir()
    (directory / "k1").write_bytes(K1.secret)
    (directory / "k2").write_bytes(base64.b64encode(K2.secret) + b"\n")
    (directory / "..data").mkdir()  # a mounted Secret's bookkeeping: skipped
    return directory


@pytest.fixture
def sealed(ledger_database: LedgerDatabase) -> Iterator[Ledger]:
    with Ledger.from_url(ledger_database.app_url, key=K1) as ledger:
        yield ledger


@pytest.fixture
def unsealed(ledger_database: LedgerDatabase) -> Iterator[Ledger]:
    with Ledger.from_url(ledger_database.app_url) as ledger:
        yield ledger


def verify(database: LedgerDatabase, *args: str) -> subprocess.CompletedProcess[str]:
    return verify_as_app(database.app_url, *args)


def as_owner(database: LedgerDatabase, *statements: str) -> None:
    """As the owner role (no superuser): it owns the tables, so it may turn their append-only
    trigger off, in its own transaction, and compute hashes as the database does."""
    with connect(database.owner_url) as conn:
        for name, value in CANONICAL_SETTINGS.items():
            conn.execute("SELECT set_config(%s, %s, true)", (name, value))
        for statement in statements:
            conn.execute(statement)  # type: ignore[arg-type]


def rechain(table: str, *rows: int) -> list[str]:
    """Recompute the plain chain of ``rows`` (in order) with the chain's own rule."""
    statements = []
    for row in rows:
        statements += [
            f"UPDATE {table} AS t SET prev_hash = (SELECT p.row_hash FROM {table} AS p "  # noqa: S608
            f"WHERE p.mind = t.mind AND p.id < t.id ORDER BY p.id DESC LIMIT 1) WHERE id = {row}",
            f"UPDATE {table} AS t SET row_hash = {row_hash_sql('t.prev_hash', 't')} "  # noqa: S608
            f"WHERE id = {row}",
        ]
    return statements


def test_sealed_appends_verify_and_say_so(
    sealed: Ledger, ledger_database: LedgerDatabase, keys_dir: Path
) -> None:
    sealed.append_events([event("a"), event("b")])
    sealed.append_event(event("c"))
    sealed.append_event(event("w", mind="warden"))
    proc = verify(ledger_database, "--keys-dir", str(keys_dir))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert proc.stdout.splitlines() == [
        "chain events ops/keeper: 3 rows, 3 sealed, sealed from row 1",
        "chain events ops/warden: 1 rows, 1 sealed, sealed from row 4",
        "ledger intact: 4 rows in 2 chains; 4 sealed rows, every seal checked",
    ]
    plain = verify(ledger_database)
    assert plain.returncode == 0, plain.stdout
    assert "4 sealed rows, seals not checked (no --keys-dir)" in plain.stdout


def test_an_owner_who_edits_a_row_and_rechains_is_found_by_the_seal(
    sealed: Ledger, ledger_database: LedgerDatabase, keys_dir: Path
) -> None:
    for key in ("a", "b", "c"):
        sealed.append_event(event(key))
    as_owner(
        ledger_database,
        "ALTER TABLE events DISABLE TRIGGER events_append_only",
        'UPDATE events SET payload = \'{"key": "other"}\' WHERE id = 2',
        *rechain("events", 2, 3),
        "ALTER TABLE events ENABLE TRIGGER events_append_only",
    )
    assert verify(ledger_database).returncode == 0  # the plain chain cannot tell
    proc = verify(ledger_database, "--keys-dir", str(keys_dir))
    assert proc.returncode == 1
    assert problems(proc) == [
        "BROKEN events: chain of mind ops/keeper breaks at row 2 (after row 1): its seal does "
        "not match (the row, its position or its hash was changed, or someone without the key "
        "sealed it)"
    ]


def test_rows_before_the_switch_stay_verifiable_and_an_unsealed_row_after_it_is_refused(
    sealed: Ledger, unsealed: Ledger, ledger_database: LedgerDatabase, keys_dir: Path
) -> None:
    unsealed.append_event(event("old-1"))
    unsealed.append_event(event("old-2"))
    sealed.append_event(event("new-3"))
    proc = verify(ledger_database, "--keys-dir", str(keys_dir))
    assert proc.returncode == 0, proc.stdout
    assert "chain events ops/keeper: 3 rows, 1 sealed, sealed from row 3" in proc.stdout

    unsealed.append_event(event("late-4"))  # a controller without the key, after the switch
    for args in ((), ("--keys-dir", str(keys_dir))):
        refused = verify(ledger_database, *args)
        assert refused.returncode == 1
        assert problems(refused) == [
            "BROKEN events: chain of mind ops/keeper breaks at row 4 (after row 3): it is not "
            "sealed, but its chain switched to sealing at row 3"
        ]


def test_a_removed_switch_is_found(
    sealed: Ledger, ledger_database: LedgerDatabase, keys_dir: Path
) -> None:
    sealed.append_event(event("a"))
    as_owner(
        ledger_database,
        "ALTER TABLE chain_switches DISABLE TRIGGER chain_switches_append_only",
        "DELETE FROM chain_switches",
    )
    proc = verify(ledger_database, "--keys-dir", str(keys_dir))
    assert proc.returncode == 1
    assert "its chain has no recorded switch (the switch was removed)" in proc.stdout


def test_a_moved_switch_is_found(
    sealed: Ledger, unsealed: Ledger, ledger_database: LedgerDatabase, keys_dir: Path
) -> None:
    unsealed.append_event(event("old-1"))
    sealed.append_event(event("new-2"))
    # Moving the switch past a row and stripping that row's seal would make it look old.
    as_owner(
        ledger_database,
        "ALTER TABLE chain_switches DISABLE TRIGGER chain_switches_append_only",
        "ALTER TABLE ledger_seals DISABLE TRIGGER ledger_seals_append_only",
        "UPDATE chain_switches SET first_sealed_order = 3",
        "DELETE FROM ledger_seals WHERE row_order = 2",
    )
    sealed.append_event(event("new-3"))
    proc = verify(ledger_database, "--keys-dir", str(keys_dir))
    assert proc.returncode == 1
    assert "breaks at row 3 (after row 2): its chain's switch does not match its seal" in (
        proc.stdout
    )


def test_the_application_role_cannot_change_a_seal_or_a_row(
    sealed: Ledger, unsealed: Ledger, ledger_database: LedgerDatabase
) -> None:
    sealed.append_event(event("a"))
    unsealed.append_event(event("b", mind="warden"))  # a row without a seal
    with connect(ledger_database.app_url, autocommit=True) as conn:
        for statement in (
            "UPDATE ledger_seals SET seal = '\\x00'",
            "UPDATE ledger_seals SET seal_key = 'k2'",
            "UPDATE chain_switches SET first_sealed_order = 9",
            "DELETE FROM ledger_seals",
            "UPDATE events SET payload = '{}' WHERE mind = 'warden'",
            "UPDATE events SET payload = '{}' WHERE mind = 'keeper'",
        ):
            with pytest.raises(psycopg.Error) as refused:
                conn.execute(statement)  # type: ignore[arg-type]
            assert refused.value.sqlstate == INSUFFICIENT_PRIVILEGE, statement
        # Nor can it seal a row twice: the first seal stands.
        with pytest.raises(psycopg.errors.UniqueViolation):
            conn.execute(
                "INSERT INTO ledger_seals (table_name, row_order, seal, seal_key, seal_alg) "
                "VALUES ('events', 1, '\\x00', 'k1', 'hmac-sha256')"
            )


@pytest.mark.parametrize("table", SEAL_TABLES)
@pytest.mark.parametrize(
    "statement", ["UPDATE {t} SET seal = seal", "DELETE FROM {t}", "TRUNCATE {t}"]
)
def test_the_seals_are_append_only_for_the_owner_too(
    sealed: Ledger, ledger_database: LedgerDatabase, table: str, statement: str
) -> None:
    sealed.append_event(event("a"))
    with connect(ledger_database.owner_url) as conn, pytest.raises(psycopg.Error) as refused:
        conn.execute(statement.format(t=table))  # type: ignore[arg-type]
    assert refused.value.sqlstate == APPEND_ONLY_SQLSTATE


def test_rotation_keeps_old_rows_verifiable_with_the_old_key(
    ledger_database: LedgerDatabase, keys_dir: Path, tmp_path: Path
) -> None:
    with Ledger.from_url(ledger_database.app_url, key=K1) as first:
        first.append_event(event("a"))
        first.append_event(event("b"))
    with Ledger.from_url(ledger_database.app_url, key=K2) as second:
        second.append_event(event("c"))
    both = verify(ledger_database, "--keys-dir", str(keys_dir))
    assert both.returncode == 0, both.stdout
    assert "3 sealed rows, every seal checked" in both.stdout

    only_k2 = tmp_path / "only-k2"
    only_k2.mkdir()
    (only_k2 / "k2").write_bytes(K2.secret)
    proc = verify(ledger_database, "--keys-dir", str(only_k2))
    assert proc.returncode == 1
    assert problems(proc) == [
        "UNVERIFIED events: 2 rows of mind ops/keeper are sealed under key 'k1', which the "
        "keys given do not hold"
    ]


class FileObject:
    """The checkpoint object as a file: what `kubectl get configmap -o jsonpath={.data}`
    exports (the e2e test keeps it in a real ConfigMap)."""

    def __init__(self, path: Path, name: str = "minds-ledger-checkpoint") -> None:
        self.path = path
        self.name = name

    def read(self) -> tuple[SealedCheckpoint | None, str | None]:
        if not self.path.exists():
            return None, None
        return SealedCheckpoint.from_data(json.loads(self.path.read_text())), "1"

    def write(self, checkpoint: SealedCheckpoint, version: str | None) -> None:
        self.path.write_text(json.dumps(checkpoint.data()))


def test_a_checkpoint_finds_a_truncated_tail_and_an_old_checkpoint_put_back(
    sealed: Ledger, ledger_database: LedgerDatabase, keys_dir: Path, tmp_path: Path
) -> None:
    kept = FileObject(tmp_path / "checkpoint.json")
    checkpoints = LedgerCheckpoints(sealed, kept, lambda: T0)
    sealed.append_event(event("a"))
    sealed.append_event(event("b"))
    first = checkpoints.run()
    assert first is not None
    assert first.sequence == 1
    assert checkpoints.run() is None  # nothing moved: nothing written
    old = kept.path.read_text()
    sealed.append_event(event("c"))
    second = checkpoints.run()
    assert second is not None
    assert second.sequence == 2
    ok = verify(ledger_database, "--keys-dir", str(keys_dir), "--checkpoint", str(kept.path))
    assert ok.returncode == 0, ok.stdout + ok.stderr
    assert "checkpoint 2 of minds-ledger-checkpoint holds (1 heads)" in ok.stdout

    # An old checkpoint put back in the object: the database recorded a newer one.
    replayed = tmp_path / "old.json"
    replayed.write_text(old)
    proc = verify(ledger_database, "--keys-dir", str(keys_dir), "--checkpoint", str(replayed))
    assert proc.returncode == 1
    assert problems(proc) == [
        "CHECKPOINT the database recorded checkpoint 2 of minds-ledger-checkpoint, newer than "
        "the 1 given (an old checkpoint was put back)"
    ]

    # The newest row removed (a truncated tail): the plain chain cannot tell, the checkpoint can.
    as_owner(
        ledger_database,
        "ALTER TABLE events DISABLE TRIGGER events_append_only",
        "DELETE FROM events WHERE id = 3",
    )
    assert verify(ledger_database, "--keys-dir", str(keys_dir)).returncode == 0
    proc = verify(ledger_database, "--keys-dir", str(keys_dir), "--checkpoint", str(kept.path))
    assert proc.returncode == 1
    assert problems(proc) == [
        "CHECKPOINT events ops/keeper: row 3, its head at checkpoint 2, is no longer in its "
        "chain as it was (the chain was truncated or rewritten)"
    ]


def test_a_changed_checkpoint_is_refused(
    sealed: Ledger, ledger_database: LedgerDatabase, keys_dir: Path, tmp_path: Path
) -> None:
    kept = FileObject(tmp_path / "checkpoint.json")
    sealed.append_event(event("a"))
    LedgerCheckpoints(sealed, kept, lambda: T0).run()
    data = json.loads(kept.path.read_text())
    data["checkpoint"] = data["checkpoint"].replace('"sequence":1', '"sequence":7')
    kept.path.write_text(json.dumps(data))
    proc = verify(ledger_database, "--keys-dir", str(keys_dir), "--checkpoint", str(kept.path))
    assert proc.returncode == 1
    assert "CHECKPOINT the checkpoint does not match its seal" in proc.stdout
    assert verify(ledger_database, "--checkpoint", str(kept.path)).returncode == 2

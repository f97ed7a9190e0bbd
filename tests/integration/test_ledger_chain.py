"""The per-mind hash chain against a real Postgres: appends chain themselves, even
concurrently; `minds db verify` finds a row that was edited, removed or slipped in by someone
who could turn the triggers off (a superuser, here)."""

from __future__ import annotations

import os
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime
from pathlib import Path

import psycopg
import pytest

from minds.adapters.ledger import Ledger, upgrade, verify_chains
from minds.adapters.ledger.chain import CHAIN_ISOLATION_SQLSTATE, CHAINED_TABLES, row_hash_sql
from minds.adapters.ledger.schema import APPEND_ONLY_TABLES, KEY_TABLES, SEAL_TABLES
from minds.domain.ledger import EventRecord, SubjectRef, idempotency_key
from tests.fixtures.postgres import LedgerDatabase, connect

pytestmark = pytest.mark.integration

T0 = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)


def event(key: str, mind: str = "keeper") -> EventRecord:
    return EventRecord(
        mind=mind,
        namespace="ops",
        type="noted",
        subject=SubjectRef(kind="Mind", name=mind, uid=f"uid-{mind}"),
        payload={"key": key},
        occurred_at=T0,
        idempotency_key=idempotency_key(key),
    )


def verify(url: str, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "minds.cli.main", "db", "verify", *args],
        env={**os.environ, "MINDS_DATABASE_URL": url},
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def problems(proc: subprocess.CompletedProcess[str]) -> list[str]:
    """What verify found wrong: its output less the line it gives each chain."""
    return [line for line in proc.stdout.splitlines() if not line.startswith("chain ")]


@pytest.fixture
def four_events(ledger: Ledger) -> Ledger:
    """keeper's events 1, 2, 4 (3 was spent by a replayed append) and warden's 5."""
    for key in ("k1", "k2", "k2", "k4"):
        ledger.append_event(event(key))
    ledger.append_event(event("w1", mind="warden"))
    assert [e.id for e in ledger.events(mind="keeper")] == [1, 2, 4]
    return ledger


def tamper(database: LedgerDatabase, statement: str) -> None:
    """As the superuser, with every trigger off for this transaction only."""
    with connect(database.admin_url) as conn:
        conn.execute("SET LOCAL session_replication_role = replica")
        conn.execute(statement)  # type: ignore[arg-type]


def test_an_untouched_ledger_verifies(four_events: Ledger, ledger_database: LedgerDatabase) -> None:
    proc = verify(ledger_database.app_url)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "ledger intact: 4 rows in 2 chains" in proc.stdout


def test_an_edited_row_is_found(four_events: Ledger, ledger_database: LedgerDatabase) -> None:
    tamper(ledger_database, 'UPDATE events SET payload = \'{"key": "other"}\' WHERE id = 2')
    proc = verify(ledger_database.app_url)
    assert proc.returncode == 1
    assert problems(proc) == [
        "BROKEN events: chain of mind ops/keeper breaks at row 2 (after row 1): its row_hash "
        "does not match its content (the row was changed)"
    ]


def test_a_changed_recorded_at_is_found(
    four_events: Ledger, ledger_database: LedgerDatabase
) -> None:
    tamper(ledger_database, "UPDATE events SET recorded_at = recorded_at - interval '1 day'")
    proc = verify(ledger_database.app_url)
    assert proc.returncode == 1
    assert "ops/keeper breaks at row 1:" in proc.stdout
    assert "ops/warden breaks at row 5:" in proc.stdout


def test_a_deleted_row_is_found(four_events: Ledger, ledger_database: LedgerDatabase) -> None:
    tamper(ledger_database, "DELETE FROM events WHERE id = 2")
    proc = verify(ledger_database.app_url)
    assert proc.returncode == 1
    assert "BROKEN events: chain of mind ops/keeper breaks at row 4 (after row 1): its " in (
        proc.stdout
    )
    assert "a row was removed or added" in proc.stdout
    assert "warden" not in "\n".join(problems(proc))  # other minds' chains are intact


def test_an_inserted_row_is_found(four_events: Ledger, ledger_database: LedgerDatabase) -> None:
    # The careful forger: row 3 goes into the gap, chained after row 2 and sealed correctly.
    with connect(ledger_database.admin_url) as conn:
        conn.execute("SET LOCAL session_replication_role = replica")
        conn.execute("SET LOCAL timezone = 'UTC'")
        conn.execute("SET LOCAL extra_float_digits = 1")
        conn.execute(
            "INSERT INTO events (id, mind, namespace, type, subject_kind, subject_name, "
            "occurred_at, recorded_at, idempotency_key, prev_hash, row_hash) "
            "SELECT 3, 'keeper', 'ops', 'noted', 'Mind', 'keeper', now(), now(), 'forged', "
            "row_hash, '\\x' FROM events WHERE id = 2"
        )
        conn.execute(
            f"UPDATE events AS t SET row_hash = {row_hash_sql('t.prev_hash', 't')} "  # noqa: S608
            "WHERE id = 3"
        )
    proc = verify(ledger_database.app_url)
    assert proc.returncode == 1
    assert "ops/keeper breaks at row 4 (after row 3)" in proc.stdout
    assert "a row was removed or added" in proc.stdout


def test_a_consistent_rewrite_is_found_by_the_kept_heads(
    four_events: Ledger, ledger_database: LedgerDatabase, tmp_path: Path
) -> None:
    heads = tmp_path / "heads.txt"
    first = verify(ledger_database.app_url, "--heads-file", str(heads))
    assert first.returncode == 0, first.stdout + first.stderr
    kept = heads.read_text()
    assert kept.count("head events ops/") == 2

    # Someone who may turn the triggers off edits row 2 and re-seals keeper's whole chain.
    with connect(ledger_database.admin_url) as conn:
        conn.execute("SET LOCAL session_replication_role = replica")
        conn.execute("SET LOCAL timezone = 'UTC'")
        conn.execute("SET LOCAL extra_float_digits = 1")
        conn.execute('UPDATE events SET payload = \'{"key": "other"}\' WHERE id = 2')
        for row in (1, 2, 4):
            conn.execute(
                "UPDATE events AS t SET prev_hash = (SELECT p.row_hash FROM events AS p "
                "WHERE p.mind = t.mind AND p.id < t.id ORDER BY p.id DESC LIMIT 1) "
                "WHERE id = %s",
                (row,),
            )
            conn.execute(
                f"UPDATE events AS t SET row_hash = {row_hash_sql('t.prev_hash', 't')} "  # noqa: S608
                "WHERE id = %s",
                (row,),
            )
    assert verify(ledger_database.app_url).returncode == 0  # the chain alone cannot tell

    found = verify(ledger_database.app_url, "--heads-file", str(heads))
    assert found.returncode == 1
    assert problems(found)[0].startswith("LOST head events ops/keeper ")
    assert "no longer in its chain (history was rewritten)" in found.stdout
    assert "warden" not in "\n".join(problems(found))
    assert heads.read_text() == kept  # the evidence is not overwritten


def test_a_heads_file_that_is_not_one_is_refused(
    ledger_database: LedgerDatabase, tmp_path: Path
) -> None:
    heads = tmp_path / "heads.txt"
    heads.write_text("head events ops/keeper 00ff\nsomething else\n")
    proc = verify(ledger_database.app_url, "--heads-file", str(heads))
    assert proc.returncode == 2
    assert "line 2 is not `head TABLE NAMESPACE/MIND HASH`" in proc.stderr


def test_concurrent_appends_of_one_mind_form_one_chain(
    ledger: Ledger, ledger_database: LedgerDatabase
) -> None:
    def append(worker: int) -> None:
        for n in range(15):
            ledger.append_event(event(f"w{worker}-{n}"))

    with ThreadPoolExecutor(max_workers=6) as pool:
        list(pool.map(append, range(6)))
    result = verify_chains(ledger_database.app_url)
    assert result.rows == 90
    assert result.intact, result.breaks


def test_every_append_only_table_is_chained_per_mind(ledger_database: LedgerDatabase) -> None:
    with connect(ledger_database.app_url) as conn:
        conn.execute(
            "INSERT INTO volition_decisions (namespace, mind, kind, outcome, subjects, data, "
            "decided_at, idempotency_key) VALUES ('ops', 'keeper', 'formation', 'formed', "
            "'{}', '{\"score\": 0.7}', now(), 'd1')"
        )
        execution = conn.execute(
            "INSERT INTO executions (origin_key, mind, namespace, capability, target, "
            "parameters, origin, evidence, authority, started_at) VALUES ('o1', 'keeper', "
            "'ops', 'restart', 'atlas', '{}', '{}', '{}', '{}', now()) RETURNING id"
        ).fetchone()
        assert execution is not None
        conn.execute(
            "INSERT INTO execution_outcomes (execution_id, status, summary, fields, "
            "finished_at) VALUES (%s, 'executed', 'done', '{}', now())",
            (execution[0],),
        )
        conn.execute(
            "INSERT INTO beliefs (id, namespace, mind, statement, confidence, evidence_for, "
            "evidence_against, updated_at) VALUES ('b1', 'ops', 'keeper', 's', 0.5, 0, 0, now())"
        )
        conn.execute(
            "INSERT INTO belief_evidence (belief_id, key, supports, weight, note, "
            "confidence_before, confidence_after, occurred_at) VALUES "
            "('b1', 'e1', true, 1.0, 'n', 0.5, 0.6000000000000001, now())"
        )
        conn.execute(
            "INSERT INTO procedural_memories (id, namespace, mind, subject, text, confidence, "
            "plan, revision, created_at) VALUES ('p1', 'ops', 'keeper', 's', 't', 0.9, 'pl', 1, "
            "now())"
        )
        conn.commit()
        owners = conn.execute(
            "SELECT namespace, mind FROM execution_outcomes UNION ALL "
            "SELECT namespace, mind FROM belief_evidence"
        ).fetchall()
    assert owners == [("ops", "keeper"), ("ops", "keeper")]
    result = verify_chains(ledger_database.app_url)
    assert result.intact, result.breaks
    chained = {head.table for head in result.heads}
    assert chained == {t.name for t in CHAINED_TABLES} - {"events"}  # no event written here


def test_appends_outside_read_committed_are_refused(ledger_database: LedgerDatabase) -> None:
    with connect(ledger_database.app_url) as conn:
        conn.isolation_level = psycopg.IsolationLevel.REPEATABLE_READ
        with pytest.raises(psycopg.Error) as refused:
            conn.execute(
                "INSERT INTO events (mind, namespace, type, subject_kind, subject_name, "
                "occurred_at, idempotency_key) VALUES ('keeper', 'ops', 'noted', 'Mind', "
                "'keeper', now(), 'k1')"
            )
    assert refused.value.sqlstate == CHAIN_ISOLATION_SQLSTATE


def test_the_migration_chains_rows_written_before_it(empty_database: LedgerDatabase) -> None:
    upgrade(empty_database.owner_url, "0005")
    with connect(empty_database.owner_url) as conn:
        for n, mind in enumerate(("keeper", "keeper", "warden", "keeper")):
            conn.execute(
                "INSERT INTO events (mind, namespace, type, subject_kind, subject_name, "
                "occurred_at, idempotency_key, payload) VALUES (%s, 'ops', 'noted', 'Mind', "
                "%s, now(), %s, '{\"ratio\": 0.1}')",
                (mind, mind, f"old-{n}"),
            )
        conn.execute(
            "INSERT INTO procedural_memories (id, namespace, mind, subject, text, confidence, "
            "plan, revision, created_at) VALUES ('p1', 'ops', 'keeper', 's', 't', 0.9, 'pl', 1, "
            "now())"
        )
    upgrade(empty_database.owner_url)
    with Ledger.from_url(empty_database.app_url) as ledger:
        ledger.append_event(event("new"))
    result = verify_chains(empty_database.app_url)
    assert result.intact, result.breaks
    assert result.rows == 6
    with connect(empty_database.app_url) as conn:
        linked = conn.execute(
            "SELECT n.prev_hash = o.row_hash FROM events AS n, events AS o "
            "WHERE n.idempotency_key = %s AND o.idempotency_key = 'old-3'",
            (idempotency_key("new"),),
        ).fetchone()
    assert linked == (True,)


def test_every_append_only_table_is_chained() -> None:
    # An append-only table left out of the chain would be one an owner could edit unseen; the
    # tables of the seals are not chained: each of their rows is sealed with the key itself.
    # Nor are the keys of the partitioned tables (see test_ledger_partitions).
    assert sorted(t.name for t in CHAINED_TABLES) == sorted(
        set(APPEND_ONLY_TABLES) - set(SEAL_TABLES) - set(KEY_TABLES)
    )

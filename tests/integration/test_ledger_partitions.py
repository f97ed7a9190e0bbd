"""The chained tables partitioned by month (migration 0011, docs/adr/0002-ledger-partitions.md)
against a real Postgres: rows land in their month, a key replayed in another partition adds
nothing, the application role cannot take a partition away, the owner's maintenance is
idempotent, and the chain verifies across partitions and across the migration."""

from __future__ import annotations

import gzip
import hashlib
import json
import time
from datetime import UTC, datetime
from pathlib import Path

import psycopg
import pytest

from minds.adapters.ledger import Ledger, upgrade, verify_chains
from minds.adapters.ledger.archive import archive_before
from minds.adapters.ledger.db import make_engine
from minds.adapters.ledger.keys import LedgerKeys
from minds.adapters.ledger.partitions import ensure_partitions, month_partition
from minds.adapters.ledger.verify import BAD_CUT, UNLINKED
from minds.devenv.install import repo_root
from minds.domain.executions import ExecutionOrigin, ExecutionRecord
from minds.domain.ledger import idempotency_key
from minds.domain.ledger_seal import SEAL_ALGORITHM, manifest_message
from tests.fixtures.docs import run_documented, sh_commands
from tests.fixtures.postgres import DatabaseFactory, LedgerDatabase, connect
from tests.integration.test_cli_db import minds
from tests.integration.test_ledger_chain import event
from tests.integration.test_ledger_seal import K1

pytestmark = pytest.mark.integration

T0 = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)
DOC = repo_root() / "docs" / "ledger.md"
INSUFFICIENT_PRIVILEGE = "42501"
APPEND_ONLY_SQLSTATE = "ML001"


def execution(approval: str) -> ExecutionRecord:
    return ExecutionRecord(
        origin_key=ExecutionOrigin(approval=approval, approval_uid=f"uid-{approval}").key(),
        mind="keeper",
        namespace="ops",
        capability="service.restart",
        target="ops/atlas",
        parameters={"namespace": "ops", "name": "atlas"},
        origin=ExecutionOrigin(approval=approval, approval_uid=f"uid-{approval}"),
        started_at=T0,
    )


def partition_of(url: str, table: str, where: str, *params: object) -> list[str]:
    with connect(url) as conn:
        rows = conn.execute(
            f"SELECT tableoid::regclass::text FROM {table} WHERE {where}",  # noqa: S608
            params,
        ).fetchall()
    return [str(r[0]) for r in rows]


def split_current_partition(database: LedgerDatabase, table: str) -> str:
    """As the owner, end ``table``'s current partition at this instant and open a new one from
    it: rows written so far stay in the old, later ones go to the new, as at a month's end.
    Returns the new partition's name."""
    current = month_partition(table, datetime.now(UTC))
    nxt = f"{table}_split"
    with connect(database.owner_url) as conn:
        bounds = conn.execute(
            "SELECT substring(b FROM 'FROM \\(''([^'']+)''\\)'), "
            "substring(b FROM 'TO \\(''([^'']+)''\\)') "
            "FROM (SELECT pg_get_expr(relpartbound, oid) AS b FROM pg_class "
            "WHERE relname = %s) AS p",
            (current,),
        ).fetchone()
        assert bounds is not None
        lower, upper = bounds
        now = conn.execute("SELECT clock_timestamp()").fetchone()
        assert now is not None
        cut = now[0]
        conn.execute(f"ALTER TABLE {table} DETACH PARTITION {current}")
        conn.execute(
            f"ALTER TABLE {table} ATTACH PARTITION {current} FOR VALUES FROM (%s) TO (%s)".replace(
                "%s", "'{}'"
            ).format(lower, cut.isoformat())
        )
        conn.execute(
            f"CREATE TABLE {nxt} PARTITION OF {table} FOR VALUES FROM ('{{}}') TO ('{{}}')".format(
                cut.isoformat(), upper
            )
        )
    return nxt


def test_an_appended_row_lands_in_its_months_partition(
    ledger: Ledger, ledger_database: LedgerDatabase
) -> None:
    ledger.append_event(event("k1"))
    where = "idempotency_key = %s"
    month = month_partition("events", datetime.now(UTC))
    assert partition_of(ledger_database.app_url, "events", where, idempotency_key("k1")) == [month]


def test_a_replayed_key_adds_nothing_in_the_next_partition(
    ledger: Ledger, ledger_database: LedgerDatabase
) -> None:
    assert ledger.append_event(event("k1"))
    first = execution("a1")
    _, new = ledger.begin_execution(first)
    assert new
    split = {t: split_current_partition(ledger_database, t) for t in ("events", "executions")}
    # The replays are routed to the new partitions, where no row has their key: the keys
    # table skips them all the same.
    assert not ledger.append_event(event("k1"))
    _, new = ledger.begin_execution(first)
    assert not new
    assert ledger.append_event(event("k2"))
    with connect(ledger_database.app_url) as conn:
        counted = conn.execute(
            "SELECT (SELECT count(*) FROM events WHERE idempotency_key = %s), "
            "(SELECT count(*) FROM event_keys WHERE idempotency_key = %s), "
            "(SELECT count(*) FROM executions WHERE origin_key = %s)",
            (idempotency_key("k1"), idempotency_key("k1"), first.origin_key),
        ).fetchone()
    assert counted == (1, 1, 1)
    where = "idempotency_key = %s"
    assert partition_of(ledger_database.app_url, "events", where, idempotency_key("k2")) == [
        split["events"]
    ]
    proc = minds("db", "verify", url=ledger_database.app_url)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_an_origin_key_executes_once_under_races(ledger: Ledger) -> None:
    from concurrent.futures import ThreadPoolExecutor

    record = execution("race")
    with ThreadPoolExecutor(max_workers=8) as pool:
        results = list(pool.map(lambda _: ledger.begin_execution(record), range(16)))
    assert sum(1 for _, new in results if new) == 1
    assert len({r.id for r, _ in results}) == 1


@pytest.mark.parametrize(
    "statement",
    [
        "ALTER TABLE events DETACH PARTITION events_default",
        "ALTER TABLE events DETACH PARTITION events_legacy",
        "DROP TABLE events_default",
        "DROP TABLE events_legacy",
        "DELETE FROM events_legacy",
        "DELETE FROM events_default",
        "TRUNCATE events_default",
        "UPDATE events_default SET payload = '{}'",
        "INSERT INTO events_default SELECT * FROM events_legacy",
        "CREATE TABLE events_9999 PARTITION OF events FOR VALUES FROM ('9999-01-01') TO "
        "('9999-02-01')",
        "DELETE FROM event_keys",
    ],
)
def test_the_application_role_cannot_take_a_partition_away(
    ledger_database: LedgerDatabase, statement: str
) -> None:
    with connect(ledger_database.app_url) as conn, pytest.raises(psycopg.Error) as refused:
        conn.execute(statement)
    assert refused.value.sqlstate == INSUFFICIENT_PRIVILEGE, refused.value


def test_each_partition_refuses_a_delete_even_by_the_owner(
    ledger: Ledger, ledger_database: LedgerDatabase
) -> None:
    ledger.append_event(event("k1"))
    month = month_partition("events", datetime.now(UTC))
    for name in (month, "events_default", "events_legacy"):
        with connect(ledger_database.owner_url) as conn, pytest.raises(psycopg.Error) as refused:
            conn.execute(f"DELETE FROM {name}")  # noqa: S608
        assert refused.value.sqlstate == APPEND_ONLY_SQLSTATE, name


def test_maintain_makes_the_months_ahead_once(ledger_database: LedgerDatabase) -> None:
    first = minds("db", "maintain", url=ledger_database.owner_url)
    assert first.returncode == 0, first.stderr
    # `minds db upgrade` made them already.
    assert "partitions created: none" in first.stdout
    assert "rows in default partitions: 0" in first.stdout
    engine = make_engine(ledger_database.owner_url)
    later = datetime(datetime.now(UTC).year + 1, 6, 15, tzinfo=UTC)
    try:
        with engine.begin() as connection:
            made = ensure_partitions(connection, now=later)
        with engine.begin() as connection:
            again = ensure_partitions(connection, now=later)
    finally:
        engine.dispose()
    assert month_partition("events", later) in made.created
    assert again.created == ()
    # The application role may not make one.
    refused = minds("db", "maintain", url=ledger_database.app_url)
    assert refused.returncode != 0


def test_status_counts_rows_no_month_took(ledger: Ledger, ledger_database: LedgerDatabase) -> None:
    # As if maintenance had stopped: no partition for now, the row goes to the default.
    month = month_partition("events", datetime.now(UTC))
    with connect(ledger_database.owner_url) as conn:
        conn.execute(f"ALTER TABLE events DETACH PARTITION {month}")
        conn.execute(f"DROP TABLE {month}")
    ledger.append_event(event("k1"))
    status = minds("db", "status", url=ledger_database.app_url)
    assert status.returncode == 0, status.stderr
    assert "rows in default partitions: 1" in status.stdout
    maintained = minds("db", "maintain", url=ledger_database.owner_url)
    assert maintained.returncode == 0, maintained.stderr
    assert "1 rows in events_default" in maintained.stdout
    assert verify_chains(ledger_database.app_url).intact


def test_rows_from_before_the_migration_keep_their_hashes_and_keys(
    empty_database: LedgerDatabase,
) -> None:
    upgrade(empty_database.owner_url, "0009")
    with Ledger.from_url(empty_database.app_url) as before:
        before.append_event(event("old-1"))
        before.append_event(event("old-2"))
        before.begin_execution(execution("old"))
    with connect(empty_database.app_url) as conn:
        hashes = conn.execute("SELECT id, row_hash FROM events ORDER BY id").fetchall()
    upgrade(empty_database.owner_url)
    with connect(empty_database.app_url) as conn:
        assert conn.execute("SELECT id, row_hash FROM events ORDER BY id").fetchall() == hashes
    where = "true"
    assert set(partition_of(empty_database.app_url, "events", where)) == {"events_legacy"}
    with Ledger.from_url(empty_database.app_url) as after:
        assert not after.append_event(event("old-1"))
        assert not after.begin_execution(execution("old"))[1]
        assert after.append_event(event("new"))
    result = verify_chains(empty_database.app_url)
    assert result.intact, result.breaks
    assert result.rows == 4


def _append_cost(url: str, n: int, prefix: str) -> float:
    with connect(url) as conn:
        started = time.perf_counter()
        for i in range(n):
            conn.execute(
                "INSERT INTO events (mind, namespace, type, subject_kind, subject_name, "
                "occurred_at, idempotency_key) VALUES ('keeper', 'ops', 'noted', 'Mind', "
                "'keeper', now(), %s)",
                (f"{prefix}-{i}",),
            )
            conn.commit()
        return time.perf_counter() - started


def test_the_appends_cost_before_and_after(make_database: DatabaseFactory) -> None:
    """Not a timed assertion: the ratio is printed (run with -s) for docs/ledger.md."""
    before, after = make_database(), make_database()
    upgrade(before.owner_url, "0009")
    upgrade(after.owner_url)
    n = 400
    _append_cost(before.app_url, 50, "warm"), _append_cost(after.app_url, 50, "warm")
    costs: dict[str, list[float]] = {"before": [], "after": []}
    for round_ in range(3):
        costs["before"].append(_append_cost(before.app_url, n, f"r{round_}"))
        costs["after"].append(_append_cost(after.app_url, n, f"r{round_}"))
    ratio = min(costs["after"]) / min(costs["before"])
    print(f"\nappend cost, partitioned / unpartitioned: {ratio:.2f} ({n} one-row appends)")
    assert ratio > 0


def _archived_month(ledger: Ledger, database: LedgerDatabase) -> datetime:
    """keeper's k1, k2 and warden's w1 in a partition closed at the returned instant; keeper's
    k3 after it."""
    for key, mind in (("k1", "keeper"), ("k2", "keeper"), ("w1", "warden")):
        ledger.append_event(event(key, mind=mind))
    split_current_partition(database, "events")
    with connect(database.owner_url) as conn:
        found = conn.execute(
            "SELECT substring(pg_get_expr(relpartbound, oid) FROM 'TO \\(''([^'']+)''\\)') "
            "FROM pg_class WHERE relname = %s",
            (month_partition("events", datetime.now(UTC)),),
        ).fetchone()
    assert found is not None
    ledger.append_event(event("k3"))
    return datetime.fromisoformat(found[0])


def test_an_archived_month_leaves_a_cut_that_verify_accepts(
    ledger: Ledger, ledger_database: LedgerDatabase, tmp_path: Path
) -> None:
    closed = _archived_month(ledger, ledger_database)
    done = archive_before(ledger_database.owner_url, closed, tmp_path, K1)
    month = month_partition("events", datetime.now(UTC))
    [archived] = [a for a in done if a.partition == month]
    assert (archived.rows, archived.chains) == (3, 2)
    manifest = json.loads(archived.manifest.read_text())
    seal = bytes.fromhex(manifest.pop("seal"))
    assert (manifest.pop("seal_key"), manifest.pop("seal_alg")) == ("k1", SEAL_ALGORITHM)
    document = json.dumps(manifest, sort_keys=True, separators=(",", ":")).encode()
    assert K1.holds(manifest_message(document), seal)
    data = tmp_path / manifest["file"]
    assert hashlib.sha256(data.read_bytes()).hexdigest() == manifest["sha256"]
    lines = [json.loads(line) for line in gzip.decompress(data.read_bytes()).splitlines()]
    assert [row["payload"]["key"] for row in lines] == ["k1", "k2", "w1"]  # chain order
    assert lines[1]["prev_hash"] == lines[0]["row_hash"]
    with connect(ledger_database.owner_url) as conn:
        gone = conn.execute("SELECT to_regclass(%s)", (month,)).fetchone()
    assert gone == (None,)
    keys = LedgerKeys(keys={"k1": K1}, active=K1)
    result = verify_chains(ledger_database.app_url, keys=keys)
    assert result.intact, result.breaks
    assert result.rows == 1  # k3, whose prev_hash is the recorded cut's head
    # A replayed key of an archived row still adds nothing: the keys stay.
    assert not ledger.append_event(event("k1"))


def test_a_partition_dropped_without_its_archive_is_a_gap(
    ledger: Ledger, ledger_database: LedgerDatabase
) -> None:
    _archived_month(ledger, ledger_database)
    month = month_partition("events", datetime.now(UTC))
    with connect(ledger_database.owner_url) as conn:
        conn.execute(f"ALTER TABLE events DETACH PARTITION {month}")
        conn.execute(f"DROP TABLE {month}")
    result = verify_chains(ledger_database.app_url)
    assert not result.intact
    assert [(b.table, b.mind, b.reason) for b in result.breaks] == [("events", "keeper", UNLINKED)]
    # A cut written without the key does not hide it from a verify given the key.
    with connect(ledger_database.app_url) as conn:
        row = conn.execute("SELECT prev_hash FROM events").fetchone()
    assert row is not None
    head = row[0]
    with connect(ledger_database.owner_url) as conn:
        conn.execute(
            "INSERT INTO ledger_cuts (table_name, namespace, mind, last_order, head, partition, "
            "manifest_sha256, seal, seal_key, seal_alg) VALUES ('events', 'ops', 'keeper', 2, "
            "%s, 'forged', 'none', '\\x00', 'k1', %s)",
            (head, SEAL_ALGORITHM),
        )
    keys = LedgerKeys(keys={"k1": K1}, active=K1)
    result = verify_chains(ledger_database.app_url, keys=keys)
    assert [(b.table, b.mind, b.reason) for b in result.breaks] == [("events", "keeper", BAD_CUT)]


def test_the_archive_command_needs_the_key_and_the_owner(
    ledger_database: LedgerDatabase, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    args = ("db", "archive", "--before", "2000-01-01", "--out", str(tmp_path / "a"))
    unkeyed = minds(*args, url=ledger_database.owner_url)
    assert unkeyed.returncode == 2
    assert "MINDS_LEDGER_KEYS_DIR" in unkeyed.stderr
    (tmp_path / "keys").mkdir()
    (tmp_path / "keys" / "k1").write_bytes(K1.secret)
    monkeypatch.setenv("MINDS_LEDGER_KEYS_DIR", str(tmp_path / "keys"))
    nothing = minds(*args, url=ledger_database.owner_url)
    assert nothing.returncode == 0, nothing.stderr
    assert "nothing to archive" in nothing.stdout
    with connect(ledger_database.app_url) as conn, pytest.raises(psycopg.Error) as refused:
        conn.execute(
            "INSERT INTO ledger_cuts (table_name, namespace, mind, last_order, head, partition, "
            "manifest_sha256, seal, seal_key, seal_alg) VALUES ('events', 'ops', 'keeper', 2, "
            "'\\x00', 'p', 'm', '\\x00', 'k1', 'a')"
        )
    assert refused.value.sqlstate == INSUFFICIENT_PRIVILEGE


def test_the_documented_archive_runs(
    ledger: Ledger, ledger_database: LedgerDatabase, tmp_path: Path
) -> None:
    """docs/ledger.md's "Archiving a month", as written (a date before every partition's end,
    so nothing is cut: a closed month needs a month to pass)."""
    ledger.append_event(event("k1"))
    keys = tmp_path / "keys"
    keys.mkdir()
    (keys / "k1").write_bytes(K1.secret)
    env = {
        "MINDS_DATABASE_OWNER_URL": ledger_database.owner_url,
        "MINDS_DATABASE_URL": ledger_database.app_url,
        "MINDS_LEDGER_KEYS_DIR": str(keys),
    }
    commands = sh_commands(DOC, section="Archiving a month")
    substitutions = {"<date>": "2000-01-01", "<dir>": str(tmp_path / "archive")}
    outputs = run_documented(commands, substitutions, env, tmp_path)
    assert "nothing to archive" in outputs["minds db archive --before <date> --out <dir>"]
    assert "ledger intact: 1 rows in 1 chains" in outputs["minds db verify"]

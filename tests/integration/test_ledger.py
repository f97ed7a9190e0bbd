"""The ledger against a real Postgres: migrations, idempotent appends, append-only refusal."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import psycopg
import pytest
from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext
from sqlalchemy import inspect, make_url

from minds.adapters.ledger import (
    APPEND_ONLY_SQLSTATE,
    Ledger,
    SchemaAheadError,
    SchemaBehindError,
    check_schema,
    current,
    head,
    make_engine,
    schema_status,
    upgrade,
)
from minds.adapters.ledger.migrate import alembic_config
from minds.adapters.ledger.partitions import not_a_partition
from minds.adapters.ledger.schema import Base
from minds.domain.ledger import (
    MASK,
    EventRecord,
    EventType,
    MindChange,
    MindRecord,
    SubjectRef,
    idempotency_key,
)
from tests.fixtures.postgres import LedgerDatabase

pytestmark = pytest.mark.integration

T0 = datetime(2025, 3, 1, 12, 0, tzinfo=UTC)


def event(
    key: str,
    *,
    mind: str = "keeper",
    type: str = EventType.MIND_REGISTERED,
    at: datetime = T0,
    payload: dict[str, Any] | None = None,
) -> EventRecord:
    return EventRecord.model_validate(
        {
            "mind": mind,
            "namespace": "ops",
            "type": type,
            "subject": {"kind": "Mind", "name": mind, "uid": f"uid-{mind}"},
            "payload": payload or {},
            "occurred_at": at,
            "idempotency_key": idempotency_key(key),
        }
    )


def mind(
    uid: str = "u1", generation: int = 1, spec: dict[str, Any] | None = None, at: datetime = T0
) -> MindRecord:
    return MindRecord(
        namespace="ops",
        name="keeper",
        uid=uid,
        generation=generation,
        spec=spec if spec is not None else {"active": True},
        registered_at=at,
        updated_at=at,
    )


@pytest.fixture
def raw(ledger_database: LedgerDatabase) -> Iterator[psycopg.Connection]:
    """A plain psycopg connection (autocommit) to the test's migrated database, as its owner:
    what it is refused, only the triggers refuse."""
    url = make_url(ledger_database.owner_url).set(drivername="postgresql")
    with psycopg.connect(url.render_as_string(hide_password=False), autocommit=True) as conn:
        yield conn


@pytest.fixture
def raw_ledger(migrated_database_url: str, raw: psycopg.Connection) -> Iterator[Ledger]:
    """A ledger on the same database as `raw`."""
    with Ledger.from_url(migrated_database_url) as store:
        yield store


# -- migrations ----------------------------------------------------------------------------


def test_migrations_run_up_from_an_empty_database(database_url: str) -> None:
    assert current(database_url) is None

    status = upgrade(database_url)

    assert status.at_head
    assert current(database_url) == head()
    engine = make_engine(database_url)
    try:
        tables = set(inspect(engine).get_table_names())
    finally:
        engine.dispose()
    assert {"events", "minds", "alembic_version"} <= tables


def test_migrations_go_down_and_up_again(database_url: str) -> None:
    from alembic import command

    upgrade(database_url)
    command.downgrade(alembic_config(database_url), "base")
    assert current(database_url) is None
    assert upgrade(database_url).at_head


def test_upgrade_twice_is_harmless(ledger_database: LedgerDatabase) -> None:
    assert upgrade(ledger_database.owner_url).at_head


def test_models_match_the_migrations(migrated_database_url: str) -> None:
    engine = make_engine(migrated_database_url)
    try:
        with engine.connect() as connection:
            opts = {"compare_type": True, "include_object": not_a_partition}
            context = MigrationContext.configure(connection, opts=opts)
            assert compare_metadata(context, Base.metadata) == []
    finally:
        engine.dispose()


def test_schema_status_behind_then_at_head(database_url: str) -> None:
    with Ledger.from_url(database_url) as store:
        behind = store.schema_status()
        assert behind.current is None
        assert behind.head == head()
        assert behind.behind
        assert not behind.at_head

        upgrade(database_url)

        at_head = store.schema_status()
        assert at_head.at_head
        assert not at_head.behind
        assert at_head.current == head()


def test_check_schema_refuses_an_empty_database(database_url: str) -> None:
    with pytest.raises(SchemaBehindError) as refused:
        check_schema(database_url)
    message = str(refused.value)
    assert f"code needs {head()}" in message
    assert "run `minds db upgrade`" in message
    assert "empty" in message


def test_check_schema_accepts_a_migrated_database(ledger: Ledger) -> None:
    assert ledger.check_schema().at_head


def test_check_schema_refuses_a_newer_schema(
    migrated_database_url: str, raw: psycopg.Connection
) -> None:
    raw.execute("UPDATE alembic_version SET version_num = '9999'")
    assert schema_status(migrated_database_url).ahead
    with pytest.raises(SchemaAheadError, match="does not know"):
        check_schema(migrated_database_url)


def test_check_schema_hides_the_password(database_url: str) -> None:
    password = make_url(database_url).password
    with pytest.raises(SchemaBehindError) as refused:
        check_schema(database_url)
    if password:
        assert str(password) not in str(refused.value)


# -- events --------------------------------------------------------------------------------


def test_the_same_idempotency_key_twice_yields_one_row(ledger: Ledger) -> None:
    first = ledger.append_event(event("k1", payload={"n": 1}))
    again = ledger.append_event(event("k1", payload={"n": 2}, at=T0 + timedelta(hours=1)))

    assert first is True
    assert again is False
    rows = ledger.events()
    assert len(rows) == 1
    assert rows[0].payload == {"n": 1}  # the first write stands


def test_update_is_refused_by_the_database(raw_ledger: Ledger, raw: psycopg.Connection) -> None:
    raw_ledger.append_event(event("k1"))
    with pytest.raises(psycopg.Error) as refused:
        raw.execute("UPDATE events SET mind = 'someone-else'")
    assert refused.value.sqlstate == APPEND_ONLY_SQLSTATE
    assert 'UPDATE on table "events" is refused: the table is append-only' in str(refused.value)
    assert raw_ledger.events()[0].mind == "keeper"


def test_delete_is_refused_by_the_database(raw_ledger: Ledger, raw: psycopg.Connection) -> None:
    raw_ledger.append_event(event("k1"))
    with pytest.raises(psycopg.Error) as refused:
        raw.execute("DELETE FROM events")
    assert refused.value.sqlstate == APPEND_ONLY_SQLSTATE
    assert 'DELETE on table "events" is refused' in str(refused.value)
    assert len(raw_ledger.events()) == 1


def test_truncate_is_refused_by_the_database(raw_ledger: Ledger, raw: psycopg.Connection) -> None:
    raw_ledger.append_event(event("k1"))
    with pytest.raises(psycopg.Error, match='TRUNCATE on table "events" is refused'):
        raw.execute("TRUNCATE events")
    assert len(raw_ledger.events()) == 1


def test_mutation_matching_no_row_is_refused_too(raw: psycopg.Connection) -> None:
    # Statement-level: trying at all is the bug, whether or not a row matches.
    with pytest.raises(psycopg.Error, match="append-only"):
        raw.execute("DELETE FROM events WHERE false")


def test_payload_reads_back_from_jsonb(raw_ledger: Ledger, raw: psycopg.Connection) -> None:
    payload: dict[str, Any] = {
        "generation": 3,
        "ratio": 0.25,
        "ok": True,
        "none": None,
        "text": "grüße, ✓",
        "steps": [{"kind": "restart", "target": "atlas-0"}, "note"],
        "nested": {"deep": {"deeper": [1, 2, 3]}},
    }
    raw_ledger.append_event(event("k1", payload=payload))

    assert raw_ledger.events()[0].payload == payload
    row = raw.execute(
        "SELECT jsonb_typeof(payload), payload -> 'nested' -> 'deep' -> 'deeper' ->> 1 FROM events"
    ).fetchone()
    assert row == ("object", "2")


def test_secrets_never_reach_the_ledger(raw_ledger: Ledger, raw: psycopg.Connection) -> None:
    raw_ledger.append_event(event("k1", payload={"model": {"apiKey": "sk-live-123"}}))
    stored = raw.execute("SELECT payload::text FROM events").fetchone()
    assert stored is not None
    assert "sk-live-123" not in stored[0]
    assert raw_ledger.events()[0].payload == {"model": {"apiKey": MASK}}


def test_event_reads_back_with_id_and_utc_times(ledger: Ledger) -> None:
    ledger.append_event(event("k1", at=T0.astimezone(UTC)))
    stored = ledger.events()[0]
    assert stored.id is not None
    assert stored.occurred_at == T0
    assert stored.occurred_at.utcoffset() == timedelta(0)
    assert stored.recorded_at is not None
    assert stored.subject == SubjectRef(kind="Mind", name="keeper", uid="uid-keeper")
    assert ledger.event(idempotency_key("k1")) == stored
    assert ledger.event(idempotency_key("nope")) is None


def test_events_are_filtered_and_paged(ledger: Ledger) -> None:
    ledger.append_event(event("a", mind="keeper", at=T0))
    ledger.append_event(
        event("b", mind="keeper", type=EventType.MIND_UPDATED, at=T0 + timedelta(1))
    )
    ledger.append_event(event("c", mind="warden", at=T0 + timedelta(2)))
    ledger.append_event(
        event("d", mind="keeper", type=EventType.MIND_DELETED, at=T0 + timedelta(3))
    )

    def keys(records: list[EventRecord]) -> list[str]:
        return [r.idempotency_key for r in records]

    k = {name: idempotency_key(name) for name in "abcd"}
    assert keys(ledger.events()) == [k["a"], k["b"], k["c"], k["d"]]
    assert keys(ledger.events(mind="keeper")) == [k["a"], k["b"], k["d"]]
    assert keys(ledger.events(type=EventType.MIND_UPDATED)) == [k["b"]]
    assert keys(ledger.events(type=[EventType.MIND_UPDATED, EventType.MIND_DELETED])) == [
        k["b"],
        k["d"],
    ]
    assert keys(ledger.events(since=T0 + timedelta(1), until=T0 + timedelta(3))) == [
        k["b"],
        k["c"],
    ]
    assert keys(ledger.events(namespace="elsewhere")) == []
    page = ledger.events(limit=2)
    assert keys(page) == [k["a"], k["b"]]
    assert page[-1].id is not None
    assert keys(ledger.events(after_id=page[-1].id)) == [k["c"], k["d"]]


# -- minds ---------------------------------------------------------------------------------


def test_upsert_mind_registers_updates_and_ignores_replays(ledger: Ledger) -> None:
    first = ledger.upsert_mind(mind(generation=1))
    assert first.change is MindChange.REGISTERED
    assert first.record.registered_at == T0

    later = T0 + timedelta(minutes=5)
    updated = ledger.upsert_mind(mind(generation=2, spec={"active": False}, at=later))
    assert updated.change is MindChange.UPDATED
    assert updated.record.generation == 2
    assert updated.record.spec == {"active": False}
    assert updated.record.registered_at == T0
    assert updated.record.updated_at == later

    assert ledger.upsert_mind(mind(generation=2, spec={"active": False})).change is (
        MindChange.UNCHANGED
    )
    stale = ledger.upsert_mind(mind(generation=1, at=later + timedelta(minutes=1)))
    assert stale.change is MindChange.UNCHANGED
    assert stale.record.generation == 2


def test_deleted_mind_stays_deleted_until_re_created(ledger: Ledger) -> None:
    ledger.upsert_mind(mind(uid="u1"))
    gone = T0 + timedelta(minutes=1)
    assert ledger.mark_mind_deleted("ops", "keeper", "u1", gone) is True
    assert ledger.mark_mind_deleted("ops", "keeper", "u1", gone) is False
    assert ledger.minds() == []
    deleted = ledger.mind("ops", "keeper")
    assert deleted is not None
    assert deleted.deleted_at == gone

    # A replayed observation of the deleted incarnation changes nothing.
    assert ledger.upsert_mind(mind(uid="u1", generation=3)).change is MindChange.UNCHANGED

    back = T0 + timedelta(minutes=2)
    again = ledger.upsert_mind(mind(uid="u2", at=back))
    assert again.change is MindChange.REGISTERED
    assert again.record.deleted_at is None
    assert again.record.registered_at == back
    assert [m.uid for m in ledger.minds()] == ["u2"]
    # Deleting the old incarnation again must not touch the new one.
    assert ledger.mark_mind_deleted("ops", "keeper", "u1", back) is False


def test_mind_specs_are_masked(ledger: Ledger) -> None:
    stored = ledger.upsert_mind(mind(spec={"model": {"token": "abc"}}))
    assert stored.record.spec == {"model": {"token": MASK}}

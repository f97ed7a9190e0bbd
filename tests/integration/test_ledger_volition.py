"""Wants, commitment states, choices and the cycle lock against a real Postgres."""

from __future__ import annotations

import threading
from datetime import UTC, datetime, timedelta

import pytest
from sqlalchemy import text
from sqlalchemy.exc import DBAPIError

from minds.adapters.ledger import APPEND_ONLY_SQLSTATE, Ledger

pytestmark = pytest.mark.integration
NOW = datetime(2026, 12, 2, tzinfo=UTC)


def test_want_changes_are_told_once(ledger: Ledger) -> None:
    kw = dict(namespace="ns", mind="m", want_id="w1", subject="ns/atlas", strength=0.6, at=NOW)
    assert ledger.upsert_want(status="active", data={"strength": 0.6}, **kw)  # type: ignore[arg-type]
    assert not ledger.upsert_want(status="active", data={"strength": 0.6}, **kw)  # type: ignore[arg-type]
    assert ledger.upsert_want(status="satisfied", data={"strength": 0.6}, **kw)  # type: ignore[arg-type]
    types = [e.type for e in ledger.events(namespace="ns", mind="m")]
    assert types == ["want_derived", "want_satisfied"]
    assert ledger.wants("ns", "m", status="satisfied") == [{"strength": 0.6}]


def test_decisions_are_append_only_and_idempotent(ledger: Ledger, owner_ledger: Ledger) -> None:
    args = dict(
        namespace="ns",
        mind="m",
        kind="formation",
        outcome="formed",
        subjects={"want": "w1", "intention": "i1"},
        data={"score": 0.7},
        at=NOW,
        key="k1",
    )
    assert ledger.record_decision(**args)  # type: ignore[arg-type]
    assert not ledger.record_decision(**args)  # type: ignore[arg-type]
    [found] = ledger.decisions(namespace="ns", subject=("intention", "i1"))
    assert found.data == {"score": 0.7}
    assert ledger.decisions(namespace="ns", subject=("intention", "other")) == []
    # As the owner: the application may not even try (see test_ledger_roles).
    with pytest.raises(DBAPIError) as caught, owner_ledger.session() as session:
        session.execute(text("UPDATE volition_decisions SET outcome = 'x'"))
    assert caught.value.orig.sqlstate == APPEND_ONLY_SQLSTATE  # type: ignore[union-attr]


def test_commitment_state_moves_once(ledger: Ledger) -> None:
    assert ledger.set_commitment_state("ns", "m", "c1", "active", None, NOW)
    assert not ledger.set_commitment_state("ns", "m", "c1", "active", None, NOW)
    assert ledger.set_commitment_state("ns", "m", "c1", "due", "due now", NOW + timedelta(1))
    assert ledger.commitment_states("ns", "m") == {"c1": "due"}


def test_a_fulfilment_is_dated_by_its_row_and_forgotten_when_due_again(ledger: Ledger) -> None:
    fulfilled = NOW - timedelta(hours=2)
    assert ledger.set_commitment_state("ns", "m", "nightly", "due", None, NOW - timedelta(hours=3))
    assert ledger.set_commitment_state("ns", "m", "nightly", "fulfilled", "by i1", fulfilled)
    assert ledger.set_commitment_state("ns", "m", "other", "due", None, NOW)
    assert ledger.commitment_updated_at("ns", "m") == {"nightly": fulfilled, "other": NOW}
    assert ledger.set_commitment_state("ns", "m", "nightly", "due", "next period", NOW)
    assert ledger.commitment_updated_at("ns", "m")["nightly"] == NOW


def test_one_cycle_of_a_mind_at_a_time(ledger: Ledger) -> None:
    with ledger.cycle_lock("ns", "m") as first:
        assert first
        with ledger.cycle_lock("ns", "m") as second:
            assert not second
        with ledger.cycle_lock("ns", "other") as unrelated:
            assert unrelated
    with ledger.cycle_lock("ns", "m") as again:
        assert again


def test_lock_holders_never_take_the_connections_their_transactions_need(
    migrated_database_url: str,
) -> None:
    # Two kept connections, no overflow: one may be held by a lock, one stays for transactions.
    with Ledger.from_url(
        migrated_database_url, pool_size=2, max_overflow=0, pool_timeout=5
    ) as small:
        inside = threading.Event()
        release = threading.Event()

        def other_mind() -> None:
            with small.cycle_lock("ns", "other") as mine:
                assert mine
                inside.set()
                assert release.wait(30)

        with small.cycle_lock("ns", "m") as mine:
            assert mine
            waiting = threading.Thread(target=other_mind)
            waiting.start()
            # The other cycle waits for a lock slot instead of taking the last connection...
            assert not inside.wait(2)
            # ...so this cycle's own transactions still get one.
            assert small.commitment_states("ns", "m") == {}
        assert inside.wait(30)  # the slot freed, the other cycle runs
        release.set()
        waiting.join(30)
        assert not waiting.is_alive()

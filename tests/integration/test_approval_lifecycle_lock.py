"""One history per decision, against a real Postgres: every fact of an Approval is read,
decided and recorded under the lock of its Mind's journal (``Ledger.hold_journal``), so two
recorders with different views of it (the Approval's own work and the asking plan's, or two
controllers) never both decide on the same history. The race is made to happen, not hoped for:
one recorder is stopped right before it writes, the other is started, and the test looks at
what Postgres says the second one is doing."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator, Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from minds.adapters.ledger import Ledger
from minds.domain.approvals import APPROVED, EXPIRED, LATE, LIFECYCLE
from minds.domain.ledger import EventRecord, SubjectRef, idempotency_key
from minds.domain.resources.kinds import APPROVAL, MIND
from minds.engine.approval_service import ApprovalService
from tests.fakes.clock import FakeClock
from tests.fakes.resources import FakeEvents, FakeResources
from tests.fixtures.postgres import connect
from tests.fixtures.waiting import eventually

pytestmark = pytest.mark.integration

NAMESPACE = "ops"
EXPIRES = datetime(2026, 5, 1, 12, 0, tzinfo=UTC)
#: The join of two threads that each wait on the other through Postgres, at most.
JOIN = 60


def waiting_on_a_lock(url: str) -> bool:
    """Some session of this database waits for an advisory lock (a journal's)."""
    with connect(url) as conn:
        row = conn.execute(
            "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND NOT granted"
        ).fetchone()
    return bool(row and row[0])


def noted(key: str, mind: str) -> EventRecord:
    return EventRecord(
        mind=mind,
        namespace=NAMESPACE,
        type="noted",
        subject=SubjectRef(kind="Mind", name=mind, uid=f"uid-{mind}"),
        payload={},
        occurred_at=EXPIRES,
        idempotency_key=idempotency_key("lock-test", key),
    )


def test_holding_a_journal_holds_off_its_appends_and_no_other(
    ledger: Ledger, migrated_database_url: str
) -> None:
    held, release = threading.Event(), threading.Event()

    def holder() -> None:
        with ledger.transaction():
            ledger.hold_journal(NAMESPACE, "keeper")
            held.set()
            release.wait(JOIN)

    appended: list[bool] = []
    first = threading.Thread(target=holder)
    first.start()
    assert held.wait(JOIN)
    second = threading.Thread(
        target=lambda: appended.append(ledger.append_event(noted("k", "keeper")))
    )
    second.start()
    try:
        # The same lock as the append's own (the chain's): the keeper's append waits...
        eventually(lambda: waiting_on_a_lock(migrated_database_url), what="the append waiting")
        assert appended == []
        # ...and another mind's journal is not held.
        assert ledger.append_event(noted("w", "warden"))
    finally:
        release.set()
        first.join(JOIN)
        second.join(JOIN)
    assert appended == [True]


class Pausing:
    """The real ledger, stopped before it appends an ``event_type`` row until let go."""

    def __init__(self, ledger: Ledger, event_type: str) -> None:
        self._ledger = ledger
        self._type = event_type
        self.about_to_write = threading.Event()
        self.go = threading.Event()

    def append_event(self, record: EventRecord) -> bool:
        if record.type == self._type:
            self.about_to_write.set()
            self.go.wait(JOIN)
        return self._ledger.append_event(record)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._ledger, name)


def approval(decision: dict[str, str]) -> dict[str, Any]:
    return {
        "metadata": {"name": "heal-p1", "namespace": NAMESPACE},
        "spec": {
            "kind": "action",
            "mind": "keeper",
            "capability": "service.restart",
            "target": f"{NAMESPACE}/atlas-worker",
            "parameters": {"namespace": NAMESPACE, "name": "atlas-worker"},
            "explanation": {"what": "restart atlas-worker", "why": "it is stuck"},
            "origin": {"mind": "keeper"},
            "approvers": {"users": ["alice"]},
            "expiresAt": EXPIRES.isoformat(),
            **decision,
        },
    }


def view(body: dict[str, Any]) -> FakeResources:
    """What one recorder's watch shows: the Mind, and the Approval as ``body`` has it."""
    resources = FakeResources()
    resources.create(
        MIND,
        NAMESPACE,
        {"metadata": {"name": "keeper"}, "spec": {"approvers": {"users": ["alice"]}}},
    )
    resources.create(APPROVAL, NAMESPACE, body)
    return resources


def recorder(ledger: Any, resources: FakeResources, now: datetime) -> ApprovalService:
    return ApprovalService(
        resources=resources, ledger=ledger, events=FakeEvents(), clock=FakeClock(now)
    )


@pytest.fixture
def approved_in_time_and_expired(ledger: Ledger) -> Iterator[tuple[Callable[[], Any], ...]]:
    """Two recorders of one Approval object (one uid): the plan's, which saw alice approve a
    second before the deadline, and stopped right before it writes; and the Approval's expiry
    work, whose view still has no decision, a second after the deadline."""
    approved = view(approval({"decision": "Approved", "decidedBy": "alice"}))
    stale = view(approval({}))
    uid = approved.get(APPROVAL, NAMESPACE, "heal-p1")["metadata"]["uid"]
    stale._objects[(APPROVAL.plural, NAMESPACE, "heal-p1")]["metadata"]["uid"] = uid
    pausing = Pausing(ledger, APPROVED)
    plan = recorder(pausing, approved, EXPIRES - timedelta(seconds=1))
    expiry = recorder(ledger, stale, EXPIRES + timedelta(seconds=1))
    yield (
        lambda: plan.settle(NAMESPACE, "heal-p1", owner_checked=True),
        lambda: expiry.settle(NAMESPACE, "heal-p1", owner_checked=True),
        lambda: pausing,
        lambda: uid,
    )
    pausing.go.set()


def test_approved_and_expired_are_never_both_recorded(
    ledger: Ledger,
    migrated_database_url: str,
    approved_in_time_and_expired: Sequence[Callable[[], Any]],
) -> None:
    plan, expiry, pausing_of, uid_of = approved_in_time_and_expired
    pausing, uid = pausing_of(), uid_of()
    errors: list[BaseException] = []

    def run(settle: Callable[[], Any]) -> None:
        try:
            settle()
        except BaseException as exc:  # surfaced below
            errors.append(exc)

    first = threading.Thread(target=run, args=(plan,))
    first.start()
    assert pausing.about_to_write.wait(JOIN)
    second = threading.Thread(target=run, args=(expiry,))
    second.start()
    # The expiry work waits for the plan's decision to be written or given up: it does not
    # decide on the history the plan read. (Without the lock it would finish here, EXPIRED.)
    eventually(
        lambda: waiting_on_a_lock(migrated_database_url) or not second.is_alive(),
        what="the expiry work waiting or done",
    )
    finished_first = not second.is_alive()
    pausing.go.set()
    first.join(JOIN)
    second.join(JOIN)
    assert errors == []

    recorded = {e.type for e in ledger.events(subject_uid=uid, type=LIFECYCLE)}
    assert APPROVED in recorded
    assert not recorded & {EXPIRED, LATE}, recorded
    assert not finished_first

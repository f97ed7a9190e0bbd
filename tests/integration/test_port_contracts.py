"""One contract, several implementations: the engine's ports as the real adapters keep them (a
local kube-apiserver, Postgres), as the controller reads them (from its watch store, writing to
the API server) and as the in-memory fakes in ``tests/fakes`` do. Every test runs against each,
so a fake or a cache that drifts from the real thing fails here, not in a unit test that
trusted it (controller-runtime keeps its fake client honest the same way)."""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from sqlalchemy.exc import StatementError

from minds.adapters.ledger import Ledger
from minds.devenv.install import CONTROLLER_ACCOUNT, CONTROLLER_NAMESPACE
from minds.domain.beliefs import (
    BELIEF_EVIDENCE_ADDED,
    PredictionRecord,
    PredictionStatus,
    updated_confidence,
)
from minds.domain.errors import AlreadyExists, Conflict, NotFound
from minds.domain.executions import (
    ExecutionOrigin,
    ExecutionOutcome,
    ExecutionRecord,
    ExecutionStatus,
)
from minds.domain.intentions import (
    INTENTION_FORMED,
    INTENTION_UPDATED,
    IntentionKind,
    IntentionRecord,
    IntentionStatus,
    intention_event_type,
    intention_id,
)
from minds.domain.ledger import EventRecord, MindChange, MindRecord, SubjectRef
from minds.domain.procedures import PROCEDURE_STORED, ProceduralMemory
from minds.domain.resources.kinds import APPROVAL, PLAN
from minds.domain.series import (
    CUT_EVERY,
    SERIES_CLOSED,
    SERIES_CUT,
    SERIES_EVENTS,
    SeriesKind,
    cycle,
    recorded,
    series_from_row,
)
from minds.engine.ports import ResourcePort
from minds.engine.promises import Promises
from minds.engine.series import note
from tests.e2e.test_status_guard import approval_body
from tests.fakes.ledger import FakeLedger
from tests.fakes.resources import FakeResources
from tests.fixtures.cluster import Cluster
from tests.unit.test_series import look, running

NOW = datetime(2026, 1, 1, tzinfo=UTC)


# -- the two implementations ---------------------------------------------------------------


# The real halves carry the marks of the services they need, so `make test-fast` can run the
# fakes' half alone (-m "not e2e and not integration") and `make test-services` the rest.
@pytest.fixture(
    params=[
        pytest.param("kube-apiserver", marks=pytest.mark.e2e),
        pytest.param("watch store", marks=pytest.mark.e2e),
        "fake",
    ]
)
def resources(request: pytest.FixtureRequest) -> tuple[ResourcePort, str]:
    if request.param == "fake":
        return FakeResources(), "contract"
    from minds.adapters.kube.client import KubeResources, api_client
    from minds.adapters.kube.watched import WatchedResources, WatchStore

    cluster: Cluster = request.getfixturevalue("cluster")
    namespace: str = request.getfixturevalue("namespace")
    # The suite writes Plans as a controller would: no controller may write them meanwhile.
    request.getfixturevalue("no_controller_in_module")
    api = KubeResources(api_client(str(cluster.controller_kubeconfig)))
    if request.param == "watch store":
        # Fed only by its own writes here (no watch runs): everything read comes from them.
        return WatchedResources(WatchStore([PLAN.plural]), api), namespace
    return api, namespace


@pytest.fixture(params=[pytest.param("postgres", marks=pytest.mark.integration), "fake"])
def ledger(request: pytest.FixtureRequest) -> Iterator[Any]:
    if request.param == "fake":
        yield FakeLedger()
        return
    yield request.getfixturevalue("ledger")


def _plan(name: str, labels: dict[str, str] | None = None) -> dict[str, Any]:
    return {
        "metadata": {"name": name, "labels": labels or {}},
        "spec": {
            "objective": "keep atlas-worker running",
            "origin": "operator",
            # Who creates it on the real API server (admission checks it): the suite writes as
            # the controller does.
            "author": f"system:serviceaccount:{CONTROLLER_NAMESPACE}:{CONTROLLER_ACCOUNT}",
            "strategy": "authored",
            "mind": "keeper",
            "steps": [
                {
                    "key": "W1",
                    "title": "wait a little",
                    "kind": "wait",
                    "waitSeconds": 1,
                }
            ],
        },
    }


def _status(phase: str) -> dict[str, Any]:
    return {"phase": phase, "progress": "0/1"}


# -- resources -------------------------------------------------------------------------------


def test_create_sets_identity_and_no_status(resources: tuple[ResourcePort, str]) -> None:
    port, ns = resources
    created = port.create(PLAN, ns, {**_plan("one"), "status": _status("completed")})
    meta = created["metadata"]
    assert meta["uid"]
    assert meta["resourceVersion"]
    assert meta["generation"] == 1
    assert created["kind"] == "Plan"
    assert "status" not in created
    assert port.get(PLAN, ns, "one")["metadata"]["uid"] == meta["uid"]


def test_a_taken_name_already_exists(resources: tuple[ResourcePort, str]) -> None:
    port, ns = resources
    port.create(PLAN, ns, _plan("one"))
    with pytest.raises(AlreadyExists):
        port.create(PLAN, ns, _plan("one"))


def test_a_missing_object_is_not_found(resources: tuple[ResourcePort, str]) -> None:
    port, ns = resources
    with pytest.raises(NotFound):
        port.get(PLAN, ns, "nobody")
    ghost = {
        "apiVersion": "minds.dev/v1alpha1",
        "kind": "Plan",
        "metadata": {"name": "nobody", "namespace": ns, "resourceVersion": "1"},
    }
    with pytest.raises(NotFound):
        port.replace_status(PLAN, ghost, _status("executing"))


def test_a_status_write_is_conditional_on_the_resource_version(
    resources: tuple[ResourcePort, str],
) -> None:
    port, ns = resources
    read = port.create(PLAN, ns, _plan("one"))
    written = port.replace_status(PLAN, read, _status("executing"))
    assert written["status"]["phase"] == "executing"
    assert written["metadata"]["resourceVersion"] != read["metadata"]["resourceVersion"]
    with pytest.raises(Conflict):
        port.replace_status(PLAN, read, _status("failed"))  # stale: someone wrote since
    assert port.get(PLAN, ns, "one")["status"]["phase"] == "executing"


def test_an_approval_reads_pending_from_its_creation(
    resources: tuple[ResourcePort, str],
) -> None:
    """No status write is needed to show a fresh Approval Pending: its schema's default."""
    port, ns = resources
    created = port.create(APPROVAL, ns, approval_body(ns, "ask"))
    assert created["status"] == {"phase": "Pending"}
    assert port.get(APPROVAL, ns, "ask")["status"] == {"phase": "Pending"}


def test_a_status_write_changes_only_the_status(resources: tuple[ResourcePort, str]) -> None:
    port, ns = resources
    read = port.create(PLAN, ns, _plan("one"))
    edited = {**read, "spec": {**read["spec"], "objective": "something else"}}
    port.replace_status(PLAN, edited, _status("executing"))
    assert port.get(PLAN, ns, "one")["spec"]["objective"] == "keep atlas-worker running"


def test_a_spec_patch_is_a_merge_conditional_on_the_resource_version(
    resources: tuple[ResourcePort, str],
) -> None:
    port, ns = resources
    read = port.create(PLAN, ns, _plan("one"))
    written = port.patch_spec(PLAN, read, {"supersededBy": "one-r2"})
    assert written["spec"]["supersededBy"] == "one-r2"
    assert written["spec"]["objective"] == "keep atlas-worker running"  # the rest is kept
    assert written["metadata"]["generation"] == 2
    with pytest.raises(Conflict):
        port.patch_spec(PLAN, read, {"supersededBy": "another"})  # stale: someone wrote since
    assert port.get(PLAN, ns, "one")["spec"]["supersededBy"] == "one-r2"


def test_writing_the_same_status_again_keeps_the_version(
    resources: tuple[ResourcePort, str],
) -> None:
    port, ns = resources
    written = port.replace_status(PLAN, port.create(PLAN, ns, _plan("one")), _status("executing"))
    again = port.replace_status(PLAN, written, _status("executing"))
    assert again["metadata"]["resourceVersion"] == written["metadata"]["resourceVersion"]


def test_what_is_read_is_a_copy(resources: tuple[ResourcePort, str]) -> None:
    port, ns = resources
    port.create(PLAN, ns, _plan("one"))
    read = port.get(PLAN, ns, "one")
    read["spec"]["objective"] = "changed in hand"
    assert port.get(PLAN, ns, "one")["spec"]["objective"] == "keep atlas-worker running"


@pytest.mark.parametrize(
    ("selector", "expected"),
    [
        (None, ["a", "b", "c"]),
        ("team=sre", ["a", "b"]),
        ("team==sre,tier=web", ["a"]),
        ("team!=sre", ["c"]),
        ("tier", ["a", "c"]),
        ("!tier", ["b"]),
        ("team=nobody", []),
    ],
)
def test_list_filters_by_label_selector(
    resources: tuple[ResourcePort, str], selector: str | None, expected: list[str]
) -> None:
    port, ns = resources
    port.create(PLAN, ns, _plan("a", {"team": "sre", "tier": "web"}))
    port.create(PLAN, ns, _plan("b", {"team": "sre"}))
    port.create(PLAN, ns, _plan("c", {"team": "dev", "tier": "db"}))
    listed = port.list(PLAN, ns, selector)
    assert sorted(item["metadata"]["name"] for item in listed) == expected
    assert all(item["kind"] == "Plan" for item in listed)


def test_select_keeps_what_matches_as_list_has_it_and_copies_it(
    resources: tuple[ResourcePort, str],
) -> None:
    port, ns = resources
    for name, team in (("a", "sre"), ("b", "dev"), ("c", "sre")):
        port.create(PLAN, ns, _plan(name, {"team": team}))
    seen: list[str] = []

    def sre(body: Any) -> bool:
        seen.append(body["metadata"]["name"])
        return bool(body["metadata"].get("labels", {}).get("team") == "sre")

    kept = port.select(PLAN, ns, sre)
    assert sorted(seen) == ["a", "b", "c"]  # every object of the namespace is asked about
    listed = {item["metadata"]["name"]: item for item in port.list(PLAN, ns, "team=sre")}
    assert {item["metadata"]["name"]: item for item in kept} == listed
    assert all(item["kind"] == "Plan" for item in kept)
    kept[0]["spec"]["objective"] = "changed in hand"
    assert port.get(PLAN, ns, kept[0]["metadata"]["name"])["spec"]["objective"] == (
        "keep atlas-worker running"
    )
    assert port.select(PLAN, ns, lambda body: False) == []


def test_delete_removes_only_the_incarnation_named(resources: tuple[ResourcePort, str]) -> None:
    port, ns = resources
    # The controller deletes only finished plans (controller-plan-deletion-policy.yaml).
    first = port.replace_status(PLAN, port.create(PLAN, ns, _plan("one")), _status("completed"))
    port.delete(PLAN, ns, "one", first["metadata"]["uid"])
    with pytest.raises(NotFound):
        port.get(PLAN, ns, "one")
    port.delete(PLAN, ns, "one", first["metadata"]["uid"])  # gone already: not an error
    second = port.replace_status(PLAN, port.create(PLAN, ns, _plan("one")), _status("completed"))
    with pytest.raises(Conflict):
        port.delete(PLAN, ns, "one", first["metadata"]["uid"])
    assert port.get(PLAN, ns, "one")["metadata"]["uid"] == second["metadata"]["uid"]


# -- the ledger --------------------------------------------------------------------------------


def _row(uid: str, key: str, **payload: Any) -> EventRecord:
    return EventRecord(
        mind="keeper",
        namespace="contract",
        type="plan_step_started",
        subject=SubjectRef(kind="Plan", name="p", uid=uid),
        payload=payload,
        occurred_at=NOW,
        idempotency_key=f"{uid}:{key}",
    )


def _unstorable(uid: str, key: str) -> EventRecord:
    """A row Postgres refuses: NUL in a text column that no masking step rewrites (a payload's
    NUL is shown as a symbol before it is stored, so it no longer fails a row)."""
    row = _row(uid, key)
    return row.model_copy(update={"subject": SubjectRef(kind="Plan", name="nul \x00", uid=uid)})


def test_appending_is_idempotent_by_key(ledger: Any) -> None:
    uid = str(uuid.uuid4())
    assert ledger.append_events([_row(uid, "a"), _row(uid, "b")]) == [True, True]
    assert ledger.append_events([_row(uid, "b"), _row(uid, "c")]) == [False, True]
    assert ledger.append_event(_row(uid, "a")) is False
    assert sorted(e.idempotency_key for e in ledger.events(subject_uid=uid)) == [
        f"{uid}:a",
        f"{uid}:b",
        f"{uid}:c",
    ]


def test_a_key_twice_in_one_batch_is_written_once(ledger: Any) -> None:
    uid = str(uuid.uuid4())
    assert ledger.append_events([_row(uid, "a"), _row(uid, "a")]) == [True, False]
    assert len(ledger.events(subject_uid=uid)) == 1


def test_a_batch_is_all_or_nothing(ledger: Any) -> None:
    uid = str(uuid.uuid4())
    with pytest.raises((ValueError, StatementError)):
        ledger.append_events([_row(uid, "a"), _unstorable(uid, "b")])
    assert ledger.events(subject_uid=uid) == []
    assert ledger.append_events([_row(uid, "a")]) == [True]


def test_secrets_are_masked_before_they_are_stored(ledger: Any) -> None:
    uid = str(uuid.uuid4())
    ledger.append_events([_row(uid, "a", token="password=hunter2hunter2")])
    (stored,) = ledger.events(subject_uid=uid)
    assert "hunter2" not in str(stored.payload)


def _intention(uid: str) -> IntentionRecord:
    return IntentionRecord(
        id=intention_id("contract", uid),
        namespace="contract",
        mind="keeper",
        objective="keep atlas-worker running",
        kind=IntentionKind.ACTION,
        created_at=NOW,
        updated_at=NOW,
    )


def test_a_transaction_is_all_or_nothing_across_roles(ledger: Any) -> None:
    uid = str(uuid.uuid4())
    intention = _intention(uid)

    def half_done() -> None:
        with ledger.transaction():
            ledger.append_events([_row(uid, "a")])
            ledger.form_intention(intention)
            ledger.transition_intention(intention.id, IntentionStatus.BLOCKED, "asked", NOW)
            raise RuntimeError("the step's write did not land after all")

    with pytest.raises(RuntimeError):
        half_done()
    assert ledger.events(subject_uid=uid) == []
    assert ledger.intention(intention.id) is None
    with ledger.transaction():
        assert ledger.append_events([_row(uid, "a")]) == [True]
        ledger.form_intention(intention)
        ledger.transition_intention(intention.id, IntentionStatus.BLOCKED, "asked", NOW)
        with ledger.transaction():  # a transaction inside one is part of it
            ledger.append_events([_row(uid, "b")])
    assert [e.idempotency_key for e in ledger.events(subject_uid=uid)] == [f"{uid}:a", f"{uid}:b"]
    found = ledger.intention(intention.id)
    assert found is not None
    assert found.status is IntentionStatus.BLOCKED


def _write_ahead(uid: str, step: str = "S1") -> ExecutionRecord:
    origin = ExecutionOrigin(plan="p", plan_uid=uid, step=step, attempt=1)
    return ExecutionRecord(
        origin_key=origin.key(),
        mind="keeper",
        namespace="contract",
        capability="service.restart",
        target="contract/atlas-worker",
        origin=origin,
        started_at=NOW,
    )


def test_the_write_ahead_rows_are_there_if_and_only_if_the_write_ahead_row_is(
    ledger: Any,
) -> None:
    uid = str(uuid.uuid4())
    record = _write_ahead(uid)
    # Rows that cannot be stored take the write-ahead row down with them: nothing acts.
    with pytest.raises((ValueError, StatementError)):
        ledger.begin_execution(record, lambda row: [_unstorable(uid, "bad")])
    assert ledger.execution(record.origin_key) is None
    assert ledger.events(subject_uid=uid) == []
    row, new = ledger.begin_execution(record, lambda row: [_row(uid, "a", execution=row.id)])
    assert new
    assert [e.payload["execution"] for e in ledger.events(subject_uid=uid)] == [row.id]
    # A replay finds the row and tells nothing again.
    again, new = ledger.begin_execution(record, lambda row: [_row(uid, "again")])
    assert (again.id, new) == (row.id, False)
    assert [e.idempotency_key for e in ledger.events(subject_uid=uid)] == [f"{uid}:a"]


def test_an_outcome_and_its_rows_are_one_transaction(ledger: Any) -> None:
    uid = str(uuid.uuid4())
    row, _ = ledger.begin_execution(_write_ahead(uid))
    outcome = ExecutionOutcome(
        execution_id=row.id, status=ExecutionStatus.EXECUTED, summary="done", finished_at=NOW
    )
    with pytest.raises((ValueError, StatementError)):
        ledger.finish_execution(outcome, [_unstorable(uid, "bad")])
    assert ledger.execution(row.origin_key)[1] is None
    assert ledger.finish_execution(outcome, [_row(uid, "done")]) is True
    assert ledger.finish_execution(outcome, [_row(uid, "twice")]) is False
    assert [e.idempotency_key for e in ledger.events(subject_uid=uid)] == [f"{uid}:done"]
    assert ledger.execution(row.origin_key)[1].summary == "done"


def test_an_origin_key_executes_once(ledger: Any) -> None:
    record = _write_ahead(str(uuid.uuid4()))
    origin = record.origin
    first, new = ledger.begin_execution(record)
    again, second = ledger.begin_execution(record)
    assert (new, second) == (True, False)
    assert again.id == first.id
    assert ledger.execution(origin.key()) == (again, None)
    outcome = ExecutionOutcome(
        execution_id=first.id,
        status=ExecutionStatus.EXECUTED,
        summary="restart requested",
        finished_at=NOW,
    )
    assert ledger.finish_execution(outcome) is True
    assert ledger.finish_execution(outcome) is False
    found = ledger.execution(origin.key())
    assert found is not None
    assert found[1] is not None
    assert found[1].status is ExecutionStatus.EXECUTED
    assert ledger.execution("no-such-key") is None


def test_a_targets_lock_has_one_holder_at_a_time(ledger: Any) -> None:
    target = f"contract/{uuid.uuid4()}"
    with ledger.target_lock("contract", target) as first:
        with ledger.target_lock("contract", target) as second:
            assert first
            assert not second  # another holder (another controller) is refused, not queued
        with ledger.target_lock("contract", f"{target}-other") as elsewhere:
            assert elsewhere
    with ledger.target_lock("contract", target) as again:
        assert again  # released with the block


def test_the_verified_writes_on_a_target_are_those_an_observation_confirmed(ledger: Any) -> None:
    uid = str(uuid.uuid4())
    target = f"contract/{uid}"
    record = _write_ahead(uid).model_copy(update={"target": target})
    stored, _ = ledger.begin_execution(record)
    assert ledger.verified_writes_on("contract", target, NOW) == []  # nobody looked yet
    belief = ledger.upsert_belief("contract", "keeper", f"{target} runs", 0.8, NOW)
    prediction = PredictionRecord(
        id=f"pred-{uid}",
        namespace="contract",
        mind="keeper",
        plan="p",
        step="S1",
        execution_id=stored.id,
        belief_id=belief.id,
        criteria={"field": "state"},
        confidence=0.8,
        window_start=NOW,
        window_end=NOW + timedelta(minutes=1),
    )
    ledger.open_prediction(prediction)
    ledger.resolve_prediction(prediction.id, PredictionStatus.CONFIRMED, NOW, None)
    assert [w.id for w in ledger.verified_writes_on("contract", target, NOW)] == [stored.id]
    assert ledger.verified_writes_on("contract", target, NOW + timedelta(seconds=1)) == []
    assert ledger.verified_writes_on("contract", f"{target}-other", NOW) == []


# -- the cycle's roles: wants, commitment states, conflicts, its lock, predictions -----------


def _want(want_id: str, status: str, strength: float = 0.5) -> dict[str, Any]:
    return {"id": want_id, "status": status, "strength": strength, "note": "token=hunter2hunter2"}


def test_a_want_is_stored_when_it_changes_and_told_each_time(ledger: Any) -> None:
    mind = f"keeper-{uuid.uuid4().hex[:8]}"
    first, second = f"want-{uuid.uuid4().hex}", f"want-{uuid.uuid4().hex}"

    def store(want_id: str, status: str, at: datetime) -> bool:
        return bool(
            ledger.upsert_want(
                namespace="contract",
                mind=mind,
                want_id=want_id,
                subject="contract/atlas-worker",
                status=status,
                strength=0.5,
                data=_want(want_id, status),
                at=at,
            )
        )

    assert store(first, "active", NOW)
    assert not store(first, "active", NOW + timedelta(seconds=1))  # nothing changed
    assert store(second, "active", NOW + timedelta(seconds=2))
    assert store(first, "satisfied", NOW + timedelta(seconds=3))
    assert [w["id"] for w in ledger.wants("contract", mind)] == [first, second]  # first stored
    assert [w["id"] for w in ledger.wants("contract", mind, "active")] == [second]
    assert ledger.wants("contract", "nobody") == []
    assert all("hunter2" not in str(w) for w in ledger.wants("contract", mind))
    told = [e.type for e in ledger.events(subject_uid=first)]
    assert told == ["want_derived", "want_satisfied"]


def test_a_commitment_state_moves_once_per_state(ledger: Any) -> None:
    mind = f"keeper-{uuid.uuid4().hex[:8]}"
    assert ledger.set_commitment_state("contract", mind, "nightly", "due", "it is time", NOW)
    assert not ledger.set_commitment_state("contract", mind, "nightly", "due", "again", NOW)
    later = NOW + timedelta(minutes=1)
    assert ledger.set_commitment_state("contract", mind, "nightly", "fulfilled", None, later)
    assert ledger.set_commitment_state("contract", mind, "weekly", "active", None, later)
    assert ledger.commitment_states("contract", mind) == {
        "nightly": "fulfilled",
        "weekly": "active",
    }
    told = [e.type for e in ledger.events(subject_uid=f"{mind}/nightly")]
    assert told == ["commitment_due", "commitment_fulfilled"]
    assert ledger.commitment_updated_at("contract", mind) == {"nightly": later, "weekly": later}


def test_a_conflict_is_kept_as_last_saved(ledger: Any) -> None:
    mind = f"keeper-{uuid.uuid4().hex[:8]}"
    conflict = f"conflict-{uuid.uuid4().hex}"
    ledger.save_conflict(
        namespace="contract", mind=mind, conflict_id=conflict, open_=True, data={"n": 1}, at=NOW
    )
    assert ledger.conflicts("contract", mind) == [{"n": 1}]
    ledger.save_conflict(
        namespace="contract", mind=mind, conflict_id=conflict, open_=False, data={"n": 2}, at=NOW
    )
    assert ledger.conflicts("contract", mind) == []
    assert ledger.conflicts("contract", mind, open_only=False) == [{"n": 2}]


def test_a_conflicts_data_is_masked_before_it_is_stored(ledger: Any) -> None:
    mind = f"keeper-{uuid.uuid4().hex[:8]}"
    conflict = f"conflict-{uuid.uuid4().hex}"
    quoted = {"wants": [{"subject": "atlas", "note": "password=hunter2hunter2"}], "token": "t0k"}
    ledger.save_conflict(
        namespace="contract", mind=mind, conflict_id=conflict, open_=True, data=quoted, at=NOW
    )
    [stored] = ledger.conflicts("contract", mind)
    assert "hunter2" not in str(stored)
    assert "t0k" not in str(stored)
    assert stored["wants"][0]["subject"] == "atlas"


def test_a_minds_cycle_lock_has_one_holder_at_a_time(ledger: Any) -> None:
    mind = f"keeper-{uuid.uuid4().hex[:8]}"
    with ledger.cycle_lock("contract", mind) as first:
        with ledger.cycle_lock("contract", mind) as second:
            assert first
            assert not second  # another controller runs this mind's cycle: refused
        with ledger.cycle_lock("contract", f"{mind}-other") as elsewhere:
            assert elsewhere
    with ledger.cycle_lock("contract", mind) as again:
        assert again


def test_a_journal_is_held_only_inside_a_transaction(ledger: Any) -> None:
    uid = str(uuid.uuid4())
    with pytest.raises(RuntimeError, match="outside a transaction"):
        ledger.hold_journal("contract", "keeper")
    with ledger.transaction():
        ledger.hold_journal("contract", "keeper")
        # The holder itself appends as before (the lock is the one its appends take).
        assert ledger.append_event(_row(uid, "held"))
    assert ledger.event(_row(uid, "held").idempotency_key) is not None


def test_what_tells_of_a_transaction_runs_after_its_commit_and_never_after_a_rollback(
    ledger: Any,
) -> None:
    uid = str(uuid.uuid4())
    seen: list[str] = []
    ledger.after_commit(lambda: seen.append("outside"))
    assert seen == ["outside"]
    with ledger.transaction():
        ledger.append_event(_row(uid, "told"))
        ledger.after_commit(lambda: seen.append("committed"))
        assert seen == ["outside"]  # not before the row is there for others to read
    assert seen == ["outside", "committed"]

    def fails() -> None:
        with ledger.transaction():
            ledger.append_event(_row(uid, "undone"))
            ledger.after_commit(lambda: seen.append("rolled back"))
            raise RuntimeError("fails")

    with pytest.raises(RuntimeError):
        fails()
    assert seen == ["outside", "committed"]
    assert ledger.event(_row(uid, "undone").idempotency_key) is None


def test_predictions_are_read_by_their_windows_and_status(ledger: Any) -> None:
    mind = f"keeper-{uuid.uuid4().hex[:8]}"
    belief = ledger.upsert_belief("contract", mind, "contract/atlas-worker runs", 0.8, NOW)
    assert ledger.belief(belief.id) == belief
    assert ledger.belief("belief-nobody") is None

    def opened(key: str, minutes: int) -> PredictionRecord:
        record = PredictionRecord(
            id=f"pred-{mind}-{key}",
            namespace="contract",
            mind=mind,
            plan="p",
            step=key,
            belief_id=belief.id,
            criteria={"field": "state"},
            confidence=0.8,
            window_start=NOW + timedelta(minutes=minutes),
            window_end=NOW + timedelta(minutes=minutes + 1),
        )
        return ledger.open_prediction(record)[0]

    late, early = opened("late", 5), opened("early", 1)
    ledger.resolve_prediction(early.id, PredictionStatus.REFUTED, NOW + timedelta(minutes=2), {})
    assert [p.id for p in ledger.predictions("contract", mind)] == [early.id, late.id]
    refuted = ledger.predictions("contract", mind, PredictionStatus.REFUTED)
    assert [p.id for p in refuted] == [early.id]
    assert ledger.prediction(late.id).status is PredictionStatus.OPEN
    assert ledger.prediction("pred-nobody") is None


def test_events_read_by_type_come_in_the_order_appended(ledger: Any) -> None:
    uid = str(uuid.uuid4())
    rows = [
        _row(uid, "a").model_copy(update={"type": "plan_step_started"}),
        _row(uid, "b").model_copy(update={"type": "plan_step_completed"}),
        _row(uid, "c").model_copy(update={"type": "plan_step_started"}),
    ]
    ledger.append_events(rows)
    types = ["plan_step_completed", "plan_step_started"]
    found = ledger.events(subject_uid=uid, type=types)
    assert [e.idempotency_key for e in found] == [f"{uid}:a", f"{uid}:b", f"{uid}:c"]
    assert ledger.event(f"{uid}:b").type == "plan_step_completed"
    assert ledger.event(f"{uid}:nothing") is None


def test_the_promises_of_earlier_mind_objects_are_read_alike(ledger: Any) -> None:
    """``minds.engine.promises`` reads the specs Mind objects registered, by type, mind and
    namespace: both ledgers give it the same rows, in the order appended."""
    mind = f"m-{uuid.uuid4().hex[:8]}"
    freeze = {"name": "freeze", "mode": "refrain", "capability": "service.restart",
              "revocable": False}  # fmt: skip

    def registered(uid: str, type_: str, minute: int, *commitments: Any) -> EventRecord:
        return EventRecord(
            mind=mind,
            namespace="contract",
            type=type_,
            subject=SubjectRef(kind="Mind", name=mind, uid=uid),
            payload={"spec": {"commitments": list(commitments)}},
            occurred_at=NOW + timedelta(minutes=minute),
            idempotency_key=f"{mind}:{uid}:{type_}:{minute}",
        )

    ledger.append_events(
        [
            registered("u1", "mind_registered", 0),
            registered("u1", "mind_updated", 1, freeze),
            registered("u2", "mind_registered", 2, {**freeze, "target": "db-*"}),
            registered("u3", "mind_registered", 3),
        ]
    )
    [promise] = Promises(ledger).earlier("contract", mind, "u3").promises
    assert (promise.name, promise.target) == ("freeze", "*")  # u1 made it, a minute in
    assert "uid u1" in promise.kept_from
    # Each object keeps what the others made (u2 declared it again, with other terms).
    assert [p.target for p in Promises(ledger).earlier("contract", mind, "u2").promises] == ["*"]


def test_a_resolved_prediction_is_evidence_about_its_belief_once(ledger: Any) -> None:
    mind = f"keeper-{uuid.uuid4().hex[:8]}"
    belief = ledger.upsert_belief("contract", mind, "contract/atlas-worker runs", 0.8, NOW)

    def resolved(key: str, status: PredictionStatus) -> Any:
        record = PredictionRecord(
            id=f"pred-{mind}-{key}",
            namespace="contract",
            mind=mind,
            plan="p",
            step=key,
            belief_id=belief.id,
            criteria={"field": "state"},
            confidence=0.8,
            window_start=NOW,
            window_end=NOW + timedelta(minutes=1),
        )
        ledger.open_prediction(record)
        ledger.resolve_prediction(record.id, status, NOW + timedelta(minutes=1), {})
        ledger.resolve_prediction(record.id, status, NOW + timedelta(minutes=2), {})  # again
        [after] = ledger.beliefs("contract", mind)
        return after

    refuted = resolved("refuted", PredictionStatus.REFUTED)
    assert (refuted.evidence_for, refuted.evidence_against) == (0, 1)
    assert refuted.confidence < belief.confidence
    expired = resolved("expired", PredictionStatus.EXPIRED)  # an unread window tells nothing
    assert expired.confidence == refuted.confidence
    confirmed = resolved("confirmed", PredictionStatus.CONFIRMED)
    assert (confirmed.evidence_for, confirmed.evidence_against) == (1, 1)
    assert confirmed.confidence > refuted.confidence


# -- the ledger's other roles: minds, reads by filter, evidence, procedures, decisions --------

SECRET = "password=hunter2hunter2"


def _mind(name: str, uid: str, generation: int, at: datetime, **spec: Any) -> MindRecord:
    return MindRecord(
        namespace="contract",
        name=name,
        uid=uid,
        generation=generation,
        spec=spec,
        registered_at=at,
        updated_at=at,
    )


def test_a_minds_row_only_moves_forward(ledger: Any) -> None:
    name = f"keeper-{uuid.uuid4().hex[:8]}"
    first = ledger.upsert_mind(_mind(name, "u1", 1, NOW, note=SECRET))
    assert first.change is MindChange.REGISTERED
    assert "hunter2" not in str(first.record.spec)
    # The secret is masked before the comparison, so a replay of the same spec is no change.
    replay = ledger.upsert_mind(_mind(name, "u1", 1, NOW + timedelta(minutes=1), note=SECRET))
    assert (replay.change, replay.record) == (MindChange.UNCHANGED, first.record)
    later = NOW + timedelta(minutes=2)
    newer = ledger.upsert_mind(_mind(name, "u1", 2, later, goal="keep atlas-worker running"))
    assert newer.change is MindChange.UPDATED
    assert (newer.record.generation, newer.record.spec) == (
        2,
        {"goal": "keep atlas-worker running"},
    )
    assert (newer.record.registered_at, newer.record.updated_at) == (NOW, later)
    stale = ledger.upsert_mind(_mind(name, "u1", 1, later + timedelta(minutes=1), goal="old"))
    assert (stale.change, stale.record) == (MindChange.UNCHANGED, newer.record)
    edited = ledger.upsert_mind(_mind(name, "u1", 2, later, goal="keep atlas-db running"))
    assert edited.change is MindChange.UPDATED  # the same generation with another spec


def test_a_mind_is_marked_deleted_once_and_only_in_the_incarnation_named(ledger: Any) -> None:
    name = f"keeper-{uuid.uuid4().hex[:8]}"
    ledger.upsert_mind(_mind(name, "u1", 1, NOW))
    gone = NOW + timedelta(minutes=1)
    assert ledger.mark_mind_deleted("contract", "nobody", None, gone) is False
    assert ledger.mark_mind_deleted("contract", name, "u0", gone) is False  # an older incarnation
    assert ledger.mark_mind_deleted("contract", name, "u1", gone) is True
    assert ledger.mark_mind_deleted("contract", name, "u1", gone) is False
    assert ledger.mark_mind_deleted("contract", name, None, gone) is False
    # A late observation of the deleted incarnation does not bring it back.
    late = ledger.upsert_mind(_mind(name, "u1", 2, gone + timedelta(minutes=1)))
    assert (late.change, late.record.generation, late.record.deleted_at) == (
        MindChange.UNCHANGED,
        1,
        gone,
    )
    # Nor does one of a new incarnation older than what is stored.
    older = ledger.upsert_mind(_mind(name, "u2", 1, NOW - timedelta(minutes=1)))
    assert (older.change, older.record.uid) == (MindChange.UNCHANGED, "u1")
    again_at = gone + timedelta(minutes=2)
    again = ledger.upsert_mind(_mind(name, "u2", 1, again_at))
    assert again.change is MindChange.REGISTERED
    assert (again.record.uid, again.record.registered_at, again.record.deleted_at) == (
        "u2",
        again_at,
        None,
    )
    assert ledger.mark_mind_deleted("contract", name, None, again_at) is True  # whichever is there


def test_executions_are_read_in_the_order_begun_by_each_filter(ledger: Any) -> None:
    uid = str(uuid.uuid4())

    def begun(step: str, **fields: Any) -> int:
        record = _write_ahead(uid, step).model_copy(update=fields)
        stored, new = ledger.begin_execution(record)
        assert new
        return int(stored.id)

    first = begun("S1", parameters={"token": SECRET})
    elsewhere = begun("S2", namespace="elsewhere")
    watcher = begun("S3", mind="watcher", capability="service.status")
    last = begun("S4")
    ledger.begin_execution(_write_ahead(uid, "S1"))  # a replay adds no row

    def ids(**filters: str) -> list[int]:
        return [e.id for e in ledger.executions(**filters)]

    assert ids() == [first, elsewhere, watcher, last]
    assert ids(namespace="contract") == [first, watcher, last]
    assert ids(mind="watcher") == [watcher]
    assert ids(capability="service.restart") == [first, elsewhere, last]
    assert ids(namespace="contract", capability="service.restart") == [first, last]
    assert ids(namespace="nowhere") == []
    assert "hunter2" not in str(ledger.executions()[0].parameters)


def test_intentions_are_read_oldest_first_by_each_filter(ledger: Any) -> None:
    mind = f"keeper-{uuid.uuid4().hex[:8]}"

    def formed(key: str, minute: int, **fields: Any) -> str:
        at = NOW + timedelta(minutes=minute)
        update = {"mind": mind, "created_at": at, "updated_at": at, **fields}
        return str(
            ledger.form_intention(_intention(f"{mind}-{key}").model_copy(update=update))[0].id
        )

    # Formed in another order than created: the parent must be in the ledger before its child.
    parent = formed("parent", 2, means_parameters={"token": SECRET})
    older = formed("older", 0, parent_id=parent)
    watcher = formed("watcher", 1, mind="watcher")
    elsewhere = formed("elsewhere", 3, namespace="elsewhere")
    child = formed("child", 4, parent_id=parent)
    asked = (IntentionStatus.BLOCKED, f"asked with {SECRET}", NOW + timedelta(minutes=5))
    blocked = ledger.transition_intention(child, *asked)
    # The reason is masked before it is compared, so asking again is a replay.
    assert ledger.transition_intention(child, *asked).version == blocked.version

    def ids(**filters: Any) -> list[str]:
        return [i.id for i in ledger.intentions(**filters)]

    assert ids() == [older, watcher, parent, elsewhere, child]
    assert ids(namespace="contract", mind=mind) == [older, parent, child]
    assert ids(mind="watcher") == [watcher]
    assert ids(namespace="elsewhere") == [elsewhere]
    assert ids(parent_id=parent) == [older, child]
    assert ids(status=IntentionStatus.BLOCKED) == [child]
    assert ids(status=IntentionStatus.ACTIVE, parent_id=parent) == [older]
    assert ids(namespace="nowhere") == []
    stored = {i.id: i for i in ledger.intentions(mind=mind)}
    assert "hunter2" not in str(stored[parent].means_parameters)
    assert "hunter2" not in str(stored[child].reason)


def test_intentions_are_read_by_any_of_several_statuses(ledger: Any) -> None:
    mind = f"keeper-{uuid.uuid4().hex[:8]}"
    ids = []
    for n, status in enumerate((IntentionStatus.BLOCKED, None, IntentionStatus.SUSPENDED)):
        at = NOW + timedelta(minutes=n)
        formed, _ = ledger.form_intention(
            _intention(f"{mind}-{n}").model_copy(
                update={"mind": mind, "created_at": at, "updated_at": at}
            )
        )
        if status is not None:
            ledger.transition_intention(formed.id, status, "why", at)
        ids.append(formed.id)
    blocked, active, suspended = ids

    def read(status: Any) -> list[str]:
        return [i.id for i in ledger.intentions(mind=mind, status=status)]

    assert read({IntentionStatus.BLOCKED, IntentionStatus.ACTIVE}) == [blocked, active]
    assert read(IntentionStatus.SUSPENDED) == [suspended]
    assert read(frozenset()) == []
    assert read(None) == [blocked, active, suspended]


def test_an_intention_update_changes_only_what_is_given_and_once(ledger: Any) -> None:
    formed, _ = ledger.form_intention(_intention(str(uuid.uuid4())))
    minute = timedelta(minutes=1)
    planned = ledger.update_intention(formed.id, plan="p-r1", at=NOW + minute)
    assert (planned.plan, planned.replans, planned.failed_strategies) == ("p-r1", 0, [])
    assert (planned.version, planned.updated_at, planned.created_at) == (2, NOW + minute, NOW)
    # The values it has already: a replay writes nothing, not even the time.
    assert ledger.update_intention(formed.id, plan="p-r1", replans=0, at=NOW + 2 * minute) == (
        planned
    )
    replanned = ledger.update_intention(
        formed.id, replans=1, failed_strategies=["authored"], at=NOW + 3 * minute
    )
    assert (replanned.plan, replanned.replans, replanned.failed_strategies) == (
        "p-r1",
        1,
        ["authored"],
    )
    cleared = ledger.update_intention(formed.id, plan=None, at=NOW + 4 * minute)
    assert (cleared.plan, cleared.replans, cleared.version) == (None, 1, 4)
    assert ledger.intention(formed.id) == cleared
    with pytest.raises(ValueError, match="negative"):
        ledger.update_intention(formed.id, replans=-1, at=NOW + 5 * minute)
    with pytest.raises(NotFound):
        ledger.update_intention(intention_id("contract", "nobody"), plan="p", at=NOW)
    assert ledger.intention(formed.id) == cleared
    # Each change is told once, with only what moved; the replay and the refusals tell nothing.
    told = ledger.events(subject_uid=formed.id, type=INTENTION_UPDATED)
    assert [(e.payload, e.occurred_at) for e in told] == [
        ({"version": 2, "changed": {"plan": "p-r1"}}, NOW + minute),
        ({"version": 3, "changed": {"replans": 1, "failed_strategies": ["authored"]}},
         NOW + 3 * minute),
        ({"version": 4, "changed": {"plan": None}}, NOW + 4 * minute),
    ]  # fmt: skip


def test_forming_and_moving_an_intention_are_told_once_each(ledger: Any) -> None:
    """What the ledger's event chain says of an intention's life: formed at version 1 with
    what it is, each move with where from and to, a replay nothing; a version other than 1 or
    a parent the ledger does not hold is refused and tells nothing."""
    record = _intention(str(uuid.uuid4()))
    formed, new = ledger.form_intention(record)
    assert new
    assert formed.version == 1
    assert ledger.form_intention(record) == (formed, False)
    later = NOW + timedelta(minutes=1)
    blocked = ledger.transition_intention(formed.id, IntentionStatus.BLOCKED, "waits", later)
    assert ledger.transition_intention(formed.id, IntentionStatus.BLOCKED, "waits", later) == (
        blocked
    )
    told = ledger.events(subject_uid=formed.id)
    assert [(e.type, e.payload.get("version"), e.occurred_at) for e in told] == [
        (INTENTION_FORMED, 1, NOW),
        (intention_event_type(IntentionStatus.BLOCKED), 2, later),
    ]
    assert told[0].payload["status"] == IntentionStatus.ACTIVE.value
    assert {k: told[1].payload[k] for k in ("from", "to", "reason")} == {
        "from": IntentionStatus.ACTIVE.value,
        "to": IntentionStatus.BLOCKED.value,
        "reason": "waits",
    }
    with pytest.raises(ValueError, match="formed at version 1"):
        ledger.form_intention(_intention(str(uuid.uuid4())).model_copy(update={"version": 2}))
    orphan = _intention(str(uuid.uuid4())).model_copy(
        update={"parent_id": intention_id("contract", "nobody")}
    )
    with pytest.raises(Exception, match=r"(?i)parent|foreign key"):
        ledger.form_intention(orphan)
    assert ledger.intention(orphan.id) is None
    assert ledger.events(subject_uid=orphan.id) == []


def test_evidence_moves_a_belief_once_per_key(ledger: Any) -> None:
    mind = f"keeper-{uuid.uuid4().hex[:8]}"
    belief = ledger.upsert_belief("contract", mind, "contract/atlas-worker runs", 0.8, NOW)
    other = ledger.upsert_belief("contract", mind, "contract/atlas-db runs", 0.8, NOW)
    later = NOW + timedelta(minutes=1)

    def add(belief_id: str, key: str, supports: bool, weight: float = 1.0) -> Any:
        return ledger.add_evidence(
            belief_id, supports=supports, weight=weight, key=f"{mind}:{key}", at=later, note=SECRET
        )

    against = add(belief.id, "seen", supports=False)
    assert (against.evidence_for, against.evidence_against) == (0, 1)
    assert (against.confidence, against.updated_at) == (updated_confidence(0.8, False), later)
    assert add(belief.id, "seen", supports=True) == against  # a replay adds nothing
    # The key names the piece across the ledger: told of another belief, it adds nothing there.
    assert add(other.id, "seen", supports=True) == other
    assert ledger.belief(other.id) == other
    half = add(belief.id, "half", supports=True, weight=0.5)
    assert (half.evidence_for, half.evidence_against) == (1, 1)
    assert half.confidence == updated_confidence(against.confidence, True, 0.5)
    assert ledger.belief(belief.id) == half
    with pytest.raises(NotFound):
        add("bel-nobody", "nobody", supports=True)
    # Each piece that moved a belief is told once, with its note masked.
    told = ledger.events(subject_uid=belief.id, type=BELIEF_EVIDENCE_ADDED)
    assert [(e.payload["key"], e.payload["confidence_after"]) for e in told] == [
        (f"{mind}:seen", against.confidence),
        (f"{mind}:half", half.confidence),
    ]
    assert all("hunter2" not in str(e.payload) for e in told)
    assert ledger.events(subject_uid=other.id, type=BELIEF_EVIDENCE_ADDED) == []


def _procedure(mind: str, key: str, subject: str, minute: int, text: str) -> ProceduralMemory:
    return ProceduralMemory(
        id=f"proc-{mind}-{key}",
        namespace="contract",
        mind=mind,
        subject=subject,
        text=text,
        confidence=0.8,
        plan="p",
        revision=1,
        created_at=NOW + timedelta(minutes=minute),
    )


def test_a_procedure_is_stored_once_and_read_oldest_first(ledger: Any) -> None:
    mind = f"keeper-{uuid.uuid4().hex[:8]}"
    worker, db = "contract/atlas-worker", "contract/atlas-db"
    late = _procedure(mind, "late", worker, 2, f"To restart atlas-worker: log in with {SECRET}")
    assert ledger.store_procedure(late) is True
    assert ledger.store_procedure(late.model_copy(update={"text": "another lesson"})) is False
    # Stored in another order than made; two made at once come by id.
    assert ledger.store_procedure(_procedure(mind, "b", db, 1, "restart atlas-db"))
    assert ledger.store_procedure(_procedure(mind, "a", worker, 1, "restart atlas-worker"))
    assert ledger.store_procedure(_procedure("watcher", "w", worker, 0, "look at it"))
    read = ledger.procedures("contract", mind)
    assert [p.id for p in read] == [f"proc-{mind}-a", f"proc-{mind}-b", late.id]
    assert [p.id for p in ledger.procedures("contract", mind, worker)] == [
        f"proc-{mind}-a",
        late.id,
    ]
    assert ledger.procedures("elsewhere", mind) == []
    stored = read[-1]
    assert "hunter2" not in stored.text
    assert stored.text.startswith("To restart atlas-worker")  # the first write stands
    assert stored == late.model_copy(update={"text": stored.text})
    [told] = ledger.events(subject_uid=late.id)  # once: the refused second write tells nothing
    assert (told.type, told.occurred_at) == (PROCEDURE_STORED, late.created_at)
    assert told.payload["subject"] == worker
    assert "hunter2" not in str(told.payload)


def test_decisions_are_recorded_once_and_read_in_the_order_made(ledger: Any) -> None:
    mind = f"keeper-{uuid.uuid4().hex[:8]}"

    def record(key: str, kind: str, outcome: str, subjects: dict[str, str], **where: Any) -> bool:
        return bool(
            ledger.record_decision(
                namespace=where.get("namespace", "contract"),
                mind=where.get("mind", mind),
                kind=kind,
                outcome=outcome,
                subjects=subjects,
                data={"reason": f"asked with {SECRET}", "score": 0.5},
                at=NOW + timedelta(minutes=where.get("minute", 0)),
                key=f"{mind}:{key}",
            )
        )

    # Made in another order than their times say: the order made is the order read.
    assert record("a", "want", "derived", {"want": "w1"}, minute=2)
    assert not record("a", "want", "dropped", {"want": "w2"})  # a replay: the first stands
    assert record("b", "intention", "formed", {"want": "w1", "intention": "i1"}, minute=1)
    assert record("c", "want", "derived", {"want": "w2"}, mind="watcher")
    assert record("d", "want", "derived", {"want": "w1"}, namespace="elsewhere")

    def read(**filters: Any) -> list[tuple[str, str, str]]:
        found = ledger.decisions(namespace=filters.pop("namespace", "contract"), **filters)
        return [(d.mind, d.kind, d.outcome) for d in found]

    made = ledger.decisions(namespace="contract", mind=mind)
    assert [(d.kind, d.outcome, d.subjects) for d in made] == [
        ("want", "derived", {"want": "w1"}),
        ("intention", "formed", {"want": "w1", "intention": "i1"}),
    ]
    assert made[0].id < made[1].id
    assert [d.decided_at for d in made] == [NOW + timedelta(minutes=2), NOW + timedelta(minutes=1)]
    assert all(d.data["score"] == 0.5 and "hunter2" not in str(d.data) for d in made)
    assert read() == [
        (mind, "want", "derived"),
        (mind, "intention", "formed"),
        ("watcher", "want", "derived"),
    ]
    assert read(kind="intention") == [(mind, "intention", "formed")]
    assert read(subject=("want", "w1")) == [
        (mind, "want", "derived"),
        (mind, "intention", "formed"),
    ]
    assert read(subject=("want", "w2")) == [("watcher", "want", "derived")]
    assert read(subject=("intention", "w1")) == []  # the role is part of the subject
    assert read(namespace="elsewhere") == [(mind, "want", "derived")]
    assert read(namespace="nowhere") == []


def test_the_types_told_are_the_journals_in_the_order_appended(ledger: Any) -> None:
    """``FakeLedger.types`` is the fakes' shorthand for the types ``events`` reads (the real
    ledger has none): what it gives is what the real journal reads back."""
    uid, other = str(uuid.uuid4()), str(uuid.uuid4())
    ledger.append_events(
        [
            _row(uid, "a").model_copy(update={"type": "plan_step_started"}),
            _row(other, "b").model_copy(update={"type": "plan_started"}),
            _row(uid, "c").model_copy(update={"type": "plan_step_completed"}),
            _row(uid, "a").model_copy(update={"type": "plan_step_failed"}),  # a replay
        ]
    )

    def types(subject_uid: str | None = None) -> list[str]:
        if isinstance(ledger, FakeLedger):
            return ledger.types(subject_uid)
        return [e.type for e in ledger.events(subject_uid=subject_uid)]

    assert types(uid) == ["plan_step_started", "plan_step_completed"]
    assert types() == ["plan_step_started", "plan_started", "plan_step_completed"]
    assert types(str(uuid.uuid4())) == []


def test_a_ledger_that_answers_says_so(ledger: Any) -> None:
    assert ledger.answers() is True


@pytest.mark.integration
def test_a_ledger_whose_database_is_gone_says_so_without_raising() -> None:
    """A Mind's health asks it while the database is away: an answer, never an error."""
    with Ledger.from_url("postgresql://minds@127.0.0.1:1/minds") as gone:
        assert gone.answers() is False
    fake = FakeLedger()
    fake.down = True
    assert fake.answers() is False


# -- routine's series ---------------------------------------------------------------------------


def test_a_series_is_written_only_over_the_version_read(ledger: Any) -> None:
    opened = recorded(None, look(NOW)).series
    assert ledger.save_series(opened, replaces=None)
    assert not ledger.save_series(opened, replaces=None)  # one row per subject
    grown = recorded(opened, look(NOW + timedelta(minutes=1)))
    assert not ledger.save_series(grown.series, replaces=opened.version + 5)
    assert ledger.save_series(grown.series, replaces=grown.replaces)
    assert not ledger.save_series(grown.series, replaces=grown.replaces)  # moved since
    assert ledger.series("shop", "keeper") == [grown.series]


def test_a_series_step_and_its_rows_are_one_write(ledger: Any) -> None:
    current = recorded(None, look(NOW)).series
    ledger.save_series(current, replaces=None)
    every = CUT_EVERY // timedelta(minutes=1)
    for minute in range(1, every + 2):
        step = recorded(current, look(NOW + timedelta(minutes=minute)))
        assert ledger.save_series(step.series, replaces=step.replaces, told=step.rows)
        current = step.series
    [cut] = ledger.events(mind="keeper", type=SERIES_EVENTS)
    assert (cut.type, cut.payload["count"], cut.subject.uid) == (SERIES_CUT, every + 1, current.id)
    later = NOW + timedelta(minutes=every + 2)
    changed = recorded(current, look(later, result=running(restarts=1)))
    assert not ledger.save_series(changed.series, replaces=changed.replaces - 1, told=changed.rows)
    assert [e.type for e in ledger.events(mind="keeper", type=SERIES_EVENTS)] == [SERIES_CUT]

    def lost() -> None:
        with ledger.transaction():
            ledger.save_series(changed.series, replaces=changed.replaces, told=changed.rows)
            raise RuntimeError("the full record did not land")

    with pytest.raises(RuntimeError):
        lost()
    assert ledger.series("shop", "keeper") == [current]
    assert ledger.save_series(changed.series, replaces=changed.replaces, told=changed.rows)
    closed = ledger.events(mind="keeper", type=SERIES_CLOSED)
    assert [series_from_row(e).count for e in closed] == [every + 2]
    assert ledger.series("shop", "keeper") == [changed.series]


def test_a_thousand_identical_looks_make_one_series_of_a_thousand(ledger: Any) -> None:
    """Through the engine's recorder: one full record, then 999 writes in place."""
    full: list[datetime] = []

    def recording(at: datetime) -> Callable[[], bool]:
        return lambda: full.append(at) is None

    for n in range(1000):
        at = NOW + timedelta(seconds=60 * n)
        note(ledger, look(at), recording(at))
    [series] = ledger.series("shop", "keeper")
    assert (series.count, series.first_seen, full) == (1000, NOW, [NOW])
    assert series.last_seen == NOW + timedelta(seconds=60 * 999)
    # A cut every CUT_EVERY (four hours): 4 in 999 minutes, each naming how many it adds.
    cuts = ledger.events(mind="keeper", type=SERIES_CUT)
    assert len(cuts) == timedelta(seconds=60 * 999) // CUT_EVERY == 4
    assert sum(c.payload["sinceCut"] for c in cuts) == series.cut_count - 1


def test_series_are_read_by_kind_and_subject_and_keep_the_last_result_masked(
    ledger: Any,
) -> None:
    first = recorded(None, look(NOW)).series
    secret = look(NOW, goal="beta").model_copy(
        update={"last": {"summary": "token=hunter2hunter2hunter2"}}
    )
    second = recorded(None, secret).series
    did = {"observed": 2, "findingsTakenIn": 0, "formed": 0, "decisions": 0}
    cycles = recorded(
        None, cycle(namespace="shop", mind="keeper", uid="u", did=did, at=NOW, key="k")
    ).series
    for each in (second, cycles, first):
        assert ledger.save_series(each, replaces=None)
    assert [s.subject for s in ledger.series("shop", "keeper")] == [
        "cycle",
        first.subject,
        second.subject,
    ]
    assert ledger.series("shop", "keeper", kind=SeriesKind.CYCLE) == [cycles]
    [found] = ledger.series("shop", "keeper", subject=second.subject)
    assert "hunter2" not in str(found.last)
    assert ledger.series("shop", "nobody") == []

"""Intentions, beliefs, predictions and procedural memories against a real Postgres."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime, timedelta
from typing import Any

import psycopg
import pytest
from sqlalchemy import text
from sqlalchemy.exc import DBAPIError, IntegrityError

from minds.adapters.ledger import APPEND_ONLY_SQLSTATE, Ledger
from minds.domain.beliefs import (
    PredictionRecord,
    PredictionStatus,
    belief_id,
    calibration,
    prediction_evidence_key,
    updated_confidence,
)
from minds.domain.errors import NotFound
from minds.domain.executions import ExecutionOrigin, ExecutionRecord
from minds.domain.intentions import (
    IntentionKind,
    IntentionRecord,
    IntentionStatus,
    intention_event_key,
)
from minds.domain.ledger import MASK
from minds.domain.procedures import ProceduralMemory, procedure_id

pytestmark = pytest.mark.integration

T0 = datetime(2026, 12, 3, 9, 0, tzinfo=UTC)
S = IntentionStatus
P = PredictionStatus


def at(seconds: int) -> datetime:
    return T0 + timedelta(seconds=seconds)


def intention(id: str = "int-1", **overrides: Any) -> IntentionRecord:
    fields: dict[str, Any] = {
        "id": id,
        "namespace": "ops",
        "mind": "keeper",
        "objective": "restart atlas-worker",
        "kind": IntentionKind.ACTION,
        "subject": "ops/atlas-worker",
        "means_capability": "service.restart",
        "means_parameters": {"namespace": "ops", "name": "atlas-worker", "apiToken": "hunter2"},
        "created_at": T0,
        "updated_at": T0,
    }
    fields.update(overrides)
    return IntentionRecord.model_validate(fields)


def story(ledger: Ledger, entity: str) -> list[str]:
    return [event.type for event in ledger.events(subject_uid=entity)]


# -- intentions ----------------------------------------------------------------------------


def test_form_is_idempotent_by_id_and_masks_parameters(ledger: Ledger) -> None:
    formed, created = ledger.form_intention(intention())
    assert created
    assert formed.version == 1
    assert formed.means_parameters == {"namespace": "ops", "name": "atlas-worker", "apiToken": MASK}

    again, created_again = ledger.form_intention(intention(objective="something else"))
    assert not created_again
    assert again == formed  # the first write stands
    assert ledger.intention("int-1") == formed
    assert ledger.intention("nope") is None
    assert story(ledger, "int-1") == ["intention_formed"]
    [event] = ledger.events(subject_uid="int-1")
    assert event.idempotency_key == intention_event_key("int-1", 1)
    assert event.subject.kind == "Intention"
    assert "hunter2" not in str(event.payload)


def test_form_needs_version_one_and_a_known_parent(ledger: Ledger) -> None:
    with pytest.raises(ValueError, match="version 1"):
        ledger.form_intention(intention(version=2))
    with pytest.raises(IntegrityError):
        ledger.form_intention(intention("int-sub", parent_id="int-missing"))


def test_subordinate_intentions_point_at_their_parent(ledger: Ledger) -> None:
    ledger.form_intention(intention("int-parent"))
    ledger.form_intention(
        intention("int-sub", parent_id="int-parent", objective="get approval", kind="action")
    )
    ledger.form_intention(intention("int-other", mind="warden"))
    assert [i.id for i in ledger.intentions(parent_id="int-parent")] == ["int-sub"]
    assert [i.id for i in ledger.intentions(mind="keeper")] == ["int-parent", "int-sub"]
    assert [i.id for i in ledger.intentions(namespace="ops")] == [
        "int-other",
        "int-parent",
        "int-sub",
    ]
    assert ledger.intentions(namespace="elsewhere") == []


def test_transitions_bump_versions_and_tell_the_story(ledger: Ledger) -> None:
    ledger.form_intention(intention())
    blocked = ledger.transition_intention("int-1", S.BLOCKED, "awaiting approval a-1", at(10))
    assert blocked is not None
    assert (blocked.status, blocked.reason, blocked.version, blocked.updated_at) == (
        S.BLOCKED,
        "awaiting approval a-1",
        2,
        at(10),
    )

    # A replay (same status, same reason) writes nothing.
    replay = ledger.transition_intention("int-1", S.BLOCKED, "awaiting approval a-1", at(99))
    assert replay == blocked

    resumed = ledger.transition_intention("int-1", S.ACTIVE, "approval a-1 approved", at(20))
    assert resumed is not None
    assert resumed.version == 3
    fulfilled = ledger.transition_intention("int-1", S.FULFILLED, "verified", at(30))
    assert fulfilled is not None
    assert fulfilled.version == 4

    # Final: nothing moves it, and a refused move changes nothing.
    assert ledger.transition_intention("int-1", S.ACTIVE, "again", at(40)) is None
    assert ledger.intention("int-1") == fulfilled
    assert story(ledger, "int-1") == [
        "intention_formed",
        "intention_blocked",
        "intention_active",
        "intention_fulfilled",
    ]
    events = ledger.events(subject_uid="int-1")
    assert [e.idempotency_key for e in events] == [
        intention_event_key("int-1", v) for v in (1, 2, 3, 4)
    ]
    assert events[1].payload["from"] == "active"
    assert events[1].payload["to"] == "blocked"
    assert events[1].occurred_at == at(10)


def test_unknown_intentions_are_not_found(ledger: Ledger) -> None:
    with pytest.raises(NotFound):
        ledger.transition_intention("nope", S.BLOCKED, None, T0)
    with pytest.raises(NotFound):
        ledger.update_intention("nope", replans=1, at=T0)


def test_update_changes_only_given_fields(ledger: Ledger) -> None:
    ledger.form_intention(intention(plan="restart-atlas-r1"))
    after = ledger.update_intention(
        "int-1", plan="restart-atlas-r2", replans=1, failed_strategies=["direct"], at=at(5)
    )
    assert (after.plan, after.replans, after.failed_strategies, after.version) == (
        "restart-atlas-r2",
        1,
        ["direct"],
        2,
    )
    assert after.status is S.ACTIVE
    assert ledger.intention("int-1") == after

    # Only the plan: the rest stays.
    cleared = ledger.update_intention("int-1", plan=None, at=at(6))
    assert (cleared.plan, cleared.replans, cleared.failed_strategies, cleared.version) == (
        None,
        1,
        ["direct"],
        3,
    )
    # Replaying a change writes nothing.
    assert ledger.update_intention("int-1", plan=None, replans=1, at=at(7)) == cleared
    assert story(ledger, "int-1") == ["intention_formed", "intention_updated", "intention_updated"]
    changed = ledger.events(subject_uid="int-1")[2].payload["changed"]
    assert changed == {"plan": None}


def test_concurrent_transitions_leave_a_consistent_version(ledger: Ledger) -> None:
    ledger.form_intention(intention())
    moves = [
        (S.BLOCKED, f"awaiting approval {n}") if n % 2 else (S.ACTIVE, f"resumed {n}")
        for n in range(24)
    ]

    def move(args: tuple[IntentionStatus, str]) -> IntentionRecord | None:
        return ledger.transition_intention("int-1", args[0], args[1], T0)

    with ThreadPoolExecutor(8) as pool:
        results = list(pool.map(move, moves))

    final = ledger.intention("int-1")
    assert final is not None
    versions = sorted(r.version for r in results if r is not None)
    # Every move changed the reason, so every one is a change: versions 2..25, each once.
    assert versions == list(range(2, 26))
    assert final.version == 25
    events = ledger.events(subject_uid="int-1")
    assert [e.idempotency_key for e in events] == [
        intention_event_key("int-1", v) for v in range(1, 26)
    ]


def test_concurrent_replays_of_one_transition_change_it_once(ledger: Ledger) -> None:
    ledger.form_intention(intention())

    def fulfil(_: int) -> IntentionRecord | None:
        return ledger.transition_intention("int-1", S.FULFILLED, "verified", T0)

    with ThreadPoolExecutor(8) as pool:
        results = list(pool.map(fulfil, range(16)))
    assert {(r.status, r.version) for r in results if r is not None} == {(S.FULFILLED, 2)}
    assert all(r is not None for r in results)
    assert story(ledger, "int-1") == ["intention_formed", "intention_fulfilled"]


# -- beliefs -------------------------------------------------------------------------------


def test_upsert_belief_forms_once_and_keeps_the_confidence(ledger: Ledger) -> None:
    first = ledger.upsert_belief("ops", "keeper", "atlas-worker  heals after a restart", 0.8, T0)
    assert first.id == belief_id("ops", "keeper", "atlas-worker heals after a restart")
    assert first.statement == "atlas-worker heals after a restart"
    assert (first.confidence, first.evidence_for, first.evidence_against) == (0.8, 0, 0)

    again = ledger.upsert_belief("ops", "keeper", "Atlas-worker heals after a restart", 0.3, at(5))
    assert again == first
    assert ledger.belief(first.id) == first
    assert ledger.belief("nope") is None
    assert ledger.beliefs("ops", "keeper") == [first]
    assert ledger.beliefs("ops", "warden") == []
    assert story(ledger, first.id) == ["belief_formed"]


def test_evidence_moves_the_confidence_once_per_key(ledger: Ledger) -> None:
    belief = ledger.upsert_belief("ops", "keeper", "restarts heal atlas", 0.8, T0)
    against = ledger.add_evidence(
        belief.id, supports=False, weight=1.0, key="k-1", at=at(10), note="still crashing"
    )
    assert against.confidence == pytest.approx(updated_confidence(0.8, False))
    assert (against.evidence_for, against.evidence_against, against.updated_at) == (0, 1, at(10))

    replay = ledger.add_evidence(
        belief.id, supports=False, weight=1.0, key="k-1", at=at(20), note="still crashing"
    )
    assert replay == against

    support = ledger.add_evidence(
        belief.id, supports=True, weight=0.5, key="k-2", at=at(30), note="healthy"
    )
    assert support.confidence == pytest.approx(updated_confidence(against.confidence, True, 0.5))
    assert (support.evidence_for, support.evidence_against) == (1, 1)

    evidence = ledger.belief_evidence(belief.id)
    assert [(e.key, e.supports, e.note) for e in evidence] == [
        ("k-1", False, "still crashing"),
        ("k-2", True, "healthy"),
    ]
    assert evidence[0].confidence_before == 0.8
    assert evidence[0].confidence_after == against.confidence
    assert story(ledger, belief.id) == [
        "belief_formed",
        "belief_evidence_added",
        "belief_evidence_added",
    ]


def test_evidence_about_an_unknown_belief_is_refused(ledger: Ledger) -> None:
    with pytest.raises(NotFound):
        ledger.add_evidence("nope", supports=True, weight=1.0, key="k", at=T0, note="")


def test_concurrent_evidence_is_applied_one_piece_at_a_time(ledger: Ledger) -> None:
    belief = ledger.upsert_belief("ops", "keeper", "restarts heal atlas", 0.5, T0)
    keys = [f"k-{n % 10}" for n in range(30)]  # ten pieces, each sent three times

    def add(key: str) -> None:
        ledger.add_evidence(belief.id, supports=True, weight=0.25, key=key, at=T0, note="")

    with ThreadPoolExecutor(8) as pool:
        list(pool.map(add, keys))

    expected = 0.5
    for _ in range(10):
        expected = updated_confidence(expected, True, 0.25)
    stored = ledger.belief(belief.id)
    assert stored is not None
    assert stored.evidence_for == 10
    assert stored.confidence == pytest.approx(expected)
    assert len(ledger.belief_evidence(belief.id)) == 10


# -- predictions ---------------------------------------------------------------------------


def a_prediction(
    id: str = "pred-1", *, belief: str | None = None, execution: int | None = None, **kw: Any
) -> PredictionRecord:
    fields: dict[str, Any] = {
        "id": id,
        "namespace": "ops",
        "mind": "keeper",
        "plan": "restart-atlas-r1",
        "step": "P1",
        "execution_id": execution,
        "belief_id": belief,
        "criteria": {
            "capability": "service.status",
            "field": "state",
            "comparison": "equals",
            "value": "running",
            "parameters": {"sessionToken": "abc"},
        },
        "confidence": 0.8,
        "window_start": T0,
        "window_end": at(60),
    }
    fields.update(kw)
    return PredictionRecord.model_validate(fields)


@pytest.fixture
def execution_id(ledger: Ledger) -> int:
    origin = ExecutionOrigin(plan="restart-atlas-r1", plan_uid="uid-1", step="P1", attempt=1)
    row, _ = ledger.begin_execution(
        ExecutionRecord(
            origin_key=origin.key(),
            mind="keeper",
            namespace="ops",
            capability="service.restart",
            target="ops/atlas-worker",
            origin=origin,
            started_at=T0,
        )
    )
    assert row.id is not None
    return row.id


def test_open_prediction_is_idempotent_and_linked(ledger: Ledger, execution_id: int) -> None:
    belief = ledger.upsert_belief("ops", "keeper", "restarts heal atlas", 0.8, T0)
    opened, created = ledger.open_prediction(a_prediction(belief=belief.id, execution=execution_id))
    assert created
    assert opened.status is P.OPEN
    assert opened.execution_id == execution_id
    assert opened.belief_id == belief.id
    assert opened.criteria["parameters"] == {"sessionToken": MASK}

    again, created_again = ledger.open_prediction(a_prediction(confidence=0.1))
    assert not created_again
    assert again == opened
    assert ledger.prediction("pred-1") == opened
    assert ledger.prediction("nope") is None
    assert story(ledger, "pred-1") == ["prediction_opened"]


def test_open_prediction_refuses_unknown_links_and_resolved_records(ledger: Ledger) -> None:
    with pytest.raises(IntegrityError):
        ledger.open_prediction(a_prediction(belief="bel-missing"))
    with pytest.raises(IntegrityError):
        ledger.open_prediction(a_prediction(execution=424242))
    with pytest.raises(ValueError, match="open"):
        ledger.open_prediction(a_prediction(status=P.CONFIRMED, resolved_at=at(5)))


def test_confirmed_resolves_once_and_supports_the_belief(ledger: Ledger) -> None:
    belief = ledger.upsert_belief("ops", "keeper", "restarts heal atlas", 0.8, T0)
    ledger.open_prediction(a_prediction(belief=belief.id))
    observation = {"state": "running", "holds": True}

    resolved = ledger.resolve_prediction("pred-1", P.CONFIRMED, at(30), observation)
    assert resolved is not None
    assert (resolved.status, resolved.resolved_at, resolved.observation) == (
        P.CONFIRMED,
        at(30),
        observation,
    )
    # Already resolved: None, and nothing more is written, whatever the second caller says.
    assert ledger.resolve_prediction("pred-1", P.CONFIRMED, at(31), observation) is None
    assert ledger.resolve_prediction("pred-1", P.REFUTED, at(61), None) is None
    assert ledger.prediction("pred-1") == resolved

    strengthened = ledger.belief(belief.id)
    assert strengthened is not None
    assert strengthened.evidence_for == 1
    assert strengthened.confidence == pytest.approx(updated_confidence(0.8, True))
    [evidence] = ledger.belief_evidence(belief.id)
    assert evidence.key == prediction_evidence_key("pred-1")
    assert story(ledger, "pred-1") == ["prediction_opened", "prediction_resolved"]

    # A caller that adds the evidence itself under the same key adds nothing.
    ledger.add_evidence(
        belief.id,
        supports=True,
        weight=1.0,
        key=prediction_evidence_key("pred-1"),
        at=at(32),
        note="again",
    )
    assert ledger.belief(belief.id) == strengthened


def test_refuted_is_a_prediction_error_against_the_belief(ledger: Ledger) -> None:
    belief = ledger.upsert_belief("ops", "keeper", "restarts heal atlas", 0.8, T0)
    ledger.open_prediction(a_prediction(belief=belief.id))
    refuted = ledger.resolve_prediction("pred-1", P.REFUTED, at(60), {"state": "crashloop"})
    assert refuted is not None
    weakened = ledger.belief(belief.id)
    assert weakened is not None
    assert weakened.evidence_against == 1
    assert weakened.confidence == pytest.approx(updated_confidence(0.8, False))
    assert story(ledger, "pred-1") == ["prediction_opened", "prediction_error"]


def test_expired_is_unknown_not_refuted(ledger: Ledger) -> None:
    belief = ledger.upsert_belief("ops", "keeper", "restarts heal atlas", 0.8, T0)
    ledger.open_prediction(a_prediction(belief=belief.id))
    expired = ledger.resolve_prediction("pred-1", P.EXPIRED, at(60), None)
    assert expired is not None
    assert expired.observation is None
    assert ledger.belief(belief.id) == belief  # no evidence either way
    assert story(ledger, "pred-1") == ["prediction_opened", "prediction_expired"]
    assert ledger.calibration("ops", "keeper").n == 0


def test_resolving_needs_a_resolution_and_a_known_prediction(ledger: Ledger) -> None:
    ledger.open_prediction(a_prediction())
    with pytest.raises(ValueError, match="resolved as"):
        ledger.resolve_prediction("pred-1", P.OPEN, T0, None)
    with pytest.raises(NotFound):
        ledger.resolve_prediction("nope", P.CONFIRMED, T0, None)
    # Without a supporting belief, resolution adds no evidence anywhere.
    assert ledger.resolve_prediction("pred-1", P.CONFIRMED, T0, None) is not None


def test_concurrent_resolutions_resolve_once(ledger: Ledger) -> None:
    belief = ledger.upsert_belief("ops", "keeper", "restarts heal atlas", 0.8, T0)
    ledger.open_prediction(a_prediction(belief=belief.id))
    outcomes = [P.CONFIRMED if n % 2 else P.REFUTED for n in range(16)]

    def resolve(status: PredictionStatus) -> PredictionRecord | None:
        return ledger.resolve_prediction("pred-1", status, at(30), None)

    with ThreadPoolExecutor(8) as pool:
        results = list(pool.map(resolve, outcomes))
    winners = [r for r in results if r is not None]
    assert len(winners) == 1
    assert ledger.prediction("pred-1") == winners[0]
    assert len(ledger.belief_evidence(belief.id)) == 1
    assert len(ledger.events(subject_uid="pred-1")) == 2


def test_predictions_filter_and_calibration(ledger: Ledger) -> None:
    cases = [
        ("p-a", 0.8, P.CONFIRMED),
        ("p-b", 0.8, P.REFUTED),
        ("p-c", 0.3, P.REFUTED),
        ("p-d", 0.9, P.EXPIRED),
        ("p-e", 0.6, None),
    ]
    for n, (pid, confidence, _) in enumerate(cases):
        ledger.open_prediction(a_prediction(pid, confidence=confidence, window_start=at(n)))
    ledger.open_prediction(a_prediction("p-other", mind="warden"))
    for pid, _, status in cases:
        if status is not None:
            ledger.resolve_prediction(pid, status, at(100), None)

    assert [p.id for p in ledger.predictions("ops", "keeper")] == [c[0] for c in cases]
    assert [p.id for p in ledger.predictions("ops", "keeper", P.OPEN)] == ["p-e"]
    assert [p.id for p in ledger.predictions("ops", "keeper", P.REFUTED)] == ["p-b", "p-c"]

    result = ledger.calibration("ops", "keeper")
    assert result == calibration(ledger.predictions("ops", "keeper"))
    assert result.n == 3
    assert result.brier == pytest.approx((0.04 + 0.64 + 0.09) / 3)
    assert [(b.lower, b.count) for b in result.bins] == [(0.3, 1), (0.8, 2)]
    assert ledger.calibration("ops", "warden").brier is None


# -- procedural memory ---------------------------------------------------------------------


def memory(plan: str = "restart-atlas-r1", **overrides: Any) -> ProceduralMemory:
    fields: dict[str, Any] = {
        "id": procedure_id("ops", "keeper", plan),
        "namespace": "ops",
        "mind": "keeper",
        "subject": "ops/atlas-worker",
        "text": "To restart atlas-worker: run service.restart on ops/atlas-worker; then verify: "
        "service.status state equals running. The outcome was confirmed by observation.",
        "confidence": 0.8,
        "plan": plan,
        "revision": 1,
        "created_at": T0,
    }
    fields.update(overrides)
    return ProceduralMemory.model_validate(fields)


def test_procedures_are_stored_once(ledger: Ledger) -> None:
    first = memory()
    assert ledger.store_procedure(first) is True
    assert ledger.store_procedure(memory(text="something else")) is False
    second = memory("investigate-atlas-r2", subject="ops/atlas", revision=2, created_at=at(5))
    assert ledger.store_procedure(second) is True
    ledger.store_procedure(memory("other", mind="warden", id="proc-warden"))

    assert ledger.procedures("ops", "keeper") == [first, second]
    assert ledger.procedures("ops", "keeper", subject="ops/atlas") == [second]
    assert story(ledger, first.id) == ["procedure_stored"]
    assert ledger.events(subject_uid=first.id)[0].payload["text"] == first.text


# -- append-only ---------------------------------------------------------------------------


@pytest.mark.parametrize("table", ["belief_evidence", "procedural_memories"])
@pytest.mark.parametrize("statement", ["UPDATE {t} SET id = id", "DELETE FROM {t}"])
def test_memory_tables_are_append_only(owner_ledger: Ledger, table: str, statement: str) -> None:
    # As the owner: the application may not even try (see test_ledger_roles).
    with pytest.raises(DBAPIError) as caught, owner_ledger.session() as session:
        session.execute(text(statement.format(t=table)))
    cause = caught.value.orig
    assert isinstance(cause, psycopg.Error)
    assert cause.sqlstate == APPEND_ONLY_SQLSTATE


def test_the_database_refuses_an_inconsistent_resolution(ledger: Ledger) -> None:
    ledger.open_prediction(a_prediction())
    with pytest.raises(IntegrityError), ledger.session() as session:
        session.execute(text("UPDATE predictions SET status = 'confirmed'"))

"""``why`` on a new revision says which revision failed, why, and which prediction the world
refuted: the story of a restart that did not heal, read from the ledger."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from minds.domain.beliefs import BeliefRecord, PredictionRecord, PredictionStatus
from minds.domain.ledger import EventRecord, SubjectRef
from minds.domain.resources.kinds import PLAN
from minds.engine.why import Explainer
from tests.fakes.resources import FakeResources

NS, MIND = "shop", "keeper"
NOW = datetime(2026, 12, 4, 12, 0, tzinfo=UTC)


class StoryLedger:
    """What ``why`` reads of the ledger, for one scenario (no intention: the chain stops)."""

    def __init__(self, events: list[EventRecord], predictions: list[PredictionRecord]) -> None:
        self._events, self._predictions = events, predictions

    def events(self, **filters: Any) -> list[EventRecord]:
        types = filters.get("type") or ()
        return [e for e in self._events if e.type in types and e.mind == filters["mind"]]

    def predictions(
        self, namespace: str, mind: str, status: PredictionStatus | None = None
    ) -> list[PredictionRecord]:
        return [p for p in self._predictions if status is None or p.status is status]

    def belief(self, belief_id: str) -> BeliefRecord | None:
        return BeliefRecord(
            id=belief_id,
            namespace=NS,
            mind=MIND,
            statement="atlas-worker runs normally after a restart",
            confidence=0.6,
            updated_at=NOW,
        )

    def executions(self, **_: Any) -> list[Any]:
        return []


def failed(plan: str) -> EventRecord:
    return EventRecord(
        mind=MIND,
        namespace=NS,
        type="plan_failed",
        subject=SubjectRef(kind="Plan", name=plan, uid="u1"),
        payload={"reason": "V1: expectation failed: atlas-worker is crash-looping"},
        occurred_at=NOW,
        idempotency_key="k1",
    )


def refuted(plan: str, step: str = "P1") -> PredictionRecord:
    return PredictionRecord(
        id=f"pred-{plan}-{step}",
        namespace=NS,
        mind=MIND,
        plan=plan,
        step=step,
        belief_id="b1",
        criteria={"field": "state", "comparison": "equals", "value": "running"},
        confidence=0.8,
        window_start=NOW - timedelta(minutes=1),
        window_end=NOW,
        status=PredictionStatus.REFUTED,
        resolved_at=NOW,
        observation={"summary": "atlas-worker is crash-looping"},
    )


def revision_two(resources: FakeResources) -> None:
    resources.create(
        PLAN,
        NS,
        {
            "metadata": {"name": "heal-r2"},
            "spec": {
                "objective": "bring atlas-worker back",
                "origin": "replan",
                "strategy": "diagnose_then_escalate",
                "mind": MIND,
                "revision": 2,
                "supersedes": "heal-r1",
            },
        },
    )


def test_why_on_revision_two_tells_the_failed_revision_and_the_refuted_prediction() -> None:
    resources = FakeResources()
    revision_two(resources)
    ledger = StoryLedger([failed("heal-r1")], [refuted("heal-r1"), refuted("other-plan")])
    links = Explainer(resources=resources, ledger=ledger).why(NS, "plan", "heal-r2")
    assert [(link.kind, link.name) for link in links] == [
        ("Plan", "heal-r2"),
        ("Plan", "heal-r1"),
        ("Prediction", "pred-heal-r1-P1"),
    ]
    assert links[1].summary == (
        "the revision before this one failed: V1: expectation failed: atlas-worker is "
        "crash-looping; this revision replaced it"
    )
    assert links[2].summary == (
        "refuted: atlas-worker runs normally after a restart (step P1, confidence 0.80); "
        "observed: atlas-worker is crash-looping"
    )


def test_a_first_revision_has_no_past_to_tell() -> None:
    resources = FakeResources()
    revision_two(resources)
    body = resources.get(PLAN, NS, "heal-r2")
    body["spec"].pop("supersedes")
    resources.delete(PLAN, NS, "heal-r2", body["metadata"]["uid"])
    resources.create(PLAN, NS, {"metadata": {"name": "heal-r2"}, "spec": body["spec"]})
    ledger = StoryLedger([failed("heal-r1")], [refuted("heal-r1")])
    links = Explainer(resources=resources, ledger=ledger).why(NS, "plan", "heal-r2")
    assert [link.kind for link in links] == ["Plan"]

"""What the cycle reads for ``NeedsAttention``: this mind's live intentions, its Plans that may
ask a person something, and its Approvals still waiting, nothing of another mind's and nothing
already decided."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from minds.domain.attention import AttentionReason, needs_attention
from minds.domain.intentions import IntentionKind, IntentionRecord, IntentionStatus
from minds.domain.resources.kinds import APPROVAL, MIND, PLAN
from minds.engine.attention_reading import read_open
from tests.fakes.ledger import FakeLedger
from tests.fakes.resources import FakeResources
from tests.unit.engine.harness import NAMESPACE, World
from tests.unit.engine.test_reconsidering_over_fakes import (
    asked,
    decide,
    mind_spec,
    minded,
    phase,
)

NS = "shop"
NOW = datetime(2026, 12, 4, 12, 0, tzinfo=UTC)


def intention(id_: str, mind: str, status: IntentionStatus) -> IntentionRecord:
    return IntentionRecord(
        id=id_,
        namespace=NS,
        mind=mind,
        objective=f"objective of {id_}",
        kind=IntentionKind.ACTION,
        status=status,
        reason="escalated",
        created_at=NOW,
        updated_at=NOW,
    )


def approval(resources: FakeResources, name: str, mind: str, phase: str | None) -> None:
    spec = {"mind": mind, "capability": "service.restart", "target": f"{NS}/atlas"}
    body = resources.create(APPROVAL, NS, {"metadata": {"name": name}, "spec": spec})
    if phase is not None:  # status is the controller's: written apart, as it writes it
        resources.replace_status(APPROVAL, body, {"phase": phase})


def test_only_this_minds_open_things_are_read() -> None:
    ledger, resources = FakeLedger(), FakeResources()
    ledger.form_intention(intention("mine", "keeper", IntentionStatus.BLOCKED))
    ledger.form_intention(intention("done", "keeper", IntentionStatus.FULFILLED))
    ledger.form_intention(intention("theirs", "other", IntentionStatus.BLOCKED))
    approval(resources, "asked", "keeper", None)
    approval(resources, "decided", "keeper", "Approved")
    approval(resources, "elsewhere", "other", "Pending")
    for name, mind, plan_phase in (
        ("p", "keeper", "awaiting_approval"),
        ("quiet", "keeper", "executing"),  # asks nobody anything: not even read
        ("q", "other", "awaiting_approval"),
    ):
        body = resources.create(PLAN, NS, {"metadata": {"name": name}, "spec": {"mind": mind}})
        resources.replace_status(PLAN, body, {"phase": plan_phase})
    held = read_open(ledger, resources, NS, "keeper")
    assert [i.id for i in held.intentions] == ["mine"]
    assert [a.name for a in held.approvals] == ["asked"]
    assert [p.name for p in held.plans] == ["p"]
    condition = needs_attention(held, NOW)
    assert condition.reason == AttentionReason.ESCALATED
    assert "approval asked waits for a decision" in condition.message


def needs(world: World) -> tuple[str, str] | None:
    """The Mind's NeedsAttention condition as its status holds it: (status, reason)."""
    status = world.resources.get(MIND, NAMESPACE, "keeper").get("status") or {}
    found = [c for c in status.get("conditions") or [] if c["type"] == "NeedsAttention"]
    return (found[0]["status"], found[0]["reason"]) if found else None


def test_needs_attention_follows_the_plan_without_waiting_for_a_cycle() -> None:
    # No cycle runs here at all: the condition is what the executor wrote as the plan moved.
    world, plan = minded()
    assert needs(world) is None
    approval = asked(world, plan)
    assert needs(world) == ("True", "PendingApproval")
    decide(world, approval, "Approved")
    world.run(world.executor("a"), plan, until=lambda: phase(world, plan) == "completed")
    assert needs(world) == ("False", "NothingPending")


def test_a_tick_that_moves_no_phase_writes_nothing_to_the_mind() -> None:
    world, plan = minded()
    asked(world, plan)
    before = world.resources.get(MIND, NAMESPACE, "keeper")["metadata"]["resourceVersion"]
    for _ in range(5):
        world.clock.now += timedelta(minutes=1)
        world.executor("a").tick(NAMESPACE, plan)
    after = world.resources.get(MIND, NAMESPACE, "keeper")["metadata"]["resourceVersion"]
    assert after == before


def test_a_review_that_ends_a_plan_tells_the_mind_at_once() -> None:
    world, plan = minded()
    asked(world, plan)
    mind_spec(world)["capabilityPolicy"][0]["decision"] = "deny"
    world.executor("a").review(NAMESPACE, "keeper")
    # The plan failed and its Approval was withdrawn: the intention is blocked, said so now.
    assert needs(world) == ("True", "Escalated")

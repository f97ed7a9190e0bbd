"""What the cycle reads for ``NeedsAttention``: this mind's live intentions, its Plans, and
its Approvals still waiting, nothing of another mind's and nothing already decided."""

from __future__ import annotations

from datetime import UTC, datetime

from minds.domain.attention import AttentionReason, needs_attention
from minds.domain.intentions import IntentionKind, IntentionRecord, IntentionStatus
from minds.domain.resources.kinds import APPROVAL, PLAN
from minds.engine.attention_reading import read_open
from tests.fakes.ledger import FakeLedger
from tests.fakes.resources import FakeResources

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
    resources.create(PLAN, NS, {"metadata": {"name": "p"}, "spec": {"mind": "keeper"}})
    resources.create(PLAN, NS, {"metadata": {"name": "q"}, "spec": {"mind": "other"}})
    held = read_open(ledger, resources, NS, "keeper")
    assert [i.id for i in held.intentions] == ["mine"]
    assert [a.name for a in held.approvals] == ["asked"]
    assert [p.name for p in held.plans] == ["p"]
    condition = needs_attention(held, NOW)
    assert condition.reason == AttentionReason.ESCALATED
    assert "approval asked waits for a decision" in condition.message

"""``NeedsAttention``: what of a mind waits for a person, named, most pressing first."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from minds.domain.attention import (
    NAMED,
    AttentionReason,
    Open,
    PendingApproval,
    PlanAtHand,
    may_ask,
    moves_attention,
    needs_attention,
)
from minds.domain.intentions import IntentionKind, IntentionRecord, IntentionStatus
from minds.domain.planning.model import PlanStatus, PlanStatusBlock, StepState, StepStatus
from minds.domain.resources.common import ConditionStatus

NOW = datetime(2026, 12, 4, 12, 0, tzinfo=UTC)


def intention(
    status: IntentionStatus, reason: str | None = None, parent: str | None = None, n: int = 1
) -> IntentionRecord:
    return IntentionRecord(
        id=f"i{n}",
        namespace="shop",
        mind="keeper",
        objective=f"keep atlas-worker-{n} running",
        kind=IntentionKind.ACTION,
        status=status,
        reason=reason,
        parent_id=parent,
        created_at=NOW,
        updated_at=NOW,
    )


def plan(name: str, phase: PlanStatus, *steps: tuple[str, StepStatus, str | None]) -> PlanAtHand:
    return PlanAtHand(
        name=name,
        status=PlanStatusBlock(
            phase=phase, steps=[StepState(key=k, status=s, reason=r) for k, s, r in steps]
        ),
    )


def held(intentions=(), plans=(), approvals=()) -> Open:  # type: ignore[no-untyped-def]
    return Open(intentions=list(intentions), plans=list(plans), approvals=list(approvals))


def test_nothing_open_needs_nobody() -> None:
    quiet = held(
        intentions=[intention(IntentionStatus.ACTIVE)],
        plans=[plan("heal", PlanStatus.EXECUTING, ("P1", StepStatus.EXECUTING, None))],
    )
    condition = needs_attention(quiet, NOW)
    assert condition.type == "NeedsAttention"
    assert condition.status is ConditionStatus.FALSE
    assert condition.reason == AttentionReason.NOTHING_PENDING


def test_a_restart_that_did_not_heal_names_the_escalation() -> None:
    escalated = held(
        intentions=[
            intention(IntentionStatus.BLOCKED, "escalated to the operator: restart did not heal")
        ],
        plans=[
            plan("heal-r1", PlanStatus.SUPERSEDED, ("V1", StepStatus.BLOCKED, "old")),
            plan("heal-r2", PlanStatus.COMPLETED, ("N1", StepStatus.COMPLETED, None)),
        ],
    )
    condition = needs_attention(escalated, NOW)
    assert condition.status is ConditionStatus.TRUE
    assert condition.reason == AttentionReason.ESCALATED
    assert condition.message == (
        "keep atlas-worker-1 running is blocked: escalated to the operator: restart did not heal"
    )


def test_a_subordinate_intention_is_told_by_its_approval_not_twice() -> None:
    waiting = held(
        intentions=[intention(IntentionStatus.BLOCKED, "waiting for approval", parent="i0")],
        approvals=[PendingApproval("heal-p1", "service.restart", "shop/atlas-worker")],
    )
    condition = needs_attention(waiting, NOW)
    assert condition.reason == AttentionReason.PENDING_APPROVAL
    assert condition.message == (
        "approval heal-p1 waits for a decision: service.restart on shop/atlas-worker"
    )


def test_an_intention_waiting_on_its_subordinates_approval_is_not_an_escalation() -> None:
    parent = intention(IntentionStatus.BLOCKED, "waiting for approval heal-p1", n=1)
    waiting = held(
        intentions=[
            parent.model_copy(update={"plan": "heal"}),
            intention(IntentionStatus.ACTIVE, "obtain approval heal-p1", parent="i1", n=2),
        ],
        plans=[
            plan("heal", PlanStatus.AWAITING_APPROVAL, ("P1", StepStatus.AWAITING_APPROVAL, None))
        ],
        approvals=[PendingApproval("heal-p1", "service.restart", "shop/atlas-worker")],
    )
    condition = needs_attention(waiting, NOW)
    assert condition.reason == AttentionReason.PENDING_APPROVAL
    assert "is blocked" not in condition.message


def test_the_most_pressing_kind_is_the_reason_and_every_item_is_named() -> None:
    everything = held(
        intentions=[intention(IntentionStatus.OUTCOME_UNVERIFIED, "no outcome", n=2)],
        plans=[plan("heal", PlanStatus.BLOCKED, ("P1", StepStatus.BLOCKED, "budget exhausted"))],
        approvals=[PendingApproval("a1", "service.restart", "shop/x")],
    )
    condition = needs_attention(everything, NOW)
    assert condition.reason == AttentionReason.OUTCOME_UNVERIFIED
    assert "intention i2 may have acted without an outcome" in condition.message
    assert "plan heal step P1 is blocked: budget exhausted" in condition.message
    assert "approval a1 waits for a decision" in condition.message


def test_many_items_are_named_up_to_a_bound_and_counted_beyond() -> None:
    many = held(
        approvals=[PendingApproval(f"a{n}", "service.restart", "shop/x") for n in range(NAMED + 3)]
    )
    condition = needs_attention(many, NOW)
    assert condition.message.count("waits for a decision") == NAMED
    assert condition.message.endswith("; and 3 more")


def test_suspended_and_final_intentions_ask_nothing() -> None:
    calm = held(
        intentions=[
            intention(IntentionStatus.SUSPENDED, "a dream: imagined, never acted on"),
            intention(IntentionStatus.ABANDONED, "replan limit", n=2),
        ]
    )
    assert needs_attention(calm, NOW).status is ConditionStatus.FALSE


@pytest.mark.parametrize(
    ("before", "after", "moves"),
    [
        (PlanStatus.EXECUTING, PlanStatus.AWAITING_APPROVAL, True),  # it asks
        (PlanStatus.AWAITING_APPROVAL, PlanStatus.EXECUTING, True),  # decided
        (PlanStatus.EXECUTING, PlanStatus.BLOCKED, True),
        (PlanStatus.BLOCKED, PlanStatus.EXECUTING, True),  # resumed, released
        (PlanStatus.EXECUTING, PlanStatus.COMPLETED, True),  # an escalation may end so
        (PlanStatus.AWAITING_APPROVAL, PlanStatus.FAILED, True),  # expired: blocked
        (PlanStatus.VALIDATED, PlanStatus.EXECUTING, False),
        (PlanStatus.EXECUTING, PlanStatus.WAITING, False),
        (PlanStatus.WAITING, PlanStatus.EXECUTING, False),
        (PlanStatus.BLOCKED, PlanStatus.BLOCKED, False),
    ],
)
def test_only_a_move_that_may_change_what_needs_a_person_is_told(
    before: PlanStatus, after: PlanStatus, moves: bool
) -> None:
    assert moves_attention(before, after) is moves


def test_the_plans_that_may_ask_are_all_the_condition_needs() -> None:
    """Every phase with every kind of step, beside an intention blocked on each plan: the
    condition computed from the plans ``may_ask`` keeps (read off the status as written) is
    the condition computed from them all."""
    plans = [
        plan(
            f"p-{phase.value}-{step.value}",
            phase,
            ("S1", step, "why"),
            ("S2", StepStatus.PENDING, None),
        )
        for phase in PlanStatus
        for step in StepStatus
    ]
    blocked = [
        intention(IntentionStatus.BLOCKED, "waits", n=n).model_copy(update={"plan": p.name})
        for n, p in enumerate(plans)
    ]

    def written(p: PlanAtHand) -> tuple[object, list[object]]:
        dumped = p.status.model_dump(mode="json")
        return dumped.get("phase"), [s.get("status") for s in dumped.get("steps") or []]

    kept = [p for p in plans if may_ask(*written(p))]
    assert 0 < len(kept) < len(plans)
    every = needs_attention(held(blocked, plans), NOW)
    assert needs_attention(held(blocked, kept), NOW) == every
    assert every.status is ConditionStatus.TRUE

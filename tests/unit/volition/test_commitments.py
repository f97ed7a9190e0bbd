"""Commitment states: each state, the order they are judged in, and the decisions recorded."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

import pytest

from minds.domain.planning.views import Means
from minds.domain.resources.mind import Commitment
from minds.domain.volition.commitments import (
    OVERDUE_GRACE,
    CommitmentContext,
    CommitmentState,
    check_commitments,
    commitment_state,
    concrete_means,
)
from minds.domain.volition.decisions import DecisionKind
from tests.unit.volition.builders import ATLAS, MIND, NS, T0, a_spec

S = CommitmentState
MIN = timedelta(minutes=1)


def do(name: str = "restart-atlas", **fields: Any) -> dict[str, Any]:
    return {"name": name, "mode": "do", "capability": "service.restart", "target": ATLAS, **fields}


def refrain(name: str = "no-restarts", **fields: Any) -> dict[str, Any]:
    return {
        "name": name,
        "mode": "refrain",
        "capability": "service.restart",
        "target": "atlas-*",
        **fields,
    }


def state(
    commitments: list[dict[str, Any]],
    name: str | None = None,
    now: datetime = T0,
    recorded: dict[str, CommitmentState] | None = None,
    revocations: dict[str, str] | None = None,
    **spec: Any,
) -> tuple[CommitmentState, str]:
    mind = a_spec(commitments=commitments, **spec)
    context = CommitmentContext(spec=mind, recorded=recorded or {}, revocations=revocations or {})
    commitment = next(c for c in mind.commitments if c.name == (name or c.name))
    return commitment_state(commitment, now, context)


def test_a_refrain_commitment_is_active() -> None:
    assert state([refrain()])[0] is S.ACTIVE


def test_a_do_commitment_before_its_due_time_is_active() -> None:
    assert state([do(due=T0 + MIN)])[0] is S.ACTIVE


@pytest.mark.parametrize(
    ("due", "expected"),
    [
        (T0, S.DUE),
        (T0 - OVERDUE_GRACE + MIN, S.DUE),
        (T0 - OVERDUE_GRACE, S.OVERDUE),
        (None, S.DUE),  # a promise without a deadline is due from the start
    ],
)
def test_due_and_overdue(due: Any, expected: CommitmentState) -> None:
    assert timedelta(minutes=15) == OVERDUE_GRACE
    assert state([do(due=due)])[0] is expected


def test_expired_at_expires_at() -> None:
    assert state([do(expiresAt=T0)])[0] is S.EXPIRED
    assert state([do(expiresAt=T0 + MIN)])[0] is S.DUE


@pytest.mark.parametrize(
    "spec",
    [
        {"lockedCapabilities": ["service.restart"]},
        {"capabilityPolicy": [{"capability": "service.restart", "decision": "deny"}]},
    ],
    ids=["locked", "denied"],
)
def test_a_do_commitment_whose_capability_is_locked_or_denied_is_impossible(
    spec: dict[str, Any],
) -> None:
    found, reason = state([do()], **spec)
    assert found is S.IMPOSSIBLE
    assert "service.restart" in reason


def test_a_pattern_is_impossible_only_when_every_capability_it_names_is() -> None:
    some = {"lockedCapabilities": ["service.restart"]}
    assert state([do(capability="service.*")], **some)[0] is S.DUE
    both = {"lockedCapabilities": ["service.restart", "service.status"]}
    assert state([do(capability="service.*")], **both)[0] is S.IMPOSSIBLE


def test_opposite_commitments_on_the_same_means_conflict() -> None:
    commitments = [do(), refrain()]
    assert state(commitments, "restart-atlas")[0] is S.CONFLICTING
    assert state(commitments, "no-restarts")[0] is S.CONFLICTING


def test_a_refrain_unless_approval_does_not_conflict_with_a_do() -> None:
    commitments = [do(), refrain(unlessApproval=True)]
    assert state(commitments, "restart-atlas")[0] is S.DUE
    assert state(commitments, "no-restarts")[0] is S.ACTIVE


def test_commitments_on_other_means_do_not_conflict() -> None:
    other = refrain(capability="logs.query")
    assert state([do(), other], "restart-atlas")[0] is S.DUE
    elsewhere = refrain(target="payments-*")
    assert state([do(), elsewhere], "restart-atlas")[0] is S.DUE


def test_a_later_commitment_with_the_same_matchers_supersedes_an_earlier_one() -> None:
    commitments = [refrain("first"), refrain("second")]
    found, reason = state(commitments, "first")
    assert (found, reason) == (S.SUPERSEDED, "superseded by second")
    assert state(commitments, "second")[0] is S.ACTIVE
    narrower = [refrain("first"), refrain("second", target="atlas-worker")]
    assert state(narrower, "first")[0] is S.ACTIVE


def test_recorded_fulfilment_sticks() -> None:
    assert state([do()], recorded={"restart-atlas": S.FULFILLED})[0] is S.FULFILLED


def test_revocation_is_honoured_only_when_revocable() -> None:
    assert state([do()], revocations={"restart-atlas": "revoked by alice: done"})[0] is S.REVOKED
    found, reason = state(
        [do(revocable=False)], revocations={"restart-atlas": "revoked by alice: done"}
    )
    assert found is S.DUE
    assert "revocation refused" in reason
    assert state([do()], recorded={"restart-atlas": S.REVOKED})[0] is S.REVOKED


def test_the_first_rule_that_applies_wins() -> None:
    expired_and_conflicting = [do(expiresAt=T0), refrain()]
    assert state(expired_and_conflicting, "restart-atlas")[0] is S.EXPIRED
    # an expired commitment no longer conflicts with anything
    assert state(expired_and_conflicting, "no-restarts")[0] is S.ACTIVE
    fulfilled_and_expired = [do(expiresAt=T0)]
    found = state(fulfilled_and_expired, recorded={"restart-atlas": S.FULFILLED})[0]
    assert found is S.FULFILLED


def test_check_commitments_records_a_decision_only_for_a_change() -> None:
    mind = a_spec(commitments=[do(), refrain("elsewhere", target="payments-*")])
    context = CommitmentContext(spec=mind, recorded={"elsewhere": S.ACTIVE})
    states, decisions = check_commitments(T0, context, namespace=NS, mind=MIND)
    assert {name: s.state for name, s in states.items()} == {
        "restart-atlas": S.DUE,
        "elsewhere": S.ACTIVE,
    }
    (decision,) = decisions
    assert decision.kind is DecisionKind.COMMITMENT_STATE
    assert (decision.subjects, decision.outcome) == ({"commitment": "restart-atlas"}, "due")
    assert decision.inputs["was"] == "unrecorded"


def _commitment(**fields: Any) -> Commitment:
    return Commitment.model_validate(do(**fields))


def test_concrete_means_of_a_do_commitment() -> None:
    assert concrete_means(_commitment()) == (
        Means(
            capability="service.restart", parameters={"namespace": "ops", "name": "atlas-worker"}
        ),
        ATLAS,
    )
    assert concrete_means(_commitment(target="atlas-*")) is None
    assert concrete_means(_commitment(capability="service.*")) is None
    disk = concrete_means(_commitment(capability="host.disk.usage", target="*"))
    assert disk == (Means(capability="host.disk.usage", parameters={}), "host")

"""The decision record: terms fold to scores, keys make replays idempotent."""

from __future__ import annotations

from datetime import timedelta

import pytest

from minds.domain.volition.decisions import (
    DecisionKind,
    Term,
    TermOp,
    VolitionDecision,
    total,
    unit,
)
from tests.unit.volition.builders import MIND, NS, T0


def a_decision(**overrides: object) -> VolitionDecision:
    fields: dict[str, object] = {
        "namespace": NS,
        "mind": MIND,
        "kind": DecisionKind.FORMATION,
        "subjects": {"want": "want-1"},
        "outcome": "below_threshold",
        "reason": "score 0.4 is below 0.5",
        "at": T0,
    }
    fields.update(overrides)
    return VolitionDecision.model_validate(fields)


def test_terms_fold_in_order() -> None:
    terms = [
        Term(name="base", op=TermOp.SET, value=0.3),
        Term(name="goal", op=TermOp.ADD, value=0.24),
        Term(name="drive", op=TermOp.MULTIPLY, value=1.25),
    ]
    assert total(terms) == pytest.approx((0.3 + 0.24) * 1.25)
    assert total([]) == 0.0
    assert (unit(1.2), unit(-0.1), unit(0.4)) == (1.0, 0.0, 0.4)


def test_a_replayed_decision_has_the_same_key_and_a_later_one_another() -> None:
    assert a_decision().key == a_decision().key
    assert a_decision().key != a_decision(at=T0 + timedelta(minutes=1)).key
    assert a_decision().key != a_decision(outcome="capacity").key
    assert a_decision().key != a_decision(subjects={"want": "want-2"}).key


def test_a_basis_makes_the_same_choice_on_the_same_grounds_one_row() -> None:
    first = a_decision(basis="grounds")
    assert first.key == a_decision(basis="grounds", at=T0 + timedelta(minutes=1)).key
    assert first.key != a_decision(basis="other grounds").key


def test_the_data_column_carries_reason_inputs_scores_and_terms() -> None:
    decision = a_decision(
        inputs={"origin": "goal_unmet"},
        scores={"score": 0.4},
        terms=(Term(name="strength", op=TermOp.SET, value=0.4),),
    )
    assert decision.data() == {
        "reason": "score 0.4 is below 0.5",
        "inputs": {"origin": "goal_unmet"},
        "scores": {"score": 0.4},
        "terms": [{"name": "strength", "op": "set", "value": 0.4}],
    }

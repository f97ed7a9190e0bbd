"""Conflicts: detection, each outcome and its margin, no fixed hierarchy, neither side lost."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from minds.domain.volition.conflicts import (
    CLEAR_MARGIN,
    Conflict,
    ConflictOutcome,
    Constraint,
    conflict_score,
    resolve_conflicts,
)
from minds.domain.volition.decisions import DecisionKind, total
from minds.domain.volition.wants import Want, WantStatus
from tests.unit.volition.builders import MIND, NS, T0, a_spec, a_want, an_avoid

W = ConflictOutcome


def resolve(*wants: Want, existing: tuple[Conflict, ...] = (), spec=None):  # type: ignore[no-untyped-def]
    return resolve_conflicts(
        list(wants), spec or a_spec(), list(existing), T0, namespace=NS, mind=MIND
    )


def outcome(approach: Want, avoid: Want) -> ConflictOutcome:
    (conflict,) = resolve(approach, avoid).conflicts
    return conflict.outcome


@pytest.mark.parametrize(
    ("approach", "expected"),
    [
        (0.9, W.APPROACH_WINS),  # 0.9 x 1.25 + 0.24 = 1.365 vs 0.875
        (0.6, W.APPROACH_WINS_WITH_CONSTRAINT),  # 0.99 vs 0.875
        (0.4, W.DEFERRED),  # 0.74 vs 0.875
    ],
)
def test_each_outcome(approach: float, expected: ConflictOutcome) -> None:
    assert outcome(a_want(strength=approach), an_avoid(0.7)) is expected


@pytest.mark.parametrize(
    ("approach", "expected"),
    [
        (0.75, W.APPROACH_WINS),  # margin exactly CLEAR_MARGIN
        (0.74, W.APPROACH_WINS_WITH_CONSTRAINT),
        (0.5, W.APPROACH_WINS_WITH_CONSTRAINT),  # a tie goes ahead, with approval
        (0.49, W.DEFERRED),
    ],
)
def test_the_margins(approach: float, expected: ConflictOutcome) -> None:
    # no goal and no urgency: the scores are the strengths
    plain = a_want(strength=approach, urgency=0.0, goal=None)
    assert CLEAR_MARGIN == 0.25
    assert outcome(plain, an_avoid(0.5, urgency=0.0)) is expected


def test_only_a_narrow_win_carries_the_approval_constraint() -> None:
    (narrow,) = resolve(a_want(strength=0.6), an_avoid(0.7)).conflicts
    assert narrow.constraint is Constraint.REQUIRE_APPROVAL
    (clear,) = resolve(a_want(strength=0.9), an_avoid(0.7)).conflicts
    assert clear.constraint is None


def test_urgency_scales_strength() -> None:
    calm = a_want(strength=0.5, urgency=0.0, goal=None)
    urgent = a_want(strength=0.5, urgency=1.0, goal=None)
    avoid = an_avoid(0.6, urgency=0.0)
    assert outcome(calm, avoid) is W.DEFERRED
    assert outcome(urgent, avoid) is W.APPROACH_WINS_WITH_CONSTRAINT


def test_goals_add_priority_and_commitments_add_normative_weight() -> None:
    avoid = an_avoid(0.6, urgency=0.0)
    bare = a_want(strength=0.5, urgency=0.0, goal=None)
    assert outcome(bare, avoid) is W.DEFERRED
    assert outcome(bare.model_copy(update={"goal": "atlas-running"}), avoid) is (
        W.APPROACH_WINS_WITH_CONSTRAINT
    )
    promised = bare.model_copy(update={"commitment": "restart-atlas"})
    assert outcome(promised, avoid) is W.APPROACH_WINS_WITH_CONSTRAINT
    score, terms = conflict_score(promised, a_spec(), T0)
    assert [t.name for t in terms] == ["strength", "urgency", "commitment:restart-atlas"]
    assert score == pytest.approx(total(terms)) == pytest.approx(0.8)


def test_no_fixed_hierarchy_a_value_can_outweigh_a_goal_and_a_goal_a_value() -> None:
    assert outcome(a_want(strength=0.4), an_avoid(0.7)) is W.DEFERRED
    assert outcome(a_want(strength=0.9), an_avoid(0.7)) is W.APPROACH_WINS


def test_neither_side_is_discarded() -> None:
    approach, avoid = a_want(strength=0.4), an_avoid(0.7)
    resolved = resolve(approach, avoid)
    (conflict,) = resolved.conflicts
    assert (conflict.approach, conflict.avoid) == (approach.id, avoid.id)
    assert conflict.approach_score > 0
    assert conflict.avoid_score > 0
    assert conflict.approach_terms
    assert conflict.avoid_terms
    # Resolution changes no want: it only records the conflict.
    assert {d.kind for d in resolved.decisions} == {DecisionKind.CONFLICT_RESOLUTION}
    assert resolved.decisions[0].subjects == {
        "conflict": conflict.id,
        "want": approach.id,
        "avoid_want": avoid.id,
    }


@pytest.mark.parametrize(
    "avoid",
    [
        an_avoid(means={"capability": "logs.query", "parameters": {}}),
        an_avoid(target="ops/other"),
        an_avoid(status=WantStatus.SUPPRESSED),
    ],
    ids=["other-capability", "other-target", "inactive"],
)
def test_no_conflict_unless_an_active_avoid_want_opposes_the_same_means(avoid: Want) -> None:
    assert resolve(a_want(), avoid) == ((), ())


def test_two_approach_wants_do_not_conflict() -> None:
    assert resolve(a_want(), a_want(id="want-2")) == ((), ())


def test_a_decision_records_only_changes() -> None:
    approach, avoid = a_want(strength=0.6), an_avoid(0.7)
    first = resolve(approach, avoid)
    assert len(first.decisions) == 1
    assert resolve(approach, avoid, existing=first.conflicts).decisions == ()
    stronger = resolve(
        approach.model_copy(update={"strength": 0.9}), avoid, existing=first.conflicts
    )
    assert [d.outcome for d in stronger.decisions] == ["approach_wins"]


def test_a_conflict_closes_when_its_wants_are_no_longer_both_active() -> None:
    approach, avoid = a_want(strength=0.6), an_avoid(0.7)
    first = resolve(approach, avoid)
    satisfied = approach.model_copy(update={"status": WantStatus.SATISFIED})
    closed = resolve(satisfied, avoid, existing=first.conflicts)
    (conflict,) = closed.conflicts
    assert not conflict.open
    assert [d.outcome for d in closed.decisions] == ["closed"]


unit = st.floats(min_value=0, max_value=1)


@settings(max_examples=100, deadline=None)
@given(unit, unit, unit, unit, st.booleans())
def test_the_same_inputs_give_the_same_resolution(
    a: float, au: float, v: float, vu: float, promised: bool
) -> None:
    approach = a_want(strength=a, urgency=au, commitment="c" if promised else None)
    avoid = an_avoid(v, urgency=vu)
    assert resolve(approach, avoid) == resolve(approach, avoid)
    assert resolve(avoid, approach) == resolve(approach, avoid)

"""Conflicts between wants, as first-class records resolved by explicit scores.

An approach want conflicts with an avoid want when the avoid want (derived from a configured
value) argues against exactly the means the approach proposes: the same capability on the same
target. Both wants must be active.

There is no fixed hierarchy (values do not always beat goals, nor goals values). Each side gets
a score, with every term recorded:

    score = decayed strength x (1 + URGENCY_WEIGHT x urgency)
            + GOAL_WEIGHT x goal priority      (when the want serves a goal)
            + NORMATIVE_WEIGHT                 (when the want carries a commitment)

and with margin = approach score - avoid score:

| margin               | outcome                                                       |
|----------------------|---------------------------------------------------------------|
| >= `CLEAR_MARGIN`    | `approach_wins`: the approach is clearly stronger             |
| >= 0                 | `approach_wins_with_constraint`: it may go ahead only with a  |
|                      | person's approval (`require_approval`)                        |
| < 0                  | `deferred`: no intention forms for the approach while it holds |

Neither side is discarded: both wants stay as they are, and the conflict records the outcome
and both scores. A conflict whose wants are no longer both active closes (`open` false).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from enum import StrEnum
from typing import Final, NamedTuple

from pydantic import AwareDatetime

from minds.domain.base import Model
from minds.domain.ledger import idempotency_key
from minds.domain.resources.mind import MindSpec
from minds.domain.volition.decisions import DecisionKind, Term, TermOp, VolitionDecision, total
from minds.domain.volition.wants import Valence, Want, WantStatus, decayed_strength

__all__ = [
    "CLEAR_MARGIN",
    "GOAL_WEIGHT",
    "NORMATIVE_WEIGHT",
    "URGENCY_WEIGHT",
    "Conflict",
    "ConflictOutcome",
    "Constraint",
    "Resolved",
    "conflict_id",
    "conflict_score",
    "opposes",
    "resolve_conflicts",
]

#: Urgency scales strength: a fully urgent want counts half again as much.
URGENCY_WEIGHT: Final = 0.5
#: A goal adds its priority times this: the operator declared it, so it weighs beyond the
#: evidence's strength.
GOAL_WEIGHT: Final = 0.3
#: A commitment adds this normative weight: a promise counts whatever the evidence.
NORMATIVE_WEIGHT: Final = 0.3
#: How much stronger an approach must be to win outright over a value: a quarter of a
#: full-strength want. Closer than that, a person decides.
CLEAR_MARGIN: Final = 0.25


class ConflictOutcome(StrEnum):
    APPROACH_WINS = "approach_wins"
    APPROACH_WINS_WITH_CONSTRAINT = "approach_wins_with_constraint"
    DEFERRED = "deferred"


class Constraint(StrEnum):
    REQUIRE_APPROVAL = "require_approval"


class Conflict(Model):
    """One conflict between an approach want and the avoid want that opposes its means."""

    id: str
    namespace: str
    mind: str
    approach: str  # want id
    avoid: str  # want id
    capability: str
    target: str
    outcome: ConflictOutcome
    constraint: Constraint | None = None
    approach_score: float
    avoid_score: float
    approach_terms: tuple[Term, ...] = ()
    avoid_terms: tuple[Term, ...] = ()
    open: bool = True
    updated_at: AwareDatetime


class Resolved(NamedTuple):
    """Every conflict open now, and those that just closed; decisions for each change."""

    conflicts: tuple[Conflict, ...]
    decisions: tuple[VolitionDecision, ...]


def conflict_id(approach: str, avoid: str) -> str:
    return "conflict-" + idempotency_key("conflict", approach, avoid)[:24]


def opposes(avoid: Want, approach: Want) -> bool:
    """Whether an active avoid want argues against an active approach want's means."""
    return (
        avoid.valence is Valence.AVOID
        and approach.valence is Valence.APPROACH
        and avoid.status is WantStatus.ACTIVE
        and approach.status is WantStatus.ACTIVE
        and avoid.means is not None
        and approach.means is not None
        and avoid.means.capability == approach.means.capability
        and avoid.target is not None
        and avoid.target == (approach.target or approach.subject)
    )


def conflict_score(want: Want, spec: MindSpec, now: datetime) -> tuple[float, tuple[Term, ...]]:
    """A want's weight in a conflict, with its terms (see the module notes)."""
    terms = [
        Term(name="strength", op=TermOp.SET, value=decayed_strength(want, now)),
        Term(name="urgency", op=TermOp.MULTIPLY, value=1.0 + URGENCY_WEIGHT * want.urgency),
    ]
    goal = next((g for g in spec.goals if g.name == want.goal), None)
    if goal is not None:
        terms.append(
            Term(name=f"goal:{goal.name}", op=TermOp.ADD, value=GOAL_WEIGHT * goal.priority)
        )
    if want.commitment is not None:
        terms.append(
            Term(name=f"commitment:{want.commitment}", op=TermOp.ADD, value=NORMATIVE_WEIGHT)
        )
    return total(terms), tuple(terms)


def _outcome(margin: float) -> tuple[ConflictOutcome, Constraint | None]:
    if margin >= CLEAR_MARGIN:
        return ConflictOutcome.APPROACH_WINS, None
    if margin >= 0:
        return ConflictOutcome.APPROACH_WINS_WITH_CONSTRAINT, Constraint.REQUIRE_APPROVAL
    return ConflictOutcome.DEFERRED, None


def resolve_conflicts(
    wants: Sequence[Want],
    mind_spec: MindSpec,
    existing: Sequence[Conflict],
    now: datetime,
    *,
    namespace: str,
    mind: str,
) -> Resolved:
    """Find and resolve every conflict among the wants; close those that no longer hold.
    A decision records each new conflict, each change of outcome and each closing. Same
    inputs, same result."""
    before: Mapping[str, Conflict] = {c.id: c for c in existing}
    conflicts: dict[str, Conflict] = {}
    decisions: list[VolitionDecision] = []
    ordered = sorted(wants, key=lambda w: w.id)
    for approach in ordered:
        for avoid in ordered:
            if not opposes(avoid, approach):
                continue
            assert approach.means is not None
            a_score, a_terms = conflict_score(approach, mind_spec, now)
            v_score, v_terms = conflict_score(avoid, mind_spec, now)
            outcome, constraint = _outcome(a_score - v_score)
            conflict = Conflict(
                id=conflict_id(approach.id, avoid.id),
                namespace=namespace,
                mind=mind,
                approach=approach.id,
                avoid=avoid.id,
                capability=approach.means.capability,
                target=avoid.target or "",
                outcome=outcome,
                constraint=constraint,
                approach_score=a_score,
                avoid_score=v_score,
                approach_terms=a_terms,
                avoid_terms=v_terms,
                updated_at=now,
            )
            conflicts[conflict.id] = conflict
            old = before.get(conflict.id)
            if old is None or not old.open or old.outcome is not outcome:
                decisions.append(_decision(conflict, _reason(conflict), conflict.outcome.value))
    for old in sorted(before.values(), key=lambda c: c.id):
        if old.open and old.id not in conflicts:
            closed = old.model_copy(update={"open": False, "updated_at": now})
            conflicts[closed.id] = closed
            decisions.append(_decision(closed, "the wants are no longer both active", "closed"))
    return Resolved(tuple(conflicts[c] for c in sorted(conflicts)), tuple(decisions))


def _reason(c: Conflict) -> str:
    margin = c.approach_score - c.avoid_score
    versus = f"approach {c.approach_score:.3f} vs avoid {c.avoid_score:.3f} (margin {margin:+.3f})"
    if c.outcome is ConflictOutcome.APPROACH_WINS:
        return f"{versus}: clearly stronger (margin >= {CLEAR_MARGIN})"
    if c.outcome is ConflictOutcome.APPROACH_WINS_WITH_CONSTRAINT:
        return f"{versus}: stronger but not clearly; it may act only with approval"
    return f"{versus}: the value weighs more; deferred while it holds"


def _decision(c: Conflict, reason: str, outcome: str) -> VolitionDecision:
    return VolitionDecision(
        namespace=c.namespace,
        mind=c.mind,
        kind=DecisionKind.CONFLICT_RESOLUTION,
        subjects={"conflict": c.id, "want": c.approach, "avoid_want": c.avoid},
        outcome=outcome,
        reason=reason,
        inputs={
            "capability": c.capability,
            "target": c.target,
            "approachTerms": [t.to_k8s() for t in c.approach_terms],
            "avoidTerms": [t.to_k8s() for t in c.avoid_terms],
        },
        scores={
            "approach": c.approach_score,
            "avoid": c.avoid_score,
            "margin": c.approach_score - c.avoid_score,
        },
        at=c.updated_at,
    )

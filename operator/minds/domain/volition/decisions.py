"""The record of every choice volition makes.

Each derivation, reinforcement, satisfaction, suppression and expiry of a want, each conflict
resolution, each formation (or not), each reconsideration and each change of a commitment's
state is one `VolitionDecision`: what was decided, about which wants, intentions, conflicts or
commitments, on which inputs, with which scores and terms, and why. The engine appends them to
the `volition_decisions` table, which the database keeps append-only.

Scores are sums and products of recorded `Term`s, so a reader can recompute every number from
the record alone: `total(terms)` folds them in order.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from enum import StrEnum

from pydantic import AwareDatetime, Field, JsonValue

from minds.domain.base import Model
from minds.domain.ledger import idempotency_key

__all__ = ["DecisionKind", "Term", "TermOp", "VolitionDecision", "total", "unit"]


class DecisionKind(StrEnum):
    DERIVATION = "derivation"  # a want derived, reactivated, or a candidate rejected
    REINFORCEMENT = "reinforcement"  # new evidence for an active want
    SATISFACTION = "satisfaction"  # the world (or a fulfilled intention) satisfied a want
    SUPPRESSION = "suppression"
    EXPIRY = "expiry"  # faded, or beyond the per-mind cap
    CONFLICT_RESOLUTION = "conflict_resolution"
    FORMATION = "formation"
    RECONSIDERATION = "reconsideration"
    COMMITMENT_STATE = "commitment_state"


class TermOp(StrEnum):
    SET = "set"
    ADD = "add"
    MULTIPLY = "multiply"


class Term(Model):
    """One recorded contribution to a score, e.g. `drive:reliability multiply 1.15`."""

    name: str = Field(min_length=1, max_length=200)
    op: TermOp
    value: float


def total(terms: Iterable[Term]) -> float:
    """The score the terms make, applied in order from 0."""
    result = 0.0
    for term in terms:
        if term.op is TermOp.SET:
            result = term.value
        elif term.op is TermOp.ADD:
            result += term.value
        else:
            result *= term.value
    return result


def unit(value: float) -> float:
    """Clamped into [0, 1]."""
    return min(max(value, 0.0), 1.0)


class VolitionDecision(Model):
    """One row of `volition_decisions`.

    `subjects` maps a role to an id (`want`, `avoid_want`, `intention`, `conflict`,
    `commitment`), so the ledger can find every choice about one entity. `basis` names the
    grounds of a choice that a cycle may make again unchanged (a weak candidate rejected on the
    same evidence, a want not formed for the same reason): the key then stays the same and the
    ledger records it once. Without a basis the decision time tells choices apart.
    """

    namespace: str
    mind: str
    kind: DecisionKind
    subjects: dict[str, str]
    outcome: str
    reason: str
    inputs: dict[str, JsonValue] = Field(default_factory=dict)
    scores: dict[str, float] = Field(default_factory=dict)
    terms: tuple[Term, ...] = ()
    at: AwareDatetime
    basis: str | None = None

    @property
    def key(self) -> str:
        """The idempotency key of the row: a replayed cycle writes nothing twice."""
        subjects = json.dumps(self.subjects, sort_keys=True)
        grounds = self.basis if self.basis is not None else self.at.isoformat()
        return idempotency_key(
            "volition_decision",
            self.namespace,
            self.mind,
            self.kind.value,
            subjects,
            self.outcome,
            grounds,
        )

    def data(self) -> dict[str, JsonValue]:
        """The row's `data` column: reason, inputs, scores and terms."""
        return {
            "reason": self.reason,
            "inputs": self.inputs,
            "scores": dict(self.scores),
            "terms": [term.to_k8s() for term in self.terms],
        }

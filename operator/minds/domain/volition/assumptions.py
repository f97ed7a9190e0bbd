"""A plan's assumptions, held against what the mind believes now.

The cycle forms an intention to act on a workload because it observed the workload unmet; that
observation is held as a belief (`supporting_belief`: "workload NS/NAME is degraded"), which the
planner records as the plan's assumption. Each observation of a goal's subject, and each finding
an investigation made about a workload (its status reading), is evidence about that belief
(`observed_evidence`); a direct observation outweighs any history (`OBSERVATION_WEIGHT`), so the
belief follows the workload.

A plan whose action carries an expectation also assumes it (the planner's `direct` strategy):
the belief the expectation is tested against (its description; the executor opens the
prediction with it), at least at the planner's threshold (a person's plan may ask for more). A
refuted prediction is evidence against that belief (the ledger weighs it when it resolves the
prediction), so an open plan relying on the same outcome is reconsidered once the belief falls
below what it assumed: a restart seen not to heal a workload is not done again by a plan that
assumed it would.

`weakened` says which assumption of an open plan the beliefs no longer carry:

| the belief now                                   | weakened                              |
|--------------------------------------------------|---------------------------------------|
| held at or above the assumption's `min_confidence` | no                                  |
| contradicted: its confidence fell below it       | yes, with that confidence             |
| never held by this mind                          | no: what it never weighed cannot weaken |

The answer is the `weakened_belief` trigger of `reconsider()`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime
from typing import Final, NamedTuple

from pydantic import JsonValue

from minds.domain.beliefs import BeliefRecord, updated_confidence
from minds.domain.beliefs import normalise_statement as normalised
from minds.domain.planning.model import Assumption
from minds.domain.volition.wants import FINDINGS, Observation, healthy

__all__ = [
    "FORMED_CONFIDENCE",
    "OBSERVATION_WEIGHT",
    "Conclusion",
    "Evidence",
    "Weakened",
    "concluded",
    "conclusion",
    "observed_evidence",
    "supporting_belief",
    "weakened",
]

#: The weight of one direct observation of a workload: its odds factor (2**7 = 128) exceeds the
#: odds of the most certain belief (0.99 / 0.01 = 99), so one observation turns the belief.
OBSERVATION_WEIGHT: Final = 7.0

#: The confidence a belief is formed with before its first evidence: undecided.
FORMED_CONFIDENCE: Final = 0.5


def supporting_belief(subject: str | None) -> str | None:
    """The belief that moves a want to act on a workload (`namespace/name`); None for a subject
    that is not a workload."""
    if not subject or "/" not in subject or ":" in subject:
        return None
    return f"workload {subject} is degraded"


class Evidence(NamedTuple):
    """One observation as evidence about one belief: `form` it when absent (only an observation
    that supports it forms it: a running workload is no news)."""

    statement: str
    supports: bool
    form: bool
    key: str
    note: str
    at: datetime


def observed_evidence(observations: Iterable[Observation]) -> list[Evidence]:
    """What the observations of goals' subjects, and findings about workloads, say about their
    supporting beliefs; an observation that tells nothing (a rollout under way, a finding
    without a status reading) is not evidence."""
    found = []
    for o in observations:
        met = healthy(o)
        statement = supporting_belief(o.subject)
        if met is None or statement is None:
            continue
        found.append(
            Evidence(
                statement=statement,
                supports=not met,
                form=not met,
                key=_evidence_key(o),
                note=f"{o.capability} observed {o.subject} {_state(o, met)}{_cited(o)}",
                at=o.at,
            )
        )
    # In the order it was seen: a finding read before this cycle's own observation does not
    # have the last word on the belief.
    return sorted(found, key=lambda e: e.at)


class Conclusion(NamedTuple):
    """What weighing one piece of evidence does to its belief as held: the confidence
    ``before`` (None: the belief is not held, and the evidence forms it) and ``after``."""

    statement: str
    supports: bool
    before: float | None
    after: float

    @property
    def changes(self) -> bool:
        """Whether it forms the belief or moves its confidence."""
        return self.before != self.after

    @property
    def facts(self) -> dict[str, JsonValue]:
        """What two conclusions must share to be the same: the belief, which way the evidence
        points, and where it leaves the belief."""
        return {"belief": normalised(self.statement), "supports": self.supports, "to": self.after}


def concluded(evidence: Evidence, held: Mapping[str, float]) -> Conclusion | None:
    """What ``evidence`` does to its belief, given the confidence of each belief held (by
    normalised statement); None when it is no news (a running workload the mind never
    believed degraded), as `weigh` skips it."""
    before = held.get(normalised(evidence.statement))
    if before is None and not evidence.form:
        return None
    prior = FORMED_CONFIDENCE if before is None else before
    after = updated_confidence(prior, evidence.supports, OBSERVATION_WEIGHT)
    return Conclusion(evidence.statement, evidence.supports, before, after)


def conclusion(observation: Observation, beliefs: Iterable[BeliefRecord]) -> Conclusion | None:
    """What one observation, weighed, would do to the belief it is evidence about."""
    found = observed_evidence([observation])
    if not found:
        return None
    return concluded(found[0], {normalised(b.statement): b.confidence for b in beliefs})


def _evidence_key(o: Observation) -> str:
    """One piece of evidence per observation: a status reading by its time, a finding by its
    plan and step."""
    if o.capability == FINDINGS:
        return f"finding:{o.fields.get('plan')}/{o.fields.get('step')}"
    return f"observed:{o.at.isoformat()}"


def _state(o: Observation, met: bool) -> str:
    """The state a status reading reported; a finding says running or unhealthy."""
    return str(o.fields.get("state") or ("running" if met else "unhealthy"))


def _cited(o: Observation) -> str:
    return (
        f" (finding of {o.fields.get('plan')}/{o.fields.get('step')})"
        if o.capability == FINDINGS
        else ""
    )


class Weakened(NamedTuple):
    """An assumption the beliefs no longer carry, and the belief's confidence now."""

    belief: str
    confidence: float
    min_confidence: float

    @property
    def reason(self) -> str:
        return (
            f"the plan assumed {self.belief!r} (at least {self.min_confidence:g}); "
            f"the mind now holds it at {self.confidence:.2f}"
        )


def weakened(assumptions: Sequence[Assumption], beliefs: Iterable[BeliefRecord]) -> Weakened | None:
    """The first of a plan's assumptions the beliefs weaken (see the module notes); None when
    they all hold."""
    held = {normalised(b.statement): b.confidence for b in beliefs}
    for assumption in assumptions:
        confidence = held.get(normalised(assumption.belief))
        if confidence is not None and confidence < assumption.min_confidence:
            return Weakened(assumption.belief, confidence, assumption.min_confidence)
    return None

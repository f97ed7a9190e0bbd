"""The cycle's observations, weighed as evidence about the beliefs that move its wants.

The rule (which belief, which way, how much) is ``minds.domain.volition.assumptions``; this
module writes it to the ledger. An evidence key names the belief and the observation, so a
cycle replayed after a crash weighs nothing twice. An observation that extended a series
(``minds.domain.series``) was found the same as the last, belief conclusion included: its
evidence is told by the series, and weighed only if it would move its belief after all (the
belief moved since it was observed).
"""

from __future__ import annotations

from collections.abc import Iterable

from minds.domain.beliefs import normalise_statement
from minds.domain.volition.assumptions import (
    FORMED_CONFIDENCE,
    OBSERVATION_WEIGHT,
    concluded,
    observed_evidence,
)
from minds.domain.volition.wants import Observation
from minds.engine.ports import Beliefs


def weigh(
    ledger: Beliefs,
    namespace: str,
    mind: str,
    observations: Iterable[Observation],
    routine: Iterable[Observation] = (),
) -> int:
    """Weigh each observation that tells something; how many were weighed. ``routine``: the
    observations that extended a series."""
    weighed = 0
    # The beliefs held before this cycle's evidence, with their confidence as it moves: one
    # formed on the way is not news to a later observation that would not form it.
    held = {normalise_statement(b.statement): b.confidence for b in ledger.beliefs(namespace, mind)}
    told = [(e, False) for e in observed_evidence(observations)]
    told += [(e, True) for e in observed_evidence(routine)]
    # In the order it was seen (see `observed_evidence`).
    for evidence, in_series in sorted(told, key=lambda t: t[0].at):
        conclusion = concluded(evidence, held)
        if conclusion is None or (in_series and not conclusion.changes):
            continue
        at = evidence.at
        belief = ledger.upsert_belief(namespace, mind, evidence.statement, FORMED_CONFIDENCE, at)
        belief = ledger.add_evidence(
            belief.id,
            supports=evidence.supports,
            weight=OBSERVATION_WEIGHT,
            key=f"{belief.id}:{evidence.key}",
            at=at,
            note=evidence.note,
        )
        key = normalise_statement(belief.statement)
        if key in held:
            held[key] = belief.confidence
        weighed += 1
    return weighed

"""The cycle's observations, weighed as evidence about the beliefs that move its wants.

The rule (which belief, which way, how much) is ``minds.domain.volition.assumptions``; this
module writes it to the ledger. An evidence key names the belief and the observation, so a
cycle replayed after a crash weighs nothing twice.
"""

from __future__ import annotations

from collections.abc import Iterable

from minds.domain.beliefs import normalise_statement
from minds.domain.volition.assumptions import (
    FORMED_CONFIDENCE,
    OBSERVATION_WEIGHT,
    observed_evidence,
)
from minds.domain.volition.wants import Observation
from minds.engine.ports import Beliefs


def weigh(ledger: Beliefs, namespace: str, mind: str, observations: Iterable[Observation]) -> int:
    """Weigh each observation that tells something; how many were weighed."""
    weighed = 0
    held = {normalise_statement(b.statement) for b in ledger.beliefs(namespace, mind)}
    for evidence in observed_evidence(observations):
        at = evidence.at
        if not evidence.form and normalise_statement(evidence.statement) not in held:
            continue  # a running workload the mind never believed degraded is no news
        belief = ledger.upsert_belief(namespace, mind, evidence.statement, FORMED_CONFIDENCE, at)
        ledger.add_evidence(
            belief.id,
            supports=evidence.supports,
            weight=OBSERVATION_WEIGHT,
            key=f"{belief.id}:{evidence.key}",
            at=at,
            note=evidence.note,
        )
        weighed += 1
    return weighed

"""Recording volition's choices: the cycle's and the executor's go through the same door."""

from __future__ import annotations

from collections.abc import Iterable

from minds.domain.volition.decisions import VolitionDecision
from minds.engine.ports import Decisions


def record_decisions(ledger: Decisions, decisions: Iterable[VolitionDecision]) -> int:
    """Append each decision under its own key; how many were new (a replay adds none)."""
    written = 0
    for d in decisions:
        written += ledger.record_decision(
            namespace=d.namespace,
            mind=d.mind,
            kind=d.kind.value,
            outcome=d.outcome,
            subjects=d.subjects,
            data=d.data(),
            at=d.at,
            key=d.key,
        )
    return written

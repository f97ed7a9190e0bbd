"""Findings re-enter the cycle: what an investigation's `summarise_findings` step recorded is
taken in by the mind's next cycle as an observation, once.

The executor records a finding as an `observation_recorded` row of the plan: the summary's text
and the `results` of the steps it summarises (`finding_results`: each reading's step, capability,
parameters and reported fields; free text such as log lines stays in the summary only). What a
finding says of its subject's health is read from those results (``wants.healthy``). Once the plan's
intention is a fulfilled investigation (its plan completed), the next cycle takes the finding
in with its source (plan and step) and leaves a `findings_taken_in` row of the mind, keyed by
the plan's uid and the step: a later cycle, or another controller, finds the key and never takes
the same finding in twice.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta

from pydantic import JsonValue

from minds.domain.intentions import IntentionKind, IntentionRecord, IntentionStatus
from minds.domain.ledger import EventRecord, SubjectRef, idempotency_key
from minds.domain.planning.model import Plan, Step, StepState
from minds.domain.volition.wants import FINDINGS, Observation

__all__ = [
    "FINDINGS",
    "RECORDED",
    "TAKEN_IN",
    "WINDOW",
    "TakenIn",
    "finding_results",
    "marker_key",
    "take_in",
]

#: The plan's row the executor writes for a `summarise_findings` step.
RECORDED = "observation_recorded"
#: The mind's row that says a finding was taken in.
TAKEN_IN = "findings_taken_in"
#: Reported fields a finding's results leave out: free text (log lines) is for people, and
#: already in the summary, masked; the results carry what rules read.
FREE_TEXT = frozenset({"text"})
#: How far back a cycle looks for findings and their markers. A finding is taken in by the cycle
#: after its plan completes, so a day is ample; the bound keeps a cycle's reading from growing
#: with the mind's history (a controller down for longer leaves older findings in the ledger only).
WINDOW = timedelta(days=1)


@dataclass(frozen=True)
class TakenIn:
    observations: tuple[Observation, ...]
    markers: tuple[EventRecord, ...]


def finding_results(plan: Plan, step: Step, states: Mapping[str, StepState]) -> list[JsonValue]:
    """The readings a `summarise_findings` step summarises, as its finding's `results`: for
    each dependency, its key, capability, parameters and the fields it reported (None when it
    reported none: it failed, or was skipped)."""
    by_key = {s.key: s for s in plan.steps}
    results: list[JsonValue] = []
    for key in step.depends_on:
        read = by_key.get(key)
        seen = states[key].observation if key in states else None
        fields = (seen.fields or {}) if seen is not None else {}
        results.append(
            {
                "step": key,
                "capability": read.capability if read is not None else None,
                "parameters": dict(read.parameters or {}) if read is not None else {},
                "fields": {k: v for k, v in fields.items() if k not in FREE_TEXT} or None,
            }
        )
    return results


def marker_key(plan_uid: str, step: str) -> str:
    return idempotency_key("findings", plan_uid, step)


def _completed_investigation(intention: IntentionRecord | None) -> bool:
    return (
        intention is not None
        and intention.kind is IntentionKind.INVESTIGATION
        and intention.status is IntentionStatus.FULFILLED
    )


def take_in(
    recorded: Iterable[EventRecord],
    taken: Iterable[EventRecord],
    intentions: Mapping[str, IntentionRecord],
    now: datetime,
    *,
    mind: SubjectRef,
) -> TakenIn:
    """The findings of completed investigations not yet taken in, as observations of the
    investigated subject (the plan's name when the intention names none), and the markers
    that take them in."""
    seen = {t.idempotency_key for t in taken}
    observations: list[Observation] = []
    markers: list[EventRecord] = []
    for row in recorded:
        intention = intentions.get(str(row.payload.get("intention") or ""))
        step = str(row.payload.get("step") or "")
        key = marker_key(row.subject.uid or row.subject.name, step)
        if row.type != RECORDED or key in seen or not _completed_investigation(intention):
            continue
        assert intention is not None  # for mypy: checked just above
        seen.add(key)
        source = {"plan": row.subject.name, "step": step, "intention": intention.id}
        observations.append(
            Observation(
                subject=intention.subject or f"plan:{row.subject.name}",
                capability=FINDINGS,
                fields={
                    **source,
                    "findings": row.payload.get("observation"),
                    "results": row.payload.get("results") or [],
                },
                at=row.occurred_at,
            )
        )
        markers.append(
            EventRecord(
                mind=row.mind,
                namespace=row.namespace,
                type=TAKEN_IN,
                subject=mind,
                payload={**source, "subject": observations[-1].subject},
                occurred_at=now,
                idempotency_key=key,
            )
        )
    return TakenIn(tuple(observations), tuple(markers))

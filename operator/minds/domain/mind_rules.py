"""What a Mind's spec means once the schema has accepted it.

The API server refuses what the CRD schema and its CEL rules can express. What is left is
checked here: rules that need the capability vocabulary, or that relate fields the schema sees
separately. The result is a Ready condition whose reason and message name the field, and the
ledger events that record the mind's lifecycle.
"""

from __future__ import annotations

import fnmatch
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from enum import StrEnum
from typing import Any

from minds.domain.resources.common import Condition, ConditionStatus, set_condition
from minds.domain.resources.mind import MindSpec

READY = "Ready"
DEGRADED = "Degraded"


class ReadyReason(StrEnum):
    ACCEPTED = "Accepted"
    INVALID_SPEC = "InvalidSpec"
    INACTIVE = "Inactive"
    LEDGER_UNAVAILABLE = "LedgerUnavailable"
    CYCLE_STALLED = "CycleStalled"


class DegradedReason(StrEnum):
    AS_EXPECTED = "AsExpected"
    SPEC_REJECTED = "SpecRejected"
    LEDGER_UNAVAILABLE = "LedgerUnavailable"
    CYCLE_STALLED = "CycleStalled"


@dataclass(frozen=True)
class SpecProblem:
    """One thing wrong with a spec, with the path of the field as ``kubectl explain`` names it."""

    field: str
    message: str

    def __str__(self) -> str:
        return f"{self.field}: {self.message}"


def _matches_any(pattern: str, capabilities: Collection[str]) -> bool:
    return any(fnmatch.fnmatchcase(name, pattern) for name in capabilities)


def check_spec(
    spec: MindSpec, capabilities: Collection[str], model_endpoints: Collection[str] = ()
) -> list[SpecProblem]:
    """Problems the schema cannot see: capability names and patterns that match nothing, and a
    model endpoint the controller's configuration does not list.

    A pattern that matches no registered capability is almost always a typo, and a typo in a
    ``refrain`` commitment or a ``deny`` rule would silently protect nothing: refuse it.
    """
    problems: list[SpecProblem] = []
    if spec.model is not None and spec.model.endpoint not in model_endpoints:
        listed = ", ".join(sorted(model_endpoints)) or "none"
        problems.append(
            SpecProblem(
                "spec.model.endpoint",
                f"{spec.model.endpoint!r} is not a model endpoint of this controller "
                f"(configured: {listed}); the cluster admin chooses the endpoints",
            )
        )
    for i, name in enumerate(spec.locked_capabilities):
        if name not in capabilities:
            problems.append(
                SpecProblem(f"spec.lockedCapabilities[{i}]", f"unknown capability {name!r}")
            )
    for i, rule in enumerate(spec.capability_policy):
        if not _matches_any(rule.capability, capabilities):
            problems.append(
                SpecProblem(
                    f"spec.capabilityPolicy[{i}].capability",
                    f"{rule.capability!r} matches no registered capability",
                )
            )
    for i, commitment in enumerate(spec.commitments):
        if not _matches_any(commitment.capability, capabilities):
            problems.append(
                SpecProblem(
                    f"spec.commitments[{i}].capability",
                    f"{commitment.capability!r} matches no registered capability",
                )
            )
    for i, value in enumerate(spec.values):
        for j, pattern in enumerate(value.avoid):
            if not _matches_any(pattern, capabilities):
                problems.append(
                    SpecProblem(
                        f"spec.values[{i}].avoid[{j}]",
                        f"{pattern!r} matches no registered capability",
                    )
                )
    return problems


def ready_condition(
    spec: MindSpec, problems: list[SpecProblem], generation: int, now: datetime
) -> Condition:
    if problems:
        listed = "; ".join(str(p) for p in problems[:10])
        more = f" (and {len(problems) - 10} more)" if len(problems) > 10 else ""
        return Condition(
            type=READY,
            status=ConditionStatus.FALSE,
            reason=ReadyReason.INVALID_SPEC,
            message=f"{listed}{more}",
            last_transition_time=now,
            observed_generation=generation,
        )
    if not spec.active:
        return Condition(
            type=READY,
            status=ConditionStatus.TRUE,
            reason=ReadyReason.INACTIVE,
            message="accepted; inactive minds observe nothing and never act",
            last_transition_time=now,
            observed_generation=generation,
        )
    return Condition(
        type=READY,
        status=ConditionStatus.TRUE,
        reason=ReadyReason.ACCEPTED,
        message="spec accepted",
        last_transition_time=now,
        observed_generation=generation,
    )


# -- health: Ready means the mind works, not only that its spec was accepted ------------------

#: A cycle is late once this many intervals passed without one completing.
STALL_INTERVALS = 2


@dataclass(frozen=True)
class Vitals:
    """What the controller knows of a Mind's work besides its spec."""

    ledger_answers: bool
    last_cycle_at: datetime | None
    #: When the cycle's clock started: the later of the Mind's creation and this controller's
    #: start (a controller that was down could not run cycles, and says so only once it runs).
    since: datetime
    interval: timedelta
    active: bool


def spec_accepted(conditions: Sequence[Mapping[str, Any]]) -> bool:
    """Whether the Mind's spec was accepted, whatever its health: its cycle runs only then, and
    a cycle must run for a stalled Mind to be Ready again."""
    ready = next((c for c in conditions if c.get("type") == READY), None)
    return ready is not None and ready.get("reason") != ReadyReason.INVALID_SPEC


def _stalled(vitals: Vitals, now: datetime) -> datetime | None:
    """The time the last cycle (or the clock) started from, when it is more than two intervals
    ago; None while the cycle keeps time."""
    start = max(vitals.last_cycle_at or vitals.since, vitals.since)
    return start if now - start > vitals.interval * STALL_INTERVALS else None


def _problem(vitals: Vitals, accepted_at: datetime | None, now: datetime) -> tuple[str, str] | None:
    if not vitals.ledger_answers:
        return ReadyReason.LEDGER_UNAVAILABLE, "the ledger does not answer: no cycle can run"
    # A spec just accepted (again) starts the clock: its first cycle is on its way.
    vitals = vitals if accepted_at is None else _later(vitals, accepted_at)
    start = _stalled(vitals, now)
    if start is None:
        return None
    seconds = int(vitals.interval.total_seconds())
    return (
        ReadyReason.CYCLE_STALLED,
        f"no cycle completed since {start.isoformat()} "
        f"(more than {STALL_INTERVALS} intervals of {seconds} s)",
    )


def _healthy_since(previous: Condition | None, now: datetime) -> datetime | None:
    """When the Mind last became healthy, which starts the cycle's clock too: a spec accepted
    just now (after a rejection) or earlier (Degraded turned False then) has had its first
    cycle woken at that moment, however long ago the cycle before it ran."""
    if previous is None:
        return None
    if previous.reason == DegradedReason.SPEC_REJECTED:
        return now
    return previous.last_transition_time if previous.status == ConditionStatus.FALSE else None


def _later(vitals: Vitals, at: datetime) -> Vitals:
    return Vitals(
        vitals.ledger_answers, vitals.last_cycle_at, max(vitals.since, at), vitals.interval,
        vitals.active,
    )  # fmt: skip


def health_conditions(
    conditions: list[Condition], vitals: Vitals, generation: int, now: datetime
) -> list[Condition]:
    """``Ready`` and ``Degraded`` from the spec's verdict already in ``conditions`` (see
    ``ready_condition``) and the Mind's vitals. Ready is True only while the spec is accepted,
    the ledger answers and a cycle completed within two intervals; Degraded says why not."""
    ready = next((c for c in conditions if c.type == READY), None)
    if ready is None:
        return conditions  # no verdict on the spec yet: nothing to say of its health
    if ready.reason == ReadyReason.INVALID_SPEC:
        degraded = _degraded(ConditionStatus.TRUE, DegradedReason.SPEC_REJECTED, ready.message)
        return set_condition(conditions, _at(degraded, generation, now))
    previous = next((c for c in conditions if c.type == DEGRADED), None)
    accepted_at = _healthy_since(previous, now)
    problem = _problem(vitals, accepted_at, now)
    if problem is None:
        fine = ReadyReason.ACCEPTED if vitals.active else ReadyReason.INACTIVE
        said = (
            "spec accepted, the ledger answers and the cycle keeps time"
            if vitals.active
            else "accepted; inactive minds observe nothing and never act"
        )
        ready = _condition(READY, ConditionStatus.TRUE, fine, said)
        degraded = _degraded(ConditionStatus.FALSE, DegradedReason.AS_EXPECTED, "nothing wrong")
    else:
        reason, message = problem
        ready = _condition(READY, ConditionStatus.FALSE, reason, message)
        degraded = _degraded(ConditionStatus.TRUE, DegradedReason(reason), message)
    out = set_condition(conditions, _at(ready, generation, now))
    return set_condition(out, _at(degraded, generation, now))


def _condition(type_: str, status: ConditionStatus, reason: str, message: str) -> Condition:
    # The time is set by ``_at``, with the generation.
    return Condition(
        type=type_, status=status, reason=reason, message=message[:4096],
        last_transition_time=datetime.min,
    )  # fmt: skip


def _degraded(status: ConditionStatus, reason: str, message: str) -> Condition:
    return _condition(DEGRADED, status, reason, message)


def _at(condition: Condition, generation: int, now: datetime) -> Condition:
    return condition.model_copy(
        update={"last_transition_time": now, "observed_generation": generation}
    )

"""Wants: what a mind is moved towards (or against), before it intends anything.

A want is derived, deterministically and selectively, from evidence only:

| origin              | evidence                                                       | means    |
|---------------------|----------------------------------------------------------------|----------|
| `goal_unmet`        | the latest observation of a goal's subject shows it unmet      | restart  |
| `goal_stalled`      | ... and it has been unmet for `GOAL_STALLED_AFTER`             | (look)   |
| `failed_prediction` | a refuted prediction                                           | (look)   |
| `contradiction`     | a held belief whose check a newer observation fails            | (look)   |
| `request`           | a question or request on the Mind (`kubectl minds ask` adds)   | (look)   |
| `due_commitment`    | a `do` commitment that is due or overdue                       | its own  |
| `value`             | an approach want proposes means a configured value avoids      | opposes  |

"(look)": no means; the intention formed is an investigation of the subject.

Strength is a fold of recorded terms: a base by origin (for predictions and contradictions,
plus the confidence that was let down), plus goal priority, times each declared drive the
origin touches; a value-derived avoid want takes the value's weight. Candidates below
`STORE_THRESHOLD` are not stored (a decision records the rejection). A want's id comes from
mind, subject and origin, so the same subject reinforces instead of duplicating, but only with
evidence newer than any it has absorbed: repeating old evidence changes nothing.

`strength` is the strength as of `last_reinforced_at`; it decays with a half-life of
`HALF_LIFE` from then (`decayed_strength`). Faded wants expire, and so do the weakest active
wants beyond `MAX_ACTIVE_WANTS`. A suppressed want (after "no possible plan") is left alone
until `suppressed_until`; after that, new evidence reactivates it.

A goal's subject is observed with `service.status`: state `running` meets the goal,
`progressing` (a rollout under way) tells nothing, anything else (or no state: the workload is
missing) leaves it unmet. No observation, or only one older than `EVIDENCE_HORIZON`, is not
evidence of anything.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta
from enum import StrEnum
from fnmatch import fnmatchcase
from typing import Annotated, Final, NamedTuple

from pydantic import AwareDatetime, Field, JsonValue, ValidationError

from minds.domain.base import Model
from minds.domain.beliefs import BeliefRecord, PredictionRecord, PredictionStatus
from minds.domain.capabilities.registry import REGISTRY, CapabilityRegistry
from minds.domain.ledger import idempotency_key
from minds.domain.planning.model import Check
from minds.domain.planning.views import Means
from minds.domain.resources.mind import CommitmentMode, Goal, MindSpec
from minds.domain.volition.commitments import (
    CommitmentContext,
    CommitmentState,
    commitment_state,
    concrete_means,
    due_at,
)
from minds.domain.volition.decisions import DecisionKind, Term, TermOp, VolitionDecision, total
from minds.domain.volition.decisions import unit as _unit

__all__ = [
    "BASE_STRENGTH",
    "DRIVES_BY_ORIGIN",
    "DRIVE_GAIN",
    "DRIVE_NEUTRAL",
    "EVIDENCE_HORIZON",
    "FADED_BELOW",
    "GOAL_PRIORITY_GAIN",
    "GOAL_STALLED_AFTER",
    "HALF_LIFE",
    "HELD_BELIEF",
    "MAX_ACTIVE_WANTS",
    "OVERDUE_URGENCY",
    "REINFORCEMENT_CEILING",
    "REINFORCEMENT_STEP",
    "STORE_THRESHOLD",
    "SUPPRESSION_PERIOD",
    "SURPRISE_GAIN",
    "URGENCY",
    "VALUE_GAIN",
    "Derived",
    "Observation",
    "Valence",
    "Want",
    "WantOrigin",
    "WantStatus",
    "decayed_strength",
    "derive_wants",
    "goal_met",
    "held",
    "satisfy",
    "suppress",
    "want_id",
]

Unit = Annotated[float, Field(ge=0.0, le=1.0)]


class WantOrigin(StrEnum):
    FAILED_PREDICTION = "failed_prediction"
    CONTRADICTION = "contradiction"
    GOAL_UNMET = "goal_unmet"
    GOAL_STALLED = "goal_stalled"
    REQUEST = "request"
    DUE_COMMITMENT = "due_commitment"
    VALUE = "value"  # an avoid want: a configured value argues against a proposed means


class Valence(StrEnum):
    APPROACH = "approach"
    AVOID = "avoid"


class WantStatus(StrEnum):
    ACTIVE = "active"
    SATISFIED = "satisfied"
    SUPPRESSED = "suppressed"
    EXPIRED = "expired"


# -- thresholds and weights ------------------------------------------------------------------

#: Strength halves every six hours without new evidence (the seed's figure).
HALF_LIFE: Final = timedelta(hours=6)
#: Candidates weaker than this are not stored (the seed's figure).
STORE_THRESHOLD: Final = 0.35
#: A want that has decayed below this has faded and expires: from the weakest storable
#: strength that is about ten hours without evidence, from full strength about twenty.
FADED_BELOW: Final = 0.1
#: Active wants per mind; beyond it the weakest expire. A mind wanting more at once is not
#: prioritising, and an operator could not read its status.
MAX_ACTIVE_WANTS: Final = 32
#: New evidence raises an active want by at most this much...
REINFORCEMENT_STEP: Final = 0.1
#: ...and never above its candidate strength plus this: evidence repeated every cycle keeps a
#: want alive without letting it outgrow what drives, values and priorities made it.
REINFORCEMENT_CEILING: Final = 0.2
#: A goal unmet this long is stalled: a restart and its verification, and a replan or two,
#: fit well within it, so acting is not working and the mind should look instead.
GOAL_STALLED_AFTER: Final = timedelta(minutes=30)
#: How long a want stays suppressed (after "no possible plan", or an abandoned intention):
#: long enough not to retry every cycle, short enough that a changed world is tried again.
SUPPRESSION_PERIOD: Final = timedelta(hours=1)
#: Evidence older than one half-life starts nothing: it would already have faded to half.
EVIDENCE_HORIZON: Final = HALF_LIFE
#: A belief at or above this confidence is held; an observation failing its check contradicts it.
HELD_BELIEF: Final = 0.6

#: Base strength by origin. A request is a person asking; a due commitment is a promise.
BASE_STRENGTH: Final[Mapping[WantOrigin, float]] = {
    WantOrigin.GOAL_UNMET: 0.3,
    WantOrigin.GOAL_STALLED: 0.4,
    WantOrigin.FAILED_PREDICTION: 0.2,
    WantOrigin.CONTRADICTION: 0.2,
    WantOrigin.REQUEST: 0.5,
    WantOrigin.DUE_COMMITMENT: 0.6,
}
#: A let-down expectation adds this times the confidence it was held with (the surprise):
#: a refuted 0.8 prediction gives 0.52, a refuted 0.3 one 0.32, below the cut.
SURPRISE_GAIN: Final = 0.4
#: Goal priority (0..1) adds this times the priority: priority 0.8 adds 0.24.
GOAL_PRIORITY_GAIN: Final = 0.3
#: A declared drive multiplies by 1 + DRIVE_GAIN x (weight - DRIVE_NEUTRAL): the default weight
#: changes nothing, weight 1 gives x1.25, weight 0 gives x0.75.
DRIVE_NEUTRAL: Final = 0.5
DRIVE_GAIN: Final = 0.5
#: A configured value that argues against an approach want's means multiplies its strength by
#: 1 - VALUE_GAIN x the value's weight: weight 1 gives x0.75, the default 0.5 gives x0.875. The
#: value also derives an avoid want that meets the approach in a conflict; this term is the
#: value's pull on the want itself, recorded where the want's strength is made.
VALUE_GAIN: Final = 0.25
#: Which drives each origin touches (by the names the Mind declares).
DRIVES_BY_ORIGIN: Final[Mapping[WantOrigin, tuple[str, ...]]] = {
    WantOrigin.GOAL_UNMET: ("reliability",),
    WantOrigin.GOAL_STALLED: ("reliability",),
    WantOrigin.DUE_COMMITMENT: ("reliability",),
    WantOrigin.FAILED_PREDICTION: ("curiosity",),
    WantOrigin.CONTRADICTION: ("curiosity",),
    WantOrigin.REQUEST: ("curiosity",),
}
#: Urgency by origin. An avoid want is as urgent as the act it opposes.
URGENCY: Final[Mapping[WantOrigin, float]] = {
    WantOrigin.GOAL_UNMET: 0.5,
    WantOrigin.GOAL_STALLED: 0.8,
    WantOrigin.FAILED_PREDICTION: 0.6,
    WantOrigin.CONTRADICTION: 0.4,
    WantOrigin.REQUEST: 0.5,
    WantOrigin.DUE_COMMITMENT: 0.7,
}
OVERDUE_URGENCY: Final = 1.0

_LIVING: Final = frozenset({WantStatus.ACTIVE, WantStatus.SUPPRESSED})
RUNNING: Final = "running"
IN_TRANSITION: Final = frozenset({"progressing"})
STATUS: Final = "service.status"
RESTART: Final = "service.restart"


# -- records ----------------------------------------------------------------------------------


class Observation(Model):
    """What a read-only check saw: `capability` (e.g. `service.status`) on `subject` (its
    target, `namespace/name` for a workload) at `at`, with the capability's reported fields."""

    subject: str = Field(min_length=1, max_length=500)
    capability: str
    fields: dict[str, JsonValue]
    at: AwareDatetime


class Want(Model):
    """One want (the `wants` row's data).

    `subject` identifies it with `origin` (`namespace/name` for a workload, `request:NAME`,
    `commitment:NAME`, `VALUE: avoid CAPABILITY on TARGET`); `target` is the workload it
    concerns when there is one. For an avoid want, `means` are what it argues against.
    `strength` holds as of `last_reinforced_at`; `evidence_at` is the newest evidence absorbed
    (None for a standing request), and only newer evidence reinforces or reactivates it.
    `since` is when the situation it answers began (for a goal, when this unmet spell began),
    so a stall is measured across cycles that each observe only the present.
    `intention` is the intention formed for it that has not yet been settled (see
    `settlement`); `failed_strategies` are the strategies an abandoned intention for it tried
    in vain, remembered until `failed_until`. `fulfilled_by` is the intention whose fulfilment
    satisfied it: while the situation it answered persists (candidates for it keep coming), it
    is held satisfied, so a done act is not done again for the same situation.
    """

    id: str = Field(min_length=1, max_length=253)
    namespace: str
    mind: str
    subject: str = Field(min_length=1, max_length=500)
    origin: WantOrigin
    summary: str = Field(max_length=500)
    strength: Unit
    urgency: Unit
    valence: Valence = Valence.APPROACH
    drives: tuple[str, ...] = ()
    values: tuple[str, ...] = ()
    goal: str | None = None
    commitment: str | None = None
    target: str | None = None
    means: Means | None = None
    terms: tuple[Term, ...] = ()
    status: WantStatus = WantStatus.ACTIVE
    suppressed_until: AwareDatetime | None = None
    evidence_at: AwareDatetime | None = None
    since: AwareDatetime | None = None
    intention: str | None = Field(default=None, max_length=128)
    failed_strategies: tuple[str, ...] = ()
    failed_until: AwareDatetime | None = None
    fulfilled_by: str | None = Field(default=None, max_length=128)
    created_at: AwareDatetime
    updated_at: AwareDatetime
    last_reinforced_at: AwareDatetime


def want_id(namespace: str, mind: str, subject: str, origin: WantOrigin) -> str:
    return "want-" + idempotency_key("want", namespace, mind, origin.value, subject)[:24]


def decayed_strength(want: Want, now: datetime) -> float:
    """Strength at `now`: halved every `HALF_LIFE` since the last reinforcement. Never more
    than the stored strength, whatever the clock says."""
    elapsed = max((now - want.last_reinforced_at).total_seconds(), 0.0)
    return float(want.strength * 0.5 ** (elapsed / HALF_LIFE.total_seconds()))


class Derived(NamedTuple):
    """The wants that changed (to store) and the decisions that changed them."""

    wants: tuple[Want, ...]
    decisions: tuple[VolitionDecision, ...]


# -- status changes ---------------------------------------------------------------------------


def _decision(
    want: Want,
    kind: DecisionKind,
    outcome: str,
    reason: str,
    at: datetime,
    *,
    inputs: Mapping[str, JsonValue] | None = None,
    scores: Mapping[str, float] | None = None,
    terms: Sequence[Term] = (),
    basis: str | None = None,
) -> VolitionDecision:
    return VolitionDecision(
        namespace=want.namespace,
        mind=want.mind,
        kind=kind,
        subjects={"want": want.id},
        outcome=outcome,
        reason=reason,
        inputs={"origin": want.origin.value, "subject": want.subject, **(inputs or {})},
        scores=dict(scores or {}),
        terms=tuple(terms),
        at=at,
        basis=basis,
    )


def _moved(want: Want, status: WantStatus, now: datetime, **changes: object) -> Want:
    return want.model_copy(update={"status": status, "updated_at": now, **changes})


def suppress(
    want: Want, now: datetime, reason: str, period: timedelta = SUPPRESSION_PERIOD
) -> tuple[Want, VolitionDecision]:
    """Suppress a want until `now + period`: it is not re-derived before then."""
    until = now + period
    moved = _moved(want, WantStatus.SUPPRESSED, now, suppressed_until=until)
    return moved, _decision(
        moved,
        DecisionKind.SUPPRESSION,
        "suppressed",
        reason,
        now,
        inputs={"until": until.isoformat()},
        scores={"strength": decayed_strength(want, now)},
    )


def satisfy(want: Want, now: datetime, reason: str) -> tuple[Want, VolitionDecision]:
    moved = _moved(want, WantStatus.SATISFIED, now, suppressed_until=None)
    return moved, _decision(moved, DecisionKind.SATISFACTION, "satisfied", reason, now)


def _expire(
    want: Want, now: datetime, reason: str, strength: float
) -> tuple[Want, VolitionDecision]:
    moved = _moved(want, WantStatus.EXPIRED, now, suppressed_until=None)
    return moved, _decision(
        moved, DecisionKind.EXPIRY, "expired", reason, now, scores={"strength": strength}
    )


# -- candidates -------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Candidate:
    """A want as the evidence suggests it, before it meets what is stored."""

    subject: str
    origin: WantOrigin
    summary: str
    terms: tuple[Term, ...]
    urgency: float
    evidence_at: datetime | None  # None: a standing request
    since: datetime | None  # when the situation began (None: a standing request)
    valence: Valence = Valence.APPROACH
    drives: tuple[str, ...] = ()
    values: tuple[str, ...] = ()
    goal: str | None = None
    commitment: str | None = None
    target: str | None = None
    means: Means | None = None
    inputs: dict[str, JsonValue] = field(default_factory=dict)

    @property
    def strength(self) -> float:
        return _unit(total(self.terms))


def _modulated(
    spec: MindSpec, origin: WantOrigin, terms: list[Term], goal: Goal | None = None
) -> tuple[tuple[Term, ...], tuple[str, ...]]:
    """Terms after goal priority and drives; and the drives touched."""
    if goal is not None:
        terms.append(
            Term(name=f"goal:{goal.name}", op=TermOp.ADD, value=GOAL_PRIORITY_GAIN * goal.priority)
        )
    touched: list[str] = []
    declared = {drive.name: drive.weight for drive in spec.drives}
    for name in DRIVES_BY_ORIGIN.get(origin, ()):
        if name in declared:
            touched.append(name)
            factor = 1.0 + DRIVE_GAIN * (declared[name] - DRIVE_NEUTRAL)
            terms.append(Term(name=f"drive:{name}", op=TermOp.MULTIPLY, value=factor))
    return tuple(terms), tuple(touched)


def _base(origin: WantOrigin) -> Term:
    return Term(name=f"base:{origin.value}", op=TermOp.SET, value=BASE_STRENGTH[origin])


def _recent(at: datetime, now: datetime) -> bool:
    return now - at <= EVIDENCE_HORIZON


def _workload(namespace: str | None, name: str, default_namespace: str) -> str:
    return f"{namespace or default_namespace}/{name}"


def goal_met(observation: Observation) -> bool | None:
    """True when the observation shows the subject running, False when it shows it unmet,
    None when it tells nothing (a rollout in progress)."""
    state = observation.fields.get("state")
    if state in IN_TRANSITION:
        return None
    return state == RUNNING


def _spell_goes_on(want: Want) -> bool:
    """Whether a stored goal want still stands for the current unmet spell: it lives, or an
    intention satisfied it and no observation has shown the goal met since."""
    return want.status in _LIVING or held(want)


def held(want: Want) -> bool:
    """Satisfied by a fulfilled intention, and the situation has not ended since."""
    return want.status is WantStatus.SATISFIED and want.fulfilled_by is not None


def _status_history(observations: Iterable[Observation], subject: str) -> list[Observation]:
    return sorted(
        (o for o in observations if o.capability == STATUS and o.subject == subject),
        key=lambda o: o.at,
    )


def _unmet_since(history: Sequence[Observation]) -> datetime | None:
    """The start of the trailing run of unmet observations; None when the latest telling
    observation shows the goal met (or none tells anything)."""
    since: datetime | None = None
    for observation in reversed(history):
        met = goal_met(observation)
        if met is None:
            continue
        if met:
            break
        since = observation.at
    return since


def _from_goals(
    spec: MindSpec,
    observations: Sequence[Observation],
    stored: Mapping[str, Want],
    namespace: str,
    mind: str,
    now: datetime,
) -> list[_Candidate]:
    out: list[_Candidate] = []
    for goal in spec.goals:
        subject = _workload(goal.subject.namespace, goal.subject.name, namespace)
        history = [o for o in _status_history(observations, subject) if _recent(o.at, now)]
        since = _unmet_since(history)
        if since is None:
            continue
        # The spell continues while a want of this goal lives (even suppressed).
        for origin in (WantOrigin.GOAL_UNMET, WantOrigin.GOAL_STALLED):
            living = stored.get(want_id(namespace, mind, subject, origin))
            if living and _spell_goes_on(living) and living.since and living.since < since:
                since = living.since
        latest = next(o for o in reversed(history) if goal_met(o) is False)
        stalled = now - since >= GOAL_STALLED_AFTER
        origin = WantOrigin.GOAL_STALLED if stalled else WantOrigin.GOAL_UNMET
        terms, drives = _modulated(spec, origin, [_base(origin)], goal)
        means = None
        if not stalled:
            workload = {
                "namespace": subject.split("/", 1)[0],
                "kind": goal.subject.kind,
                "name": goal.subject.name,
            }
            means = Means(capability=RESTART, parameters=workload)
        state = latest.fields.get("state") or "absent"
        out.append(
            _Candidate(
                subject=subject,
                origin=origin,
                summary=f"goal {goal.name}: {subject} should be running; unmet since "
                f"{since.isoformat()} (state {state})",
                terms=terms,
                urgency=URGENCY[origin],
                evidence_at=latest.at,
                since=since,
                drives=drives,
                goal=goal.name,
                target=subject,
                means=means,
                inputs={
                    "goal": goal.name,
                    "observation": latest.model_dump(mode="json"),
                    "unmetSince": since.isoformat(),
                },
            )
        )
    return out


def _check_target(
    criteria: Mapping[str, JsonValue], registry: CapabilityRegistry
) -> tuple[Check, str] | None:
    """The check a prediction's criteria hold and the target it looks at."""
    try:
        check = Check.model_validate(criteria)
        spec = registry.get(check.capability)
        if spec is None:
            return None
        return check, spec.target_of(spec.parse(check.parameters))
    except ValidationError:
        return None


def _surprise(
    origin: WantOrigin, confidence: float, spec: MindSpec
) -> tuple[tuple[Term, ...], tuple[str, ...]]:
    surprise = Term(name="surprise", op=TermOp.ADD, value=SURPRISE_GAIN * confidence)
    return _modulated(spec, origin, [_base(origin), surprise])


def _from_predictions(
    spec: MindSpec,
    predictions: Sequence[PredictionRecord],
    now: datetime,
    registry: CapabilityRegistry,
) -> list[_Candidate]:
    out: list[_Candidate] = []
    for prediction in predictions:
        if prediction.status is not PredictionStatus.REFUTED or prediction.resolved_at is None:
            continue
        if not _recent(prediction.resolved_at, now):
            continue
        found = _check_target(prediction.criteria, registry)
        target = found[1] if found else None
        subject = target or f"prediction:{prediction.id}"
        origin = WantOrigin.FAILED_PREDICTION
        terms, drives = _surprise(origin, prediction.confidence, spec)
        out.append(
            _Candidate(
                subject=subject,
                origin=origin,
                summary=f"prediction {prediction.id} (plan {prediction.plan} step "
                f"{prediction.step}) was refuted",
                terms=terms,
                urgency=URGENCY[origin],
                evidence_at=prediction.resolved_at,
                since=prediction.resolved_at,
                drives=drives,
                target=target,
                inputs={
                    "prediction": prediction.id,
                    "confidence": prediction.confidence,
                    "criteria": prediction.criteria,
                    "observation": prediction.observation,
                },
            )
        )
    return out


def _from_contradictions(
    spec: MindSpec,
    beliefs: Sequence[BeliefRecord],
    predictions: Sequence[PredictionRecord],
    observations: Sequence[Observation],
    now: datetime,
    registry: CapabilityRegistry,
) -> list[_Candidate]:
    """A held belief is checkable through the criteria of a prediction that tested it; an
    observation newer than the belief's last update that fails that check contradicts it.
    An observation without the checked field tells nothing."""
    out: list[_Candidate] = []
    checks: dict[str, list[tuple[Check, str]]] = {}
    for prediction in predictions:
        found = _check_target(prediction.criteria, registry)
        if prediction.belief_id is not None and found is not None:
            checks.setdefault(prediction.belief_id, []).append(found)
    for belief in beliefs:
        if belief.confidence < HELD_BELIEF:
            continue
        for check, target in checks.get(belief.id, []):
            seen = [
                o
                for o in observations
                if o.capability == check.capability
                and o.subject == target
                and o.at > belief.updated_at
                and _recent(o.at, now)
                and check.field in o.fields
            ]
            if not seen:
                continue
            latest = max(seen, key=lambda o: o.at)
            if check.comparison.holds(latest.fields[check.field], check.value):
                continue
            origin = WantOrigin.CONTRADICTION
            terms, drives = _surprise(origin, belief.confidence, spec)
            out.append(
                _Candidate(
                    subject=target,
                    origin=origin,
                    summary=f"belief {belief.statement!r} is contradicted: {check.field} is "
                    f"{latest.fields[check.field]!r}, expected {check.comparison.value} "
                    f"{check.value!r}",
                    terms=terms,
                    urgency=URGENCY[origin],
                    evidence_at=latest.at,
                    since=latest.at,
                    drives=drives,
                    target=target,
                    inputs={
                        "belief": belief.id,
                        "statement": belief.statement,
                        "confidence": belief.confidence,
                        "observation": latest.model_dump(mode="json"),
                    },
                )
            )
    return out


def _from_requests(spec: MindSpec, namespace: str) -> list[_Candidate]:
    out: list[_Candidate] = []
    for request in spec.requests:
        origin = WantOrigin.REQUEST
        terms, drives = _modulated(spec, origin, [_base(origin)])
        target = (
            _workload(request.subject.namespace, request.subject.name, namespace)
            if request.subject
            else None
        )
        out.append(
            _Candidate(
                subject=f"request:{request.name}",
                origin=origin,
                summary=f"asked: {request.text}"[:500],
                terms=terms,
                urgency=URGENCY[origin],
                evidence_at=None,
                since=None,
                drives=drives,
                target=target,
                inputs={"request": request.name, "text": request.text},
            )
        )
    return out


def _from_commitments(
    spec: MindSpec,
    context: CommitmentContext,
    now: datetime,
    registry: CapabilityRegistry,
) -> list[_Candidate]:
    out: list[_Candidate] = []
    for commitment in spec.commitments:
        if commitment.mode is not CommitmentMode.DO:
            continue
        state = commitment_state(commitment, now, context, registry).state
        if state not in (CommitmentState.DUE, CommitmentState.OVERDUE):
            continue
        origin = WantOrigin.DUE_COMMITMENT
        terms, drives = _modulated(spec, origin, [_base(origin)])
        means = concrete_means(commitment, registry)
        out.append(
            _Candidate(
                subject=f"commitment:{commitment.name}",
                origin=origin,
                summary=f"commitment {commitment.name} is {state.value}: do "
                f"{commitment.capability} on {commitment.target}",
                terms=terms,
                urgency=OVERDUE_URGENCY if state is CommitmentState.OVERDUE else URGENCY[origin],
                # A commitment without a due time is due from the start: standing evidence;
                # each period of a recurring one is new evidence.
                evidence_at=due_at(commitment, now),
                since=due_at(commitment, now),
                drives=drives,
                commitment=commitment.name,
                target=means[1] if means else None,
                means=means[0] if means else None,
                inputs={"commitment": commitment.name, "state": state.value},
            )
        )
    return out


def _avoiding(spec: MindSpec, approach: Want) -> list[_Candidate]:
    """The avoid wants configured values derive against an approach want's means."""
    if approach.means is None:
        return []
    out: list[_Candidate] = []
    for value in spec.values:
        if not any(fnmatchcase(approach.means.capability, p) for p in value.avoid):
            continue
        target = approach.target or approach.subject
        out.append(
            _Candidate(
                subject=f"{value.name}: avoid {approach.means.capability} on {target}",
                origin=WantOrigin.VALUE,
                summary=f"value {value.name} argues against {approach.means.capability} on "
                f"{target}",
                terms=(Term(name=f"value:{value.name}", op=TermOp.SET, value=value.weight),),
                urgency=approach.urgency,
                evidence_at=approach.evidence_at,
                since=approach.since,
                valence=Valence.AVOID,
                values=(value.name,),
                target=target,
                means=approach.means,
                inputs={"value": value.name, "opposes": approach.id},
            )
        )
    return out


def _valued(spec: MindSpec, c: _Candidate) -> _Candidate:
    """The candidate with a term for each configured value that argues against its means."""
    if c.means is None or c.valence is not Valence.APPROACH:
        return c
    capability = c.means.capability
    terms = tuple(
        Term(name=f"value:{v.name}", op=TermOp.MULTIPLY, value=1.0 - VALUE_GAIN * v.weight)
        for v in spec.values
        if any(fnmatchcase(capability, p) for p in v.avoid)
    )
    return replace(c, terms=c.terms + terms) if terms else c


def _approach_values(spec: MindSpec, means: Means | None) -> tuple[str, ...]:
    if means is None:
        return ()
    return tuple(
        v.name for v in spec.values if any(fnmatchcase(means.capability, p) for p in v.avoid)
    )


# -- meeting what is stored -------------------------------------------------------------------


def _is_new(candidate: _Candidate, want: Want) -> bool:
    """Whether the candidate's evidence is newer than anything the want has absorbed (and,
    for a want no longer active, newer than the change that ended it)."""
    at = candidate.evidence_at
    if at is None:
        return False
    if want.evidence_at is not None and at <= want.evidence_at:
        return False
    return want.status is WantStatus.ACTIVE or at > want.updated_at


def _new_want(
    c: _Candidate, spec: MindSpec, namespace: str, mind: str, now: datetime, old: Want | None
) -> Want:
    return Want(
        id=want_id(namespace, mind, c.subject, c.origin),
        namespace=namespace,
        mind=mind,
        subject=c.subject,
        origin=c.origin,
        summary=c.summary[:500],
        strength=c.strength,
        urgency=c.urgency,
        valence=c.valence,
        drives=c.drives,
        values=c.values or _approach_values(spec, c.means),
        goal=c.goal,
        commitment=c.commitment,
        target=c.target,
        means=c.means,
        terms=c.terms,
        evidence_at=c.evidence_at,
        since=c.since,
        # What the mind is doing about it, and what it learnt, outlive a change of evidence.
        intention=old.intention if old else None,
        failed_strategies=old.failed_strategies if old else (),
        failed_until=old.failed_until if old else None,
        created_at=old.created_at if old else now,
        updated_at=now,
        last_reinforced_at=now,
    )


def _meet(
    c: _Candidate, old: Want | None, spec: MindSpec, namespace: str, mind: str, now: datetime
) -> tuple[Want | None, VolitionDecision | None]:
    """What one candidate does to the stored want of the same id."""
    if old is not None:
        if held(old):
            return None, None
        if (
            old.status is WantStatus.SUPPRESSED
            and old.suppressed_until
            and now < old.suppressed_until
        ):
            return None, None
        if not _is_new(c, old):
            return None, None
    fresh = _new_want(c, spec, namespace, mind, now, old)
    inputs = {**c.inputs, "evidenceAt": c.evidence_at.isoformat() if c.evidence_at else None}
    if old is None or old.status is not WantStatus.ACTIVE:
        if c.strength < STORE_THRESHOLD:
            since = c.since.isoformat() if c.since else "standing"
            grounds = json.dumps([since, [t.to_k8s() for t in c.terms]], sort_keys=True)
            return None, _decision(
                fresh,
                DecisionKind.DERIVATION,
                "rejected",
                f"strength {c.strength:.3f} is below {STORE_THRESHOLD}: not stored",
                now,
                inputs=inputs,
                scores={"strength": c.strength},
                terms=c.terms,
                basis=grounds,
            )
        outcome = "derived" if old is None else "reactivated"
        return fresh, _decision(
            fresh,
            DecisionKind.DERIVATION,
            outcome,
            c.summary,
            now,
            inputs=inputs,
            scores={"strength": c.strength, "urgency": c.urgency},
            terms=c.terms,
        )
    decayed = decayed_strength(old, now)
    start = max(decayed, c.strength)
    raised = max(decayed, min(1.0, c.strength + REINFORCEMENT_CEILING, start + REINFORCEMENT_STEP))
    carried = (
        c.terms if c.strength >= decayed else (Term(name="decayed", op=TermOp.SET, value=decayed),)
    )
    terms = (*carried, Term(name="reinforcement", op=TermOp.ADD, value=raised - start))
    reinforced = fresh.model_copy(update={"strength": _unit(total(terms)), "terms": terms})
    return reinforced, _decision(
        reinforced,
        DecisionKind.REINFORCEMENT,
        "reinforced",
        f"new evidence: {c.summary}",
        now,
        inputs=inputs,
        scores={"before": decayed, "candidate": c.strength, "strength": reinforced.strength},
        terms=terms,
    )


def derive_wants(
    observations: Sequence[Observation],
    predictions: Sequence[PredictionRecord],
    beliefs: Sequence[BeliefRecord],
    mind_spec: MindSpec,
    existing_wants: Sequence[Want],
    now: datetime,
    *,
    namespace: str,
    mind: str,
    commitments: CommitmentContext | None = None,
    registry: CapabilityRegistry = REGISTRY,
) -> Derived:
    """Derive, reinforce, satisfy and expire a mind's wants from the evidence (see the module
    notes). Same inputs, same result. `commitments` carries the recorded commitment states
    (fulfilled, revoked); without it they are judged from the spec alone."""
    context = commitments or CommitmentContext(spec=mind_spec)
    stored = {w.id: w for w in existing_wants}
    current = dict(stored)
    decisions: list[VolitionDecision] = []
    proposed: set[str] = set()

    def apply(candidates: Iterable[_Candidate]) -> list[Want]:
        applied: list[Want] = []
        for c in _strongest_per_id(candidates, namespace, mind):
            wid = want_id(namespace, mind, c.subject, c.origin)
            proposed.add(wid)
            want, decision = _meet(c, current.get(wid), mind_spec, namespace, mind, now)
            if decision is not None:
                decisions.append(decision)
            if want is not None:
                current[wid] = want
                applied.append(want)
        return applied

    approaches = apply(
        _valued(mind_spec, c)
        for c in [
            *_from_goals(mind_spec, observations, stored, namespace, mind, now),
            *_from_predictions(mind_spec, predictions, now, registry),
            *_from_contradictions(mind_spec, beliefs, predictions, observations, now, registry),
            *_from_requests(mind_spec, namespace),
            *_from_commitments(mind_spec, context, now, registry),
        ]
    )
    apply(c for want in approaches for c in _avoiding(mind_spec, want))
    # The situation a fulfilled intention answered has ended: the next one may move it again.
    for wid, want in stored.items():
        if held(want) and wid not in proposed:
            current[wid] = want.model_copy(update={"fulfilled_by": None, "updated_at": now})

    def changed(wid: str) -> bool:
        return current.get(wid) != stored.get(wid)

    for want in sorted(current.values(), key=lambda w: w.id):
        if changed(want.id) or want.status is not WantStatus.ACTIVE:
            continue
        met = _met_goal(want, observations, now)
        if met is not None:
            current[want.id], decision = satisfy(
                want, now, f"{want.subject} observed running at {met.at.isoformat()}"
            )
            decisions.append(decision)

    for want in sorted(current.values(), key=lambda w: w.id):
        strength = decayed_strength(want, now)
        if want.status in (WantStatus.ACTIVE, WantStatus.SUPPRESSED) and strength < FADED_BELOW:
            current[want.id], decision = _expire(
                want, now, f"faded: strength {strength:.3f} is below {FADED_BELOW}", strength
            )
            decisions.append(decision)

    _cap(current, stored, decisions, now)
    return Derived(tuple(current[wid] for wid in sorted(current) if changed(wid)), tuple(decisions))


def _met_goal(want: Want, observations: Sequence[Observation], now: datetime) -> Observation | None:
    """The observation that shows a goal want's subject running again, if there is one newer
    than the want's evidence."""
    if want.origin not in (WantOrigin.GOAL_UNMET, WantOrigin.GOAL_STALLED):
        return None
    telling = [
        o
        for o in _status_history(observations, want.subject)
        if _recent(o.at, now) and goal_met(o) is not None
    ]
    if not telling or not goal_met(telling[-1]):
        return None
    latest = telling[-1]
    return latest if want.evidence_at is None or latest.at > want.evidence_at else None


def _cap(
    current: dict[str, Want],
    stored: Mapping[str, Want],
    decisions: list[VolitionDecision],
    now: datetime,
) -> None:
    """Expire the weakest active wants beyond `MAX_ACTIVE_WANTS`. One that was not active
    before this derivation is not stored after all: its derivation becomes a rejection."""
    active = sorted(
        (w for w in current.values() if w.status is WantStatus.ACTIVE),
        key=lambda w: (-decayed_strength(w, now), w.id),
    )
    for want in active[MAX_ACTIVE_WANTS:]:
        strength = decayed_strength(want, now)
        reason = (
            f"beyond the cap of {MAX_ACTIVE_WANTS} active wants, weakest first "
            f"(strength {strength:.3f})"
        )
        before = stored.get(want.id)
        if before is not None and before.status is WantStatus.ACTIVE:
            current[want.id], decision = _expire(want, now, reason, strength)
            decisions.append(decision)
            continue
        if before is None:
            del current[want.id]
        else:
            current[want.id] = before
        decisions[:] = [d for d in decisions if d.subjects.get("want") != want.id]
        grounds = json.dumps(["cap", [t.to_k8s() for t in want.terms]], sort_keys=True)
        decisions.append(
            _decision(
                want,
                DecisionKind.DERIVATION,
                "rejected",
                f"not stored: {reason}",
                now,
                scores={"strength": strength},
                terms=want.terms,
                basis=grounds,
            )
        )


def _strongest_per_id(
    candidates: Iterable[_Candidate], namespace: str, mind: str
) -> list[_Candidate]:
    """One candidate per want id, in id order: the strongest, carrying the newest evidence."""
    best: dict[str, _Candidate] = {}
    for c in candidates:
        wid = want_id(namespace, mind, c.subject, c.origin)
        seen = best.get(wid)
        if seen is None:
            best[wid] = c
            continue
        stronger = max(seen, c, key=lambda x: (x.strength, x.summary))
        best[wid] = replace(stronger, evidence_at=_newest(seen.evidence_at, c.evidence_at))
    return [best[wid] for wid in sorted(best)]


def _newest(a: datetime | None, b: datetime | None) -> datetime | None:
    if a is None or b is None:
        return a or b
    return max(a, b)

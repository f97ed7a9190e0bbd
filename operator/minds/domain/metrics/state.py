"""The state gauges, computed from what the controller holds: Minds, Plans and Approvals as the
API server has them, and the ledger's prediction summaries.

Nothing here is remembered between scrapes, so a restarted controller exports the same values
as the one before it. Objects that do not parse are left out rather than failing the scrape:
a metric endpoint that errors on one bad object would blind the alerts for every Mind.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Final

from pydantic import ValidationError

from minds.domain.beliefs import PredictionStatus
from minds.domain.execution.machine import OPEN_PLAN
from minds.domain.metrics import catalogue as m
from minds.domain.metrics.catalogue import MetricSpec, of_a_mind
from minds.domain.planning import budget
from minds.domain.planning.model import (
    PlanOrigin,
    PlanStatus,
    ResourceUse,
    StepState,
    StepStatus,
)
from minds.domain.resources.approval import ApprovalPhase
from minds.domain.resources.common import parse_timestamp
from minds.domain.resources.mind import MindSpec, PlanBudget
from minds.domain.resources.plan import PlanResourceStatus

#: Plans the executor still advances; their steps and budgets are what people watch.
OPEN_PHASES: Final = OPEN_PLAN

# A step's status says *that* it is blocked or waiting; why is only in its reason, which the
# executor and the capability service write starting with these words.
OUTCOME_UNKNOWN: Final = "outcome unknown"
ATTENTION_CAP: Final = "operator attention cap reached"

#: The contract's outcome names for the ledger's prediction statuses.
PREDICTION_OUTCOMES: Final[Mapping[PredictionStatus, str]] = {
    PredictionStatus.CONFIRMED: "confirmed",
    PredictionStatus.REFUTED: "refuted",
    PredictionStatus.EXPIRED: "expired",
    PredictionStatus.OPEN: "pending",
}

MindKey = tuple[str, str]


@dataclass(frozen=True)
class Sample:
    metric: MetricSpec
    #: Label values, in the order of ``metric.labels``.
    labels: tuple[str, ...]
    value: float


@dataclass(frozen=True)
class PredictionSummary:
    """One Mind's predictions as the ledger counts them."""

    namespace: str
    mind: str
    counts: Mapping[PredictionStatus, int]
    #: Sum over confirmed (outcome 1) and refuted (outcome 0) predictions of
    #: (confidence - outcome)², so the Brier score is this over their number.
    squared_error: float = 0.0

    @property
    def brier(self) -> float | None:
        scored = self.counts.get(PredictionStatus.CONFIRMED, 0) + self.counts.get(
            PredictionStatus.REFUTED, 0
        )
        return self.squared_error / scored if scored else None


@dataclass(frozen=True)
class ClusterState:
    """Raw objects as listed or watched (camelCase bodies)."""

    minds: Sequence[Mapping[str, Any]] = ()
    plans: Sequence[Mapping[str, Any]] = ()
    approvals: Sequence[Mapping[str, Any]] = ()


@dataclass(frozen=True)
class MindView:
    key: MindKey
    spec: MindSpec
    last_cycle_at: datetime | None


@dataclass(frozen=True)
class PlanView:
    key: MindKey
    phase: PlanStatus
    open: bool
    budget: PlanBudget
    actual: ResourceUse
    steps: tuple[StepState, ...] = field(default_factory=tuple)


@dataclass(frozen=True)
class ApprovalView:
    key: MindKey
    pending: bool
    created: datetime | None


# -- reading objects ---------------------------------------------------------------------------


def _meta(body: Mapping[str, Any]) -> tuple[str, Mapping[str, Any]]:
    meta = body.get("metadata") or {}
    return str(meta.get("namespace") or ""), meta


def _mind_key(body: Mapping[str, Any]) -> MindKey:
    namespace, meta = _meta(body)
    return namespace, str(meta.get("name") or "")


def mind_view(body: Mapping[str, Any]) -> MindView | None:
    try:
        spec = MindSpec.model_validate(body.get("spec") or {})
    except ValidationError:
        return None
    last = (body.get("status") or {}).get("lastCycleAt")
    return MindView(_mind_key(body), spec, parse_timestamp(last))


def plan_view(body: Mapping[str, Any]) -> PlanView | None:
    namespace, _ = _meta(body)
    spec = body.get("spec") or {}
    try:
        status = PlanResourceStatus.model_validate(body.get("status") or {})
        # The budget the executor enforces: the status's, else the plan's own.
        budget = status.budget or PlanBudget.model_validate(spec.get("budget") or {})
    except ValidationError:
        return None
    # A plan being deleted never acts again, whatever its phase still says.
    is_open = (
        status.phase in OPEN_PHASES
        and spec.get("origin") != PlanOrigin.DREAM.value
        and not (body.get("metadata") or {}).get("deletionTimestamp")
    )
    return PlanView(
        (namespace, str(spec.get("mind") or "")),
        status.phase,
        is_open,
        budget,
        status.actual,
        tuple(status.steps),
    )


def approval_view(body: Mapping[str, Any]) -> ApprovalView:
    namespace, meta = _meta(body)
    spec = body.get("spec") or {}
    mind = spec.get("mind") or (spec.get("origin") or {}).get("mind") or ""
    # No phase yet: the controller has not looked at it, and it is waiting for a person.
    phase = (body.get("status") or {}).get("phase") or ApprovalPhase.PENDING.value
    return ApprovalView(
        (namespace, str(mind)),
        phase == ApprovalPhase.PENDING.value and not meta.get("deletionTimestamp"),
        parse_timestamp(meta.get("creationTimestamp")),
    )


# -- budgets -----------------------------------------------------------------------------------


def _used(plan: PlanView, now: datetime) -> ResourceUse:
    """What an open plan has used, as the executor counts it before each step."""
    return budget.used(plan.actual, plan.steps, now)


def used_ratio(used: float, limit: float) -> float:
    """Used over limit in 0..1; a zero limit is spent before anything is used."""
    if limit <= 0:
        return 1.0
    return min(1.0, max(0.0, used / limit))


def budget_samples(
    minds: Sequence[MindView], plans: Sequence[PlanView], now: datetime
) -> list[Sample]:
    samples: list[Sample] = []
    ratios: dict[tuple[str, str, str], float] = {}
    for mind in minds:
        for kind, measure in budget.KINDS.items():
            limit = measure.cap(mind.spec.budget)
            if limit is None:
                continue
            samples.append(Sample(m.BUDGET_LIMIT, (*mind.key, kind.value), float(limit)))
            ratios[(*mind.key, kind.value)] = 0.0
    for plan in plans:
        if not plan.open:
            continue
        use = _used(plan, now)
        for kind, measure in budget.KINDS.items():
            limit = measure.cap(plan.budget)
            if limit is None:
                continue
            label = (*plan.key, kind.value)
            ratio = used_ratio(measure.amount(use), float(limit))
            ratios[label] = max(ratios.get(label, 0.0), ratio)
    samples.extend(Sample(m.BUDGET_USED_RATIO, label, v) for label, v in sorted(ratios.items()))
    return samples


# -- per-Mind counts ---------------------------------------------------------------------------


def _blocked_by(prefix: str, status: StepStatus) -> Callable[[StepState], bool]:
    def matches(step: StepState) -> bool:
        return step.status is status and (step.reason or "").startswith(prefix)

    return matches


#: Gauges that count, per Mind, the open plans or steps a predicate picks out.
_PLAN_COUNTS: Final[Mapping[MetricSpec, Callable[[StepState], bool]]] = {
    m.PLANS_BUDGET_EXHAUSTED: _blocked_by(budget.BUDGET_EXHAUSTED, StepStatus.BLOCKED),
}
_STEP_COUNTS: Final[Mapping[MetricSpec, Callable[[StepState], bool]]] = {
    m.STEPS_OUTCOME_UNKNOWN: _blocked_by(OUTCOME_UNKNOWN, StepStatus.BLOCKED),
    m.ATTENTION_WAITING: _blocked_by(ATTENTION_CAP, StepStatus.WAITING),
}


def _per_mind(
    metric: MetricSpec, known: Iterable[MindKey], counted: Counter[MindKey]
) -> list[Sample]:
    """A count for every known Mind (0 when nothing is counted) and every Mind counted."""
    keys = sorted(set(known) | set(counted))
    return [Sample(metric, key, float(counted[key])) for key in keys]


def count_samples(
    minds: Sequence[MindView], plans: Sequence[PlanView], approvals: Sequence[ApprovalView]
) -> list[Sample]:
    known = [mind.key for mind in minds]
    samples: list[Sample] = []
    open_plans = [p for p in plans if p.open]
    for metric, picks in _PLAN_COUNTS.items():
        counted = Counter(p.key for p in open_plans if any(picks(s) for s in p.steps))
        samples += _per_mind(metric, known, counted)
    for metric, picks in _STEP_COUNTS.items():
        counted = Counter(p.key for p in open_plans for s in p.steps if picks(s))
        samples += _per_mind(metric, known, counted)
    pending = [a for a in approvals if a.pending]
    samples += _per_mind(m.ATTENTION_OPEN, known, Counter(a.key for a in pending))
    oldest: dict[MindKey, datetime] = {}
    for a in pending:
        if a.created is not None and (a.key not in oldest or a.created < oldest[a.key]):
            oldest[a.key] = a.created
    samples += [Sample(m.ATTENTION_OLDEST, k, v.timestamp()) for k, v in sorted(oldest.items())]
    samples += [
        Sample(m.ATTENTION_MAX, mind.key, float(mind.spec.attention.max_open_requests))
        for mind in minds
    ]
    samples += [
        Sample(m.LAST_CYCLE, mind.key, mind.last_cycle_at.timestamp())
        for mind in minds
        if mind.last_cycle_at is not None
    ]
    return samples


def phase_samples(plans: Sequence[PlanView]) -> list[Sample]:
    by_phase = Counter((*p.key, p.phase.value) for p in plans)
    steps = Counter((*p.key, s.status.value) for p in plans if p.open for s in p.steps)
    return [Sample(m.PLANS, k, float(v)) for k, v in sorted(by_phase.items())] + [
        Sample(m.STEPS, k, float(v)) for k, v in sorted(steps.items())
    ]


# -- the ledger --------------------------------------------------------------------------------


def prediction_samples(
    minds: Sequence[MindView], summaries: Sequence[PredictionSummary] | None
) -> list[Sample]:
    """``summaries`` None: the ledger could not be asked, which is itself a sample."""
    if summaries is None:
        return [Sample(m.LEDGER_UP, (), 0.0)]
    by_mind = {(s.namespace, s.mind): s for s in summaries}
    samples = [Sample(m.LEDGER_UP, (), 1.0)]
    for key in sorted(set(by_mind) | {mind.key for mind in minds}):
        summary = by_mind.get(key)
        counts = summary.counts if summary is not None else {}
        samples += [
            Sample(m.PREDICTIONS, (*key, outcome), float(counts.get(status, 0)))
            for status, outcome in PREDICTION_OUTCOMES.items()
        ]
        brier = summary.brier if summary is not None else None
        if brier is not None:
            samples.append(Sample(m.BRIER, key, brier))
    return samples


def state_samples(
    state: ClusterState,
    summaries: Sequence[PredictionSummary] | None,
    now: datetime,
    version: str,
) -> list[Sample]:
    """Every state gauge's samples. A metric about a Mind has series only while the Mind
    exists: the Plans of a deleted Mind (until the garbage collector removes them), its
    Approvals and its predictions in the ledger say nothing about a Mind any more."""
    minds = [v for v in map(mind_view, state.minds) if v is not None]
    plans = [v for v in map(plan_view, state.plans) if v is not None]
    approvals = [approval_view(body) for body in state.approvals]
    # Every Mind there is, its spec readable or not.
    present = {_mind_key(body) for body in state.minds}
    samples = [
        *budget_samples(minds, plans, now),
        *count_samples(minds, plans, approvals),
        *phase_samples(plans),
        *prediction_samples(minds, summaries),
        Sample(m.BUILD_INFO, (version,), 1.0),
    ]
    return [s for s in samples if not of_a_mind(s.metric) or s.labels[:2] in present]

"""Coverage: an open plan already acting on a subject covers a want about it.

One writing action per workload at a time, whoever planned it: a want to restart a workload
that an open Plan (the operator's, a template's or the model's) already writes to is not formed
(`covered`), so the mind and a person do not restart the same workload twice. A want without
means (an investigation) is covered by any open plan that touches its subject, reading or
writing. A plan stops covering when it leaves the open phases or when the ledger says its
intention has ended (a plan left behind by an abandoned intention holds nothing).

One investigation per subject, whichever want asks: while one is live, formation refuses the
others as duplicates; once it is fulfilled, it `answers` every other active want to look at
the same subject whose situation began before it ended (`Want.since`, or when the want arose):
formation does not form another, and settlement satisfies them. Without this, the wants that
a stalled goal and a contradicted belief raise about one workload would each form their own
investigation, one cycle after the other. A person's request is answered only by its own
investigation: it asks its own question.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from minds.domain.base import Model
from minds.domain.capabilities.registry import CapabilityRegistry
from minds.domain.intentions import IntentionKind, IntentionRecord, IntentionStatus
from minds.domain.planning.model import Plan, PlanOrigin
from minds.domain.planning.scoring import step_target
from minds.domain.volition.wants import Want, WantOrigin, WantStatus

__all__ = ["OpenPlan", "answered_by", "answers", "covering", "open_plan"]


class OpenPlan(Model):
    """What formation needs of an open Plan: who made it, for which intention, and the
    targets it writes to and reads."""

    name: str
    origin: PlanOrigin
    intention: str | None = None
    writes: frozenset[str] = frozenset()
    reads: frozenset[str] = frozenset()


def open_plan(name: str, plan: Plan, registry: CapabilityRegistry) -> OpenPlan:
    writes: set[str] = set()
    reads: set[str] = set()
    for step in plan.steps:
        spec = registry.get(step.capability or "")
        target = step.target or step_target(step, registry)
        if spec is None or target is None:
            continue
        (reads if spec.read_only else writes).add(target)
    return OpenPlan(
        name=name,
        origin=plan.origin,
        intention=plan.intention,
        writes=frozenset(writes),
        reads=frozenset(reads),
    )


def covering(
    subject: str,
    acts: bool,
    plans: Iterable[OpenPlan],
    intentions: Sequence[IntentionRecord],
) -> OpenPlan | None:
    """The first open plan (by name) that covers a want about `subject`: one that writes to it
    when the want would act (`acts`), one that touches it at all when it would only look."""
    ended = {i.id for i in intentions if i.status.final}
    for plan in sorted(plans, key=lambda p: p.name):
        if plan.intention is not None and plan.intention in ended:
            continue
        touched = plan.writes if acts else plan.writes | plan.reads
        if subject in touched:
            return plan
    return None


def answers(want: Want, intention: IntentionRecord) -> bool:
    """Whether `intention`, a fulfilled investigation formed for another want, answered `want`,
    an active want to look at the same subject with no intention of its own."""
    began = min(want.since, want.created_at) if want.since else want.created_at
    return (
        want.intention is None
        and want.means is None
        and want.origin is not WantOrigin.REQUEST
        and want.status is WantStatus.ACTIVE
        and intention.kind is IntentionKind.INVESTIGATION
        and intention.status is IntentionStatus.FULFILLED
        and intention.subject == (want.target or want.subject)
        and intention.updated_at >= began
    )


def answered_by(want: Want, intentions: Iterable[IntentionRecord]) -> IntentionRecord | None:
    """The first investigation that answered `want` (see `answers`), or None."""
    return next((i for i in intentions if answers(want, i)), None)

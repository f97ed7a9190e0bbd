"""People correct a mind: cancel a plan, abandon or resume an intention, revoke a commitment.

Each correction is written by a person into a spec (admission checks that the name in it is
the requester's own) and applied by the controller through these rules, which are pure:

| correction                    | rule                                                        |
|-------------------------------|-------------------------------------------------------------|
| `spec.cancellation` (Plan)    | `stop_plan`: at a safe point the plan becomes `abandoned`,  |
|                               | its open steps `cancelled`; a step that is executing under  |
|                               | a live lease is never interrupted, the plan waits for it.   |
|                               | `after_cancel`: the wants its intention served are          |
|                               | suppressed, so the mind does not plan the same at once;     |
|                               | `tried_before_cancel`: a plan cancelled after it acted has  |
|                               | its strategy remembered as failed for the subject           |
| `spec.intentionCorrections`   | `correct_intention`: reconsideration on the                 |
| (Mind)                        | `operator_correction` trigger with the person's verdict;    |
|                               | abandon suppresses the wants the intention serves, resume   |
|                               | makes a blocked or suspended intention active               |
| `spec.commitmentRevocations`  | `revocations`: what `commitment_state` revokes (only a      |
| (Mind)                        | revocable commitment), with the name in the reason          |

Every correction is applied once: its key (`correction_key`) marks it in the ledger, so a
correction left in the spec does not act again on a later cycle.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from datetime import datetime

from minds.domain.base import Model
from minds.domain.capabilities.registry import REGISTRY, CapabilityRegistry
from minds.domain.execution.machine import FINAL_STEP
from minds.domain.intentions import IntentionRecord
from minds.domain.ledger import idempotency_key
from minds.domain.planning.model import Cancellation, Plan, PlanStatus, StepKind, StepStatus
from minds.domain.resources.mind import CorrectionAction, IntentionCorrection, MindSpec
from minds.domain.resources.plan import PlanResourceStatus
from minds.domain.volition.decisions import VolitionDecision
from minds.domain.volition.reconsideration import (
    Reconsideration,
    ReconsiderationContext,
    Trigger,
    Verdict,
    reconsider,
)
from minds.domain.volition.wants import Want, WantStatus, suppress

__all__ = [
    "VERDICT",
    "Stop",
    "after_cancel",
    "cancelled_reason",
    "correct_intention",
    "correction_key",
    "revocations",
    "served_wants",
    "stop_plan",
    "tried_before_cancel",
]

#: The reconsideration verdict each action a person may ask for stands for.
VERDICT: dict[CorrectionAction, Verdict] = {
    CorrectionAction.ABANDON: Verdict.ABANDON,
    CorrectionAction.RESUME: Verdict.RESUME,
}


class Stop(Model):
    """What cancelling a plan does now: the status to write, or when to look again (a step
    is acting and its lease runs until then)."""

    status: PlanResourceStatus | None = None
    wait_until: datetime | None = None


def cancelled_reason(cancellation: Cancellation) -> str:
    return f"cancelled by {cancellation.by}: {cancellation.reason}"[:2000]


def stop_plan(status: PlanResourceStatus, cancellation: Cancellation, now: datetime) -> Stop:
    """Stop a cancelled plan at a safe point. A step under a live lease may be in the middle
    of a non-idempotent action: it is let finish (or its lease run out, which means its
    executor stopped). Then every step not yet final is cancelled and the plan is
    `abandoned`, whatever it waited on (an Approval, a retry, a person's release)."""
    leases = [
        s.lease.expires_at
        for s in status.steps
        if s.status is StepStatus.EXECUTING and s.lease is not None and s.lease.expires_at > now
    ]
    if leases:
        return Stop(wait_until=max(leases))
    why = cancelled_reason(cancellation)
    steps = [
        s
        if s.status in FINAL_STEP
        else s.model_copy(
            update={
                "status": StepStatus.CANCELLED,
                "lease": None,
                "next_run_at": None,
                "finished_at": now,
                "reason": (
                    f"{why} (it was executing when its lease ran out: see the ledger for "
                    "whether it acted)"
                    if s.status is StepStatus.EXECUTING
                    else why
                )[:2000],
            }
        )
        for s in status.steps
    ]
    return Stop(
        status=status.model_copy(
            update={
                "phase": PlanStatus.ABANDONED,
                "steps": steps,
                "reason": why,
                "waiting_on": None,
            }
        )
    )


def after_cancel(
    intention: IntentionRecord, cancellation: Cancellation, wants: Iterable[Want], now: datetime
) -> tuple[tuple[Want, ...], tuple[VolitionDecision, ...]]:
    """A person cancelled the plan of this intention: the active wants it served are
    suppressed (for the seed's suppression period), each with a decision naming the person."""
    why = f"plan of intention {intention.id} {cancelled_reason(cancellation)}"
    moved = [
        suppress(w, now, why[:2000])
        for w in served_wants(intention, wants)
        if w.status is WantStatus.ACTIVE
    ]
    return tuple(w for w, _ in moved), tuple(d for _, d in moved)


def tried_before_cancel(
    intention: IntentionRecord,
    plan: Plan,
    status: PlanResourceStatus,
    registry: CapabilityRegistry = REGISTRY,
) -> tuple[str, ...] | None:
    """The strategies the cancelled plan's intention leaves as failed, when a step of the plan
    acted (a writing capability completed) before the cancellation stopped it; None when
    nothing acted. The act was done, its check was stopped and its intention is abandoned: it
    did not do what it was for. Remembered for the subject like any failure (see
    `settlement`), so another want about the same workload does not have it done again in
    the same spell: the mind tells a person instead."""
    done = {s.key for s in status.steps if s.status is StepStatus.COMPLETED}
    acted = any(
        step.kind is StepKind.CAPABILITY
        and step.key in done
        and (spec := registry.get(step.capability or "")) is not None
        and not spec.read_only
        for step in plan.steps
    )
    if not acted or plan.strategy.value in intention.failed_strategies:
        return None
    return (*intention.failed_strategies, plan.strategy.value)


def correction_key(namespace: str, mind: str, correction: IntentionCorrection) -> str:
    """The ledger key that marks a correction applied: the same entry applies once."""
    return idempotency_key(
        "intention_correction",
        namespace,
        mind,
        correction.intention,
        correction.action.value,
        correction.by,
        correction.reason,
    )


def served_wants(intention: IntentionRecord, wants: Iterable[Want]) -> tuple[Want, ...]:
    """The wants an intention serves: those about its subject (its workload, request or
    commitment), as formation chose the subject."""
    subject = intention.subject
    if not subject:
        return ()
    return tuple(
        w
        for w in wants
        if (w.target == subject or w.subject == subject)
        and w.status in (WantStatus.ACTIVE, WantStatus.SUPPRESSED)
    )


def correct_intention(
    intention: IntentionRecord,
    correction: IntentionCorrection,
    wants: Sequence[Want],
    now: datetime,
) -> Reconsideration:
    """A person's verdict on an intention, judged as the `operator_correction` trigger; the
    reconsideration decision names the person and says why."""
    verdict = VERDICT[correction.action]
    judged = reconsider(
        intention,
        Trigger.OPERATOR_CORRECTION,
        ReconsiderationContext(
            now=now,
            wants=tuple(w for w in served_wants(intention, wants) if _touched(w, verdict)),
            operator_says=verdict,
        ),
    )
    said = f"{correction.by} said {correction.action.value}: {correction.reason}"
    reason = f"{said} ({judged.reason})" if judged.verdict is not verdict else said
    first, *rest = judged.decisions
    named = first.model_copy(
        update={
            "reason": reason[:2000],
            "inputs": {
                **first.inputs,
                "by": correction.by,
                "action": correction.action.value,
                "correction": correction.reason,
            },
        }
    )
    return judged.model_copy(update={"reason": reason[:2000], "decisions": (named, *rest)})


def _touched(want: Want, verdict: Verdict) -> bool:
    """Abandoning suppresses the active wants; resuming changes no want."""
    return verdict is Verdict.ABANDON and want.status is WantStatus.ACTIVE


def revocations(spec: MindSpec) -> dict[str, str]:
    """The commitments people revoked, each with who and why (for `commitment_state`)."""
    return {
        r.commitment: f"revoked by {r.by}: {r.reason}"[:1024] for r in spec.commitment_revocations
    }

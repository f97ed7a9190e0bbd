"""The executor's answer to whatever happens to a plan is the domain's ``reconsider()``.

| what the executor saw                   | trigger              | the domain's verdict            |
|-----------------------------------------|----------------------|---------------------------------|
| a step failed                           | `failed_step`        | replan (abandon past the limit) |
| a verify's expectation was refuted      | `failed_expectation` | replan (abandon past the limit) |
| an approval was denied                  | `denied_approval`    | replan                          |
| an approval expired or was withdrawn    | `expired_approval`   | block: nobody is asked again    |
| the budget is exhausted                 | `budget`             | suspend                         |
| the plan completed                      | `goal_completion`    | fulfil (block after escalating) |

Each verdict's decision row goes to ``volition_decisions`` (so ``kubectl minds why`` shows it),
keyed by the plan and the trigger, so a controller that answers again after a crash records
it once; then ``VERDICTS`` applies it. Whatever the verdict on a plan that ended, the
subordinate "obtain approval" intentions its steps formed close with it: a refused or
unanswered request is not pursued any more.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from minds.domain.errors import Refused
from minds.domain.execution.machine import FINAL_STEP, RUNNABLE
from minds.domain.intentions import IntentionRecord, IntentionStatus
from minds.domain.ledger import idempotency_key
from minds.domain.planning.model import Plan, PlanOrigin, PlanStatus, StepStatus
from minds.domain.resources.kinds import PLAN
from minds.domain.resources.plan import PlanResourceStatus
from minds.domain.volition.reconsideration import (
    FAILURE_TRIGGERS,
    RECONSIDERED,
    Reconsideration,
    ReconsiderationContext,
    Trigger,
    Verdict,
    answer_key,
    reconsider,
)
from minds.domain.volition.resumption import Waiting
from minds.engine.conditional import write_status
from minds.engine.decisions import record_decisions
from minds.engine.executing.context import Deps
from minds.engine.executing.journal import Notice, record
from minds.engine.ports import Conflict, NotFound

#: The ledger row of a plan whose intention resumed by rule (``reviewing``), keyed by why it
#: waited (and, for a budget, the count it blocked on).
RESUMED = "plan_resumed"

#: Every trigger a plan's end or hold raises (the table above; docs/execution.md shows the
#: same). A review of open plans raises `capability_change` and `commitment_change`.
RAISED: frozenset[Trigger] = frozenset(
    {
        *(t for _, t in FAILURE_TRIGGERS),
        Trigger.FAILED_STEP,
        Trigger.BUDGET,
        Trigger.GOAL_COMPLETION,
    }
)

#: Re-reads a conditional write of a link may take (each 409 means someone else wrote).
CONFLICT_RETRIES = 5

Answer = Callable[[Deps, dict[str, Any], Plan, IntentionRecord, Reconsideration], None]


def answered(
    deps: Deps, body: dict[str, Any], trigger: Trigger, once_per: tuple[str, ...] = ()
) -> bool:
    """Whether this plan's ``trigger`` was answered already (its ``plan_reconsidered`` row)."""
    return deps.ledger.event(answer_key(body["metadata"]["uid"], trigger, once_per)) is not None


def resumed_anew(deps: Deps, body: dict[str, Any]) -> bool:
    """Whether the plan's intention resumed because its means came back: its replan is a new
    revision that may use the same strategy (the strategy did not fail)."""
    key = idempotency_key("plan", body["metadata"]["uid"], RESUMED, Waiting.MEANS.value)
    return deps.ledger.event(key) is not None


def answer(
    deps: Deps,
    body: dict[str, Any],
    plan: Plan,
    intention: IntentionRecord,
    trigger: Trigger,
    *,
    cause: str | None = None,
    escalated: bool = False,
    means_available: bool | None = None,
    forbidden: bool = False,
    approval_required: bool = False,
    belief_confidence: float | None = None,
    belief_min_confidence: float | None = None,
    once_per: tuple[str, ...] = (),
) -> Reconsideration | None:
    """Reconsider the plan's intention on ``trigger``, record the choice, apply it, then say
    so in the plan's ``plan_reconsidered`` row (its reason: ``cause``, what happened, when
    given); None when that row says it was done before (a verdict is applied once: a person
    who resumes a blocked intention is not overruled by the next look at the plan that blocked
    it). ``once_per``: what else tells one answer from another of the same trigger (a budget
    blocks once per count used: a plan that resumed and blocks again is answered again)."""
    if answered(deps, body, trigger, once_per):
        return None
    meta = body["metadata"]
    verdict = reconsider(
        intention,
        trigger,
        ReconsiderationContext(
            now=deps.clock(),
            escalated=escalated,
            means_available=means_available,
            forbidden=forbidden,
            approval_required=approval_required,
            belief_confidence=belief_confidence,
            belief_min_confidence=belief_min_confidence,
            replannable=plan.origin is not PlanOrigin.OPERATOR,
            basis=":".join((meta["uid"], trigger.value, *once_per)),
        ),
    )
    decisions = [
        d.model_copy(update={"subjects": {**d.subjects, "plan": meta["name"]}})
        for d in verdict.decisions
    ]
    record_decisions(deps.ledger, decisions)
    # The intention and the plan say what happened too, not only the rule's words.
    told = f"{verdict.reason}: {cause}" if cause else verdict.reason
    VERDICTS[verdict.verdict](
        deps, body, plan, intention, verdict.model_copy(update={"reason": told[:2000]})
    )
    reconsidered(deps, body, plan, trigger, verdict.verdict, cause or verdict.reason, once_per)
    return verdict


def reconsidered(
    deps: Deps,
    body: dict[str, Any],
    plan: Plan,
    trigger: Trigger,
    verdict: Verdict,
    reason: str,
    once_per: tuple[str, ...] = (),
) -> None:
    """The plan's row saying how its intention was reconsidered (written once the verdict is
    applied: a crash before it means the verdict is applied again, which changes nothing)."""
    payload = {"trigger": trigger.value, "verdict": verdict.value, "reason": reason}
    record(deps, body, plan, RECONSIDERED, (trigger.value, *once_per), payload)


def close_subordinates(deps: Deps, intention: IntentionRecord, reason: str) -> None:
    """The "obtain approval" intentions of a plan that ended are pursued no more."""
    for child in deps.ledger.intentions(parent_id=intention.id):
        if not child.status.final:
            deps.ledger.transition_intention(
                child.id, IntentionStatus.ABANDONED, reason[:2000], deps.clock()
            )


def _keep(
    deps: Deps, body: dict[str, Any], plan: Plan, intention: IntentionRecord, r: Reconsideration
) -> None:
    """Nothing changes for the intention."""


def _move(
    deps: Deps, body: dict[str, Any], plan: Plan, intention: IntentionRecord, r: Reconsideration
) -> None:
    """The intention moves to the verdict's status; the plan stays as it is."""
    assert r.status is not None
    deps.ledger.transition_intention(intention.id, r.status, r.reason, deps.clock())


def _stop(phase: PlanStatus) -> Answer:
    """The plan runs no further: an open one ends in ``phase``, a failed one stays failed; the
    intention moves as the verdict says."""

    def stop(
        deps: Deps,
        body: dict[str, Any],
        plan: Plan,
        intention: IntentionRecord,
        r: Reconsideration,
    ) -> None:
        assert r.status is not None
        # The intention first: a crash between the two leaves a plan still `failed`, which the
        # next tick concludes again; the other order would leave a live intention unanswered.
        deps.ledger.transition_intention(intention.id, r.status, r.reason, deps.clock())
        if PlanResourceStatus.model_validate(body.get("status") or {}).phase is PlanStatus.FAILED:
            # A plan that failed stays failed, whatever follows for its intention.
            close(deps, body, PlanStatus.FAILED, r.reason, "cancelled: the plan failed")
        else:
            close(deps, body, phase, r.reason, f"cancelled: {r.reason}")

    return stop


def _replan(
    deps: Deps, body: dict[str, Any], plan: Plan, intention: IntentionRecord, r: Reconsideration
) -> None:
    # A new approval requirement is a constraint, not a failure: the strategy may be used again.
    reuse = r.verdict is Verdict.REQUIRE_APPROVAL
    replan(deps, body, plan, intention, r.reason, r.trigger, reuse=reuse)


#: What each verdict does to the plan and its intention.
VERDICTS: dict[Verdict, Answer] = {
    Verdict.KEEP: _keep,
    Verdict.BLOCK: _stop(PlanStatus.FAILED),
    Verdict.SUSPEND: _move,
    Verdict.RESUME: _move,
    Verdict.REPLAN: _replan,
    Verdict.REQUIRE_APPROVAL: _replan,
    Verdict.ABANDON: _stop(PlanStatus.ABANDONED),
    Verdict.FULFIL: _move,
}


def close(deps: Deps, body: dict[str, Any], phase: PlanStatus, reason: str, why: str) -> bool:
    """A failed plan, or an open one a review found no longer authorised (with no step under
    way), runs no further: its open steps are cancelled and the Approvals and grant requests
    they wait on withdrawn, so nobody approves work for a dead plan. ``phase``: FAILED (it
    stays failed), ABANDONED (its intention was abandoned) or REPLANNING (a new revision
    follows)."""
    meta = body["metadata"]

    def mark(fresh: dict[str, Any]) -> tuple[dict[str, Any] | None, bool]:
        st = PlanResourceStatus.model_validate(fresh.get("status") or {})
        under_way = any(s.status is StepStatus.EXECUTING for s in st.steps)
        if st.phase is not PlanStatus.FAILED and (st.phase not in RUNNABLE or under_way):
            return None, st.phase is phase
        steps = [
            s
            if s.status in FINAL_STEP
            else s.model_copy(update={"status": StepStatus.CANCELLED, "lease": None, "reason": why})
            for s in st.steps
        ]
        closed = st.model_copy(update={"phase": phase, "steps": steps, "reason": reason[:2000]})
        return (None, True) if closed == st else (closed.to_k8s(), True)

    _, ok = write_status(deps.resources, PLAN, meta["namespace"], meta["name"], mark)
    if not ok:
        return False
    deps.approvals.abandon_plan(
        meta["namespace"],
        meta["uid"],
        "the plan that asked was replaced"
        if phase is PlanStatus.REPLANNING
        else "the plan that asked failed",
    )
    return True


def link_successor(deps: Deps, namespace: str, name: str, successor: str) -> bool:
    """``spec.supersededBy`` of the replaced plan names its successor, written once by the
    controller (a link, not an edit of what the plan said). False when the plan is gone or
    already names another successor."""
    for _ in range(CONFLICT_RETRIES):
        try:
            body = deps.resources.get(PLAN, namespace, name)
        except NotFound:
            return False
        linked = (body.get("spec") or {}).get("supersededBy")
        if linked is not None:
            return bool(linked == successor)
        try:
            deps.resources.patch_spec(PLAN, body, {"supersededBy": successor})
        except Conflict:
            continue
        except (NotFound, Refused):
            return False  # gone, or its namespace is going: the status still names the successor
        return True
    return False


def replan(
    deps: Deps,
    body: dict[str, Any],
    plan: Plan,
    intention: IntentionRecord,
    reason: str,
    trigger: Trigger = Trigger.FAILED_STEP,
    *,
    reuse: bool = False,
) -> str | None:
    """A new revision instead of the failed plan (the domain already said replan)."""
    meta = body["metadata"]
    now = deps.clock()
    if not close(deps, body, PlanStatus.REPLANNING, reason, "cancelled for a new revision"):
        return None
    # Idempotent if a crash interrupted an earlier attempt: revision n failing means n replans
    # so far, and its strategy is recorded once.
    failed = list(intention.failed_strategies)
    # Recorded once; an intention may start with strategies that failed on its subject
    # before, so the list is not one entry per revision.
    if plan.strategy.value not in failed and not reuse:
        failed.append(plan.strategy.value)
    intention = deps.ledger.update_intention(
        intention.id,
        replans=max(intention.replans, plan.revision),
        failed_strategies=failed,
        at=now,
    )
    planned = deps.planning.plan(intention, revision=plan.revision + 1, supersedes=meta["name"])
    new_name = planned.plan_name

    def supersede(fresh: dict[str, Any]) -> tuple[dict[str, Any] | None, None]:
        st = PlanResourceStatus.model_validate(fresh.get("status") or {})
        phase = PlanStatus.SUPERSEDED if new_name else PlanStatus.FAILED
        why = f"superseded by {new_name}" if new_name else f"no new plan: {planned.result.reason}"
        return st.model_copy(update={"phase": phase, "reason": why}).to_k8s(), None

    if new_name is not None:
        link_successor(deps, meta["namespace"], meta["name"], new_name)
    write_status(deps.resources, PLAN, meta["namespace"], meta["name"], supersede)
    if new_name is None:
        deps.ledger.transition_intention(
            intention.id,
            IntentionStatus.ABANDONED,
            f"no possible plan after {reason}: {planned.result.reason}",
            now,
        )
        return None
    deps.ledger.update_intention(intention.id, plan=new_name, at=now)
    record(
        deps,
        body,
        plan,
        "plan_replanned",
        (),
        {"from": meta["name"], "to": new_name, "reason": reason},
        Notice("Normal", "Replanned", f"superseded by {new_name}"),
    )
    return new_name

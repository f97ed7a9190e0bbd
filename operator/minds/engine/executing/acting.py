"""Running a claimed step: one handler per step kind, each ending in one conditional write.

Whatever acts on the world goes through the capability service under the step's origin key
(plan uid, step, attempt), whose write-ahead row makes a replay find what was done.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from minds.domain.execution.adopt import (
    Acted,
    ActKind,
    Effect,
    EffectKind,
    Looked,
    after_act,
    after_monitor,
    after_precondition,
    after_verify,
    after_wait,
    judge,
    summarise_findings,
)
from minds.domain.execution.machine import states
from minds.domain.planning import budget
from minds.domain.planning.model import (
    Check,
    InternalAction,
    Observation,
    Plan,
    ResourceUse,
    Step,
    StepKind,
    StepState,
    StepStatus,
)
from minds.domain.resources.approval import Explanation, GrantRequest
from minds.domain.resources.plan import PlanResourceStatus
from minds.domain.volition.findings import finding_results
from minds.engine.executing.context import Deps
from minds.engine.executing.invoking import invocation, origin
from minds.engine.executing.outcome import (
    Adjust,
    Chain,
    Claimed,
    Expect,
    Then,
    apply_step,
    leased_to,
)
from minds.engine.executing.targets import holding, instead, writing_target
from minds.engine.invocations import (
    CapabilityRequest,
    InvocationOutcome,
    Origin,
    OutcomeKind,
)
from minds.engine.invocations import Invocation as CapabilityInvocation


def looked(outcome: InvocationOutcome, check: Check) -> Looked:
    if outcome.kind is OutcomeKind.EXECUTED and outcome.result is not None:
        fields = dict(outcome.result.fields)
        return Looked(True, judge(check, fields), outcome.reason, fields)
    permanent = outcome.kind is OutcomeKind.DENIED
    return Looked(False, False, f"not observable: {outcome.reason}", {}, permanent=permanent)


def acted(outcome: InvocationOutcome) -> Acted:
    fields = dict(outcome.result.fields) if outcome.result is not None else {}
    return Acted(
        kind=ActKind(outcome.kind.value),
        summary=outcome.reason,
        fields=fields,
        execution=str(outcome.execution_id) if outcome.execution_id is not None else None,
        approval=outcome.approval,
    )


def counted(spent: ResourceUse) -> Adjust:
    """Count what a run spent against the plan's budget, in the same write as its outcome
    (money excepted: the claim counted it, before the step acted)."""

    def count(status: PlanResourceStatus) -> PlanResourceStatus:
        return status.model_copy(update={"actual": budget.added(status.actual, spent)})

    return count


#: What a look spends: checks are counted apart from invocations (docs/planning.md#budgets).
ONE_CHECK = ResourceUse(checks=1)


@dataclass(frozen=True)
class Run:
    """One claimed step, as its handler sees it."""

    deps: Deps
    body: dict[str, Any]
    plan: Plan
    step: Step
    state: StepState
    now: datetime
    #: How the claim of the next step is computed, to ride on this step's outcome.
    chain: Chain | None = None

    @property
    def mine(self) -> Expect:
        return leased_to(self.deps.holder, self.state.attempts)

    def settle(
        self, new: StepState, effects: list[Effect], adjust: Adjust | None = None
    ) -> Claimed | None:
        """Write the step's new state, with the claim of the step that follows when it can
        run at once: that step, to run next."""
        then = Then(self.chain) if self.chain is not None else None
        apply_step(
            self.deps,
            self.body,
            self.plan,
            self.step.key,
            self.mine,
            new,
            effects,
            adjust,
            then,
        )
        return then.claimed if then is not None else None

    def check(self, step: Step, check: Check, label: str) -> Looked:
        """Observe through a read-only capability; ``label`` keeps each check's origin apart."""
        meta = self.body["metadata"]
        parameters = check.parameters if check.parameters is not None else (step.parameters or {})
        outcome = self.deps.capabilities.invoke(
            CapabilityInvocation(
                namespace=meta["namespace"],
                capability=check.capability,
                parameters=dict(parameters),
                origin=Origin(
                    mind=self.plan.mind or "-",
                    intention=self.plan.intention,
                    plan=meta["name"],
                    plan_uid=f"{meta['uid']}:{label}",
                    step=step.key,
                    attempt=max(1, self.state.attempts),
                ),
                explanation=Explanation(
                    what=f"check {check.field}", why=self.plan.objective[:4096]
                ),
                evidence={"plan": meta["name"], "step": step.key},
                check=True,
            )
        )
        return looked(outcome, check)


def _capability(run: Run) -> Claimed | None:
    step, state = run.step, run.state
    checks = 0
    if step.precondition is not None:
        checks = 1
        decided = after_precondition(
            step, state, run.check(step, step.precondition.check, "pre"), run.now
        )
        if decided is not None:
            return run.settle(decided[0], decided[1], counted(ONE_CHECK))
    target = writing_target(run.deps, step)
    with holding(run.deps, run.body["metadata"]["namespace"], target) as mine:
        held = instead(run.deps, run.body, step, state, target, mine, run.now)
        if held is not None:
            return run.settle(held, [], counted(ResourceUse(checks=checks)))
        outcome = run.deps.capabilities.invoke(invocation(run.body, run.plan, step, state.attempts))
    new, effects = after_act(step, state, acted(outcome), run.now)
    asked = 1 if outcome.kind is OutcomeKind.PENDING else 0
    return run.settle(
        new, effects, counted(ResourceUse(invocations=1, checks=checks, approvals=asked))
    )


def _request_capability(run: Run) -> Claimed | None:
    step = run.step
    assert step.request is not None
    req = step.request
    outcome = run.deps.asking.request_capability(
        CapabilityRequest(
            namespace=run.body["metadata"]["namespace"],
            capability=req.capability,
            origin=origin(run.body, run.plan, step, run.state.attempts),
            grant=GrantRequest(
                target_pattern=req.target_pattern,
                parameter_limits=req.parameter_limits or {},
                duration_seconds=req.duration_seconds,
                operation_cap=req.operation_cap,
                reason=req.reason,
                risk=req.risk,
                mitigation=req.mitigation,
                fallback=req.fallback,
                alternatives=list(req.alternatives),
            ),
            explanation=Explanation(what=step.title, why=req.reason),
            batch_key=run.plan.intention,
        )
    )
    new, effects = after_act(step, run.state, acted(outcome), run.now)
    asked = 1 if outcome.kind is OutcomeKind.PENDING else 0
    return run.settle(new, effects, counted(ResourceUse(approvals=asked)))


def _verify(run: Run) -> Claimed | None:
    target = next(s for s in run.plan.steps if s.key == run.step.verifies)
    assert target.expectation is not None
    seen = run.check(target, target.expectation.check, "verify")
    all_states = states(PlanResourceStatus.model_validate(run.body.get("status") or {}))
    new, effects = after_verify(run.plan, run.step, run.state, all_states, seen, run.now)
    return run.settle(new, effects, counted(ONE_CHECK))


def _monitor(run: Run) -> Claimed | None:
    assert run.step.check is not None
    seen = run.check(run.step, run.step.check, "monitor")
    new, effects = after_monitor(run.step, run.state, seen, run.now)
    return run.settle(new, effects, counted(ONE_CHECK))


def _wait(run: Run) -> Claimed | None:
    new, effects = after_wait(run.step, run.state, run.now)
    return run.settle(new, effects)


#: What an internal step leaves behind: a note for a person, or an observation in the ledger.
_INTERNAL: dict[InternalAction | None, Callable[[Step, str], tuple[str, EffectKind]]] = {
    InternalAction.NOTIFY_OPERATOR: lambda step, seen: (
        f"{step.note or ''} Seen: {seen}".strip()[:2000],
        EffectKind.NOTIFY_OPERATOR,
    ),
}


def _record_only(step: Step, seen: str) -> tuple[str, EffectKind]:
    return seen, EffectKind.RECORD_OBSERVATION


def _internal(run: Run) -> Claimed | None:
    all_states = states(PlanResourceStatus.model_validate(run.body.get("status") or {}))
    seen = summarise_findings(run.plan, run.step, all_states)
    text, kind = _INTERNAL.get(run.step.internal_action, _record_only)(run.step, seen)
    new = run.state.model_copy(
        update={
            "status": StepStatus.COMPLETED,
            "lease": None,
            "finished_at": run.now,
            "observation": Observation(summary=text or "nothing observed", observed_at=run.now),
        }
    )
    results = finding_results(run.plan, run.step, all_states)
    return run.settle(new, [Effect(kind, run.step.key, text, data={"results": results})])


#: One handler per step kind (``test_every_step_kind_has_a_handler`` keeps it whole).
HANDLERS: dict[StepKind, Callable[[Run], Claimed | None]] = {
    StepKind.CAPABILITY: _capability,
    StepKind.REQUEST_CAPABILITY: _request_capability,
    StepKind.VERIFY: _verify,
    StepKind.MONITOR: _monitor,
    StepKind.WAIT: _wait,
    StepKind.INTERNAL: _internal,
}


def run(
    deps: Deps,
    body: dict[str, Any],
    plan: Plan,
    step: Step,
    state: StepState,
    chain: Chain | None = None,
) -> Claimed | None:
    """Act on a step we hold the claim on; ``body`` is the Plan as our claim wrote it. With
    ``chain``, the step its outcome's write claimed as well, if any, to act on next."""
    return HANDLERS[step.kind](Run(deps, body, plan, step, state, deps.clock(), chain))

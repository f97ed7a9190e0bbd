"""The executor: moves a plan's steps one conditional write at a time.

It holds no plan state between calls. Every ``tick`` re-reads the Plan resource, asks
``minds.domain.execution`` what the next transition is and applies it with a status write that
carries the resourceVersion it was computed from; on 409 it re-reads and recomputes. A step is
claimed (ready -> executing, with a lease) before anything acts, so two controllers never act
on the same step; whatever acts records a write-ahead row first, so a controller that dies
mid-action leaves evidence and the next one does not repeat a non-idempotent action blindly.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from pydantic import ValidationError

from minds.domain.approvals import Asker, Ruling, Verdict, approval_name, authorises
from minds.domain.beliefs import PredictionRecord, PredictionStatus
from minds.domain.beliefs import prediction_id as make_prediction_id
from minds.domain.capabilities.registry import CapabilityRegistry
from minds.domain.execution.adopt import (
    Acted,
    ActKind,
    Effect,
    EffectKind,
    Looked,
    after_act,
    after_approval,
    after_monitor,
    after_precondition,
    after_verify,
    after_wait,
    judge,
    summarise_findings,
)
from minds.domain.execution.machine import (
    FINAL_STEP,
    RUNNABLE,
    WorkKind,
    claim_approved,
    next_work,
    settle,
    states,
    summarise,
    with_step,
)
from minds.domain.executions import ExecutionStatus
from minds.domain.intentions import (
    IntentionKind,
    IntentionRecord,
    IntentionStatus,
    intention_id,
)
from minds.domain.ledger import EventRecord, SubjectRef, idempotency_key
from minds.domain.planning.model import (
    Check,
    InternalAction,
    Observation,
    Plan,
    PlanOrigin,
    PlanStatus,
    Step,
    StepKind,
    StepState,
    StepStatus,
    Strategy,
)
from minds.domain.procedures import ProceduralMemory, procedure_steps, render_procedure
from minds.domain.resources.approval import (
    ApprovalKind,
    ApprovalSpec,
    Explanation,
    GrantRequest,
)
from minds.domain.resources.kinds import APPROVAL, MIND, PLAN
from minds.domain.resources.mind import MindSpec
from minds.domain.resources.plan import PlanResourceStatus
from minds.domain.volition.reconsideration import MAX_REPLANS
from minds.engine.approval_service import ApprovalService
from minds.engine.capability_service import (
    CapabilityRequest,
    CapabilityService,
    InvocationOutcome,
    Origin,
    OutcomeKind,
)
from minds.engine.capability_service import Invocation as CapabilityInvocation
from minds.engine.conditional import write_status
from minds.engine.planning_service import PlanningService
from minds.engine.ports import Clock, Conflict, EventPort, NotFound, ResourcePort

log = logging.getLogger(__name__)

#: Transitions one tick applies at most; the rest wait for the next wake-up.
MAX_TRANSITIONS = 64

#: How a step reads an Approval that will never let it act (see ``after_approval``).
_REFUSED = {
    Verdict.DENIED: "Denied",
    Verdict.EXPIRED: "Expired",
    Verdict.WITHDRAWN: "Withdrawn",
    Verdict.NOT_OURS: "Withdrawn",
}


@dataclass(frozen=True)
class TickResult:
    transitions: int
    wake_at: datetime | None
    phase: PlanStatus | None


def _looked(outcome: InvocationOutcome, check: Check) -> Looked:
    if outcome.kind is OutcomeKind.EXECUTED and outcome.result is not None:
        fields = dict(outcome.result.fields)
        holds = judge(check, fields)
        return Looked(True, holds, outcome.reason, fields)
    permanent = outcome.kind is OutcomeKind.DENIED
    return Looked(False, False, f"not observable: {outcome.reason}", {}, permanent=permanent)


def _acted(outcome: InvocationOutcome) -> Acted:
    fields = dict(outcome.result.fields) if outcome.result is not None else {}
    return Acted(
        kind=ActKind(outcome.kind.value),
        summary=outcome.reason,
        fields=fields,
        execution=str(outcome.execution_id) if outcome.execution_id is not None else None,
        approval=outcome.approval,
    )


def _leased_to(holder: str, attempts: int) -> Callable[[StepState], bool]:
    """The step is still executing under our claim, for the attempt we claimed: only then may
    what we did be written back."""

    def mine(current: StepState) -> bool:
        return (
            current.status is StepStatus.EXECUTING
            and current.lease is not None
            and current.lease.holder == holder
            and current.attempts == attempts
        )

    return mine


class Executor:
    def __init__(
        self,
        *,
        resources: ResourcePort,
        ledger: Any,
        events: EventPort,
        capabilities: CapabilityService,
        approvals: ApprovalService,
        planning: PlanningService,
        clock: Clock,
        registry: CapabilityRegistry,
        holder: str,
    ) -> None:
        self._resources = resources
        self._ledger = ledger
        self._events = events
        self._capabilities = capabilities
        self._approvals = approvals
        self._planning = planning
        self._clock = clock
        self._registry = registry
        self._holder = holder
        self._timeouts = {name: spec.timeout_seconds for name, spec in registry.specs.items()}

    # -- reading -------------------------------------------------------------------------

    def _read(self, namespace: str, name: str) -> tuple[dict[str, Any], Plan, PlanResourceStatus]:
        body = self._resources.get(PLAN, namespace, name)
        plan = Plan.model_validate(body.get("spec") or {})
        status = PlanResourceStatus.model_validate(body.get("status") or {})
        return body, plan, status

    def _mind(self, namespace: str, name: str | None) -> MindSpec | None:
        if not name:
            return None
        try:
            spec = MindSpec.model_validate(self._resources.get(MIND, namespace, name)["spec"])
        except (NotFound, ValidationError, KeyError):
            return None
        return spec

    # -- the ledger ----------------------------------------------------------------------

    def _event(
        self,
        body: dict[str, Any],
        plan: Plan,
        type_: str,
        key: tuple[str, ...],
        payload: dict[str, Any],
    ) -> bool:
        meta = body["metadata"]
        return bool(
            self._ledger.append_event(
                EventRecord(
                    mind=plan.mind or "-",
                    namespace=meta["namespace"],
                    type=type_,
                    subject=SubjectRef(kind=PLAN.kind, name=meta["name"], uid=meta["uid"]),
                    payload={"intention": plan.intention, **payload},
                    occurred_at=self._clock(),
                    idempotency_key=idempotency_key("plan", meta["uid"], type_, *key),
                )
            )
        )

    def _intention(self, body: dict[str, Any], plan: Plan) -> IntentionRecord:
        """The plan's intention; an operator-authored plan gets an implicit one."""
        meta = body["metadata"]
        if plan.intention:
            found = self._ledger.intention(plan.intention)
            if found is not None:
                return found  # type: ignore[no-any-return]
        now = self._clock()
        record = IntentionRecord(
            id=plan.intention or intention_id("plan", meta["uid"]),
            namespace=meta["namespace"],
            mind=plan.mind or "-",
            objective=plan.objective[:500],
            kind=IntentionKind.ACTION,
            plan=meta["name"],
            created_at=now,
            updated_at=now,
        )
        formed, _ = self._ledger.form_intention(record)
        return formed  # type: ignore[no-any-return]

    # -- ticking -------------------------------------------------------------------------

    def tick(self, namespace: str, name: str) -> TickResult:
        followed: set[str] = set()
        transitions = 0
        for _ in range(MAX_TRANSITIONS):
            try:
                body, plan, status = self._read(namespace, name)
            except NotFound:
                return TickResult(transitions, None, None)
            except ValidationError:
                return TickResult(transitions, None, None)
            if plan.origin is PlanOrigin.DREAM:
                return TickResult(transitions, None, status.phase)  # dreams never act
            if body["metadata"].get("deletionTimestamp"):
                # A plan being deleted acts no more, whatever it was approved to do.
                return TickResult(transitions, None, None)
            if status.phase not in RUNNABLE:
                if status.phase in (
                    PlanStatus.COMPLETED,
                    PlanStatus.FAILED,
                    PlanStatus.REPLANNING,
                ):
                    self._conclude(body, plan, status)
                return TickResult(transitions, None, status.phase)
            mind = self._mind(namespace, plan.mind)
            if mind is None or not mind.active:
                return TickResult(transitions, None, status.phase)  # inactive minds never act
            now = self._clock()
            settled = settle(plan, status, now)
            if settled != status:
                if not self._write(body, settled):
                    continue
                transitions += 1
                self._record_settled(body, plan, status, settled)
                continue
            work = next_work(
                plan, settled, now, self._holder, self._timeouts, skip=frozenset(followed)
            )
            if work.kind is WorkKind.NONE:
                return TickResult(transitions, work.wake_at, settled.phase)
            assert work.step is not None
            step = next(s for s in plan.steps if s.key == work.step)
            if work.kind is WorkKind.FOLLOW:
                followed.add(step.key)
                if self._follow(body, plan, step, settled, now):
                    transitions += 1
                continue
            if work.kind is WorkKind.RECOVER:
                if self._recover(body, plan, step, settled, mind, now):
                    transitions += 1
                continue
            if self._over_budget(plan, settled, step, now, body):
                transitions += 1
                continue
            assert work.claim is not None
            claimed = self._write(body, work.claim)
            if not claimed:
                continue
            transitions += 1
            claimed_state = states(work.claim)[step.key]
            self._event(
                body,
                plan,
                "plan_step_started",
                (step.key, str(claimed_state.attempts)),
                {"step": step.key, "kind": step.kind.value, "attempt": claimed_state.attempts},
            )
            self._run(claimed, plan, step, claimed_state, mind)
        return TickResult(transitions, self._clock(), None)

    def _write(self, body: dict[str, Any], status: PlanResourceStatus) -> dict[str, Any] | None:
        try:
            return self._resources.replace_status(PLAN, body, status.to_k8s())
        except Conflict:
            return None

    def _record_settled(
        self,
        body: dict[str, Any],
        plan: Plan,
        before: PlanResourceStatus,
        after: PlanResourceStatus,
    ) -> None:
        old = states(before)
        for state in after.steps:
            if old[state.key].status is StepStatus.PENDING and state.status is StepStatus.CANCELLED:
                self._event(
                    body,
                    plan,
                    "plan_step_cancelled",
                    (state.key,),
                    {"step": state.key, "reason": state.reason},
                )

    def _apply(
        self,
        body: dict[str, Any],
        plan: Plan,
        key: str,
        expect: Callable[[StepState], bool],
        new: StepState,
        effects: list[Effect],
        actual: Callable[[PlanResourceStatus], PlanResourceStatus] | None = None,
    ) -> bool:
        """Write one step's new state if the step is still as we left it; then its effects."""
        meta = body["metadata"]

        def compute(fresh: dict[str, Any]) -> tuple[dict[str, Any] | None, bool]:
            status = PlanResourceStatus.model_validate(fresh.get("status") or {})
            current = states(status).get(key)
            if current is None or not expect(current):
                return None, False
            updated = with_step(status, new)
            if actual is not None:
                updated = actual(updated)
            return summarise(plan, updated).to_k8s(), True

        written, ok = write_status(self._resources, PLAN, meta["namespace"], meta["name"], compute)
        if ok and written is not None:
            self._after_step(written, plan, new, effects)
        return ok

    def _after_step(
        self, body: dict[str, Any], plan: Plan, new: StepState, effects: list[Effect]
    ) -> None:
        if new.status in (
            StepStatus.COMPLETED,
            StepStatus.SKIPPED,
            StepStatus.FAILED,
            StepStatus.BLOCKED,
        ):
            type_ = {
                StepStatus.COMPLETED: "plan_step_completed",
                StepStatus.SKIPPED: "plan_step_skipped",
                StepStatus.FAILED: "plan_step_failed",
                StepStatus.BLOCKED: "plan_step_blocked",
            }[new.status]
            self._event(
                body,
                plan,
                type_,
                (new.key, str(new.attempts)),
                {
                    "step": new.key,
                    "reason": new.reason,
                    "observation": new.observation.to_k8s() if new.observation else None,
                },
            )
            if new.status in (StepStatus.FAILED, StepStatus.BLOCKED):
                self._events.post(
                    body,
                    type_="Warning",
                    reason=type_.removeprefix("plan_"),
                    message=f"{new.key}: {new.reason or new.status.value}",
                )
            else:
                self._events.post(
                    body,
                    type_="Normal",
                    reason=type_.removeprefix("plan_"),
                    message=f"{new.key}: {new.reason or 'done'}",
                )
        for effect in effects:
            self._effect(body, plan, new, effect)

    # -- acting --------------------------------------------------------------------------

    def _origin(self, body: dict[str, Any], plan: Plan, step: Step, attempt: int) -> Origin:
        meta = body["metadata"]
        return Origin(
            mind=plan.mind or "-",
            intention=plan.intention,
            plan=meta["name"],
            plan_uid=meta["uid"],
            step=step.key,
            attempt=max(1, attempt),
        )

    def _explanation(self, plan: Plan, step: Step) -> Explanation:
        expected = step.expectation.description if step.expectation else ""
        return Explanation(
            what=f"{step.title} ({step.capability} on {step.target or 'its target'})"[:4096],
            why=plan.objective[:4096],
            expected_outcome=expected[:4096],
            side_effects=(plan.risk or "")[:4096],
            alternatives=[
                f"{a.strategy.value}: {a.reason}"[:4096]
                for a in plan.alternatives
                if not a.selected
            ][:16],
        )

    def _invocation(
        self, body: dict[str, Any], plan: Plan, step: Step, attempt: int
    ) -> CapabilityInvocation:
        """What a capability step invokes: built from the Plan alone, whether it runs at once
        or after a person approved it."""
        return CapabilityInvocation(
            namespace=body["metadata"]["namespace"],
            capability=step.capability or "",
            parameters=dict(step.parameters or {}),
            origin=self._origin(body, plan, step, attempt),
            explanation=self._explanation(plan, step),
            evidence={
                "intention": plan.intention,
                "plan": body["metadata"]["name"],
                "step": step.key,
            },
            require_approval=step.requires_approval,
            batch_key=plan.intention,
        )

    def _check(
        self, body: dict[str, Any], plan: Plan, step: Step, check: Check, poll: int, label: str
    ) -> Looked:
        parameters = check.parameters if check.parameters is not None else (step.parameters or {})
        outcome = self._capabilities.invoke(
            CapabilityInvocation(
                namespace=body["metadata"]["namespace"],
                capability=check.capability,
                parameters=dict(parameters),
                origin=Origin(
                    mind=plan.mind or "-",
                    intention=plan.intention,
                    plan=body["metadata"]["name"],
                    plan_uid=f"{body['metadata']['uid']}:{label}",
                    step=step.key,
                    attempt=max(1, poll),
                ),
                explanation=Explanation(what=f"check {check.field}", why=plan.objective[:4096]),
                evidence={"plan": body["metadata"]["name"], "step": step.key},
                check=True,
            )
        )
        return _looked(outcome, check)

    def _count(
        self, status: PlanResourceStatus, invocations: int = 1, approvals: int = 0
    ) -> PlanResourceStatus:
        actual = status.actual.model_copy(
            update={
                "invocations": status.actual.invocations + invocations,
                "approvals": status.actual.approvals + approvals,
            }
        )
        return status.model_copy(update={"actual": actual})

    def _run(
        self, body: dict[str, Any], plan: Plan, step: Step, state: StepState, mind: MindSpec
    ) -> None:
        now = self._clock()
        attempts = state.attempts
        mine = _leased_to(self._holder, attempts)

        all_states = states(PlanResourceStatus.model_validate(body.get("status") or {}))
        if step.kind is StepKind.CAPABILITY:
            if step.precondition is not None:
                looked = self._check(body, plan, step, step.precondition.check, attempts, "pre")
                decided = after_precondition(step, state, looked, now)
                if decided is not None:
                    self._apply(
                        body, plan, step.key, mine, decided[0], decided[1], lambda s: self._count(s)
                    )
                    return
            outcome = self._capabilities.invoke(self._invocation(body, plan, step, attempts))
            new, effects = after_act(step, state, _acted(outcome), now)
            raised = 1 if outcome.kind is OutcomeKind.PENDING else 0
            self._apply(
                body, plan, step.key, mine, new, effects, lambda s: self._count(s, 1, raised)
            )
        elif step.kind is StepKind.REQUEST_CAPABILITY:
            assert step.request is not None
            req = step.request
            outcome = self._capabilities.request_capability(
                CapabilityRequest(
                    namespace=body["metadata"]["namespace"],
                    capability=req.capability,
                    origin=self._origin(body, plan, step, attempts),
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
                    batch_key=plan.intention,
                )
            )
            new, effects = after_act(step, state, _acted(outcome), now)
            raised = 1 if outcome.kind is OutcomeKind.PENDING else 0
            self._apply(
                body, plan, step.key, mine, new, effects, lambda s: self._count(s, 0, raised)
            )
        elif step.kind is StepKind.VERIFY:
            target = next(s for s in plan.steps if s.key == step.verifies)
            assert target.expectation is not None
            looked = self._check(body, plan, target, target.expectation.check, attempts, "verify")
            new, effects = after_verify(plan, step, state, all_states, looked, now)
            self._apply(body, plan, step.key, mine, new, effects, lambda s: self._count(s))
        elif step.kind is StepKind.MONITOR:
            assert step.check is not None
            looked = self._check(body, plan, step, step.check, attempts, "monitor")
            new, effects = after_monitor(step, state, looked, now)
            self._apply(body, plan, step.key, mine, new, effects, lambda s: self._count(s))
        elif step.kind is StepKind.WAIT:
            new, effects = after_wait(step, state, now)
            self._apply(body, plan, step.key, mine, new, effects)
        else:
            self._internal(body, plan, step, state, all_states, mine, now)

    def _internal(
        self,
        body: dict[str, Any],
        plan: Plan,
        step: Step,
        state: StepState,
        all_states: dict[str, StepState],
        mine: Callable[[StepState], bool],
        now: datetime,
    ) -> None:
        summary = summarise_findings(plan, step, all_states)
        if step.internal_action is InternalAction.NOTIFY_OPERATOR:
            text = f"{step.note or ''} Seen: {summary}".strip()[:2000]
            effect = Effect(EffectKind.NOTIFY_OPERATOR, step.key, text)
        else:
            text = summary
            effect = Effect(EffectKind.RECORD_OBSERVATION, step.key, text)
        new = state.model_copy(
            update={
                "status": StepStatus.COMPLETED,
                "lease": None,
                "finished_at": now,
                "observation": Observation(summary=text or "nothing observed", observed_at=now),
            }
        )
        self._apply(body, plan, step.key, mine, new, [effect])

    def _over_budget(
        self,
        plan: Plan,
        status: PlanResourceStatus,
        step: Step,
        now: datetime,
        body: dict[str, Any],
    ) -> bool:
        """Before a step that invokes a capability: is the budget spent? Then block it."""
        if step.kind in (StepKind.WAIT, StepKind.INTERNAL):
            return False
        budget = status.budget or plan.budget
        reason = None
        if status.actual.invocations >= budget.invocations:
            reason = (
                f"budget exhausted: {status.actual.invocations} of {budget.invocations} "
                "invocations used"
            )
        elif (
            budget.approvals is not None
            and step.kind is not StepKind.VERIFY
            and status.actual.approvals >= budget.approvals
            and (step.requires_approval or step.kind is StepKind.REQUEST_CAPABILITY)
        ):
            reason = f"budget exhausted: {status.actual.approvals} approvals asked"
        elif budget.wall_seconds is not None:
            started = min((s.started_at for s in status.steps if s.started_at), default=None)
            if started is not None and now - started >= timedelta(seconds=budget.wall_seconds):
                reason = f"budget exhausted: {budget.wall_seconds} s of wall time"
        if reason is None:
            return False
        state = states(status)[step.key]
        blocked = state.model_copy(update={"status": StepStatus.BLOCKED, "reason": reason})
        return self._apply(
            body,
            plan,
            step.key,
            lambda s: s.status is StepStatus.READY,
            blocked,
            [Effect(EffectKind.SUSPEND_INTENTION, step.key, reason)],
        )

    # -- following approvals -------------------------------------------------------------

    def _asker(self, body: dict[str, Any], step: Step, state: StepState) -> Asker | None:
        """The step as the Plan says it, which its Approval must match exactly."""
        common = {"plan_uid": body["metadata"]["uid"], "step": step.key, "attempt": state.attempts}
        if step.kind is StepKind.REQUEST_CAPABILITY:
            assert step.request is not None
            return Asker(
                kind=ApprovalKind.GRANT,
                capability=step.request.capability,
                target=step.request.target_pattern,
                **common,
            )
        spec = self._registry.get(step.capability or "")
        if spec is None:
            return None
        try:
            target = spec.target_of(spec.parse(step.parameters))
        except ValidationError:
            return None
        return Asker(kind=ApprovalKind.ACTION, capability=spec.name, target=target, **common)

    def _follow(
        self,
        body: dict[str, Any],
        plan: Plan,
        step: Step,
        status: PlanResourceStatus,
        now: datetime,
    ) -> bool:
        """Look at the Approval a step waits on; act if it authorises the step now."""
        state = states(status)[step.key]
        name = state.approval_ref
        if not name:
            return False
        waiting = state.status

        def same(current: StepState) -> bool:
            return current.status is waiting and current.approval_ref == name

        try:
            approval = self._approvals.reconcile(
                body["metadata"]["namespace"], name, owner_checked=True
            )
        except NotFound:
            gone = state.model_copy(
                update={
                    "status": StepStatus.FAILED,
                    "lease": None,
                    "finished_at": now,
                    "reason": f"approval {name} disappeared",
                }
            )
            return self._apply(body, plan, step.key, same, gone, [])
        spec = ApprovalSpec.model_validate(approval["spec"])
        asker = self._asker(body, step, state)
        if asker is None:
            ruling = Ruling(Verdict.NOT_OURS, "the step names no target an approval could cover")
        else:
            owners = [
                ref.get("uid", "")
                for ref in approval["metadata"].get("ownerReferences") or []
                if ref.get("kind") == PLAN.kind
            ]
            recorded = self._approvals.recorded(approval["metadata"]["uid"])
            ruling = authorises(spec, owners, asker, recorded, now)
        if ruling.verdict is Verdict.WAIT:
            return False
        if ruling.verdict is Verdict.ACT:
            act = (
                self._grant_approved if waiting is StepStatus.AWAITING_GRANT else self._act_approved
            )
            return act(body, plan, step, state, approval, now)
        found = after_approval(step, state, _REFUSED[ruling.verdict], ruling.reason, now, None)
        assert found is not None
        return self._apply(body, plan, step.key, same, found[0], found[1])

    def _grant_approved(
        self,
        body: dict[str, Any],
        plan: Plan,
        step: Step,
        state: StepState,
        approval: dict[str, Any],
        now: datetime,
    ) -> bool:
        """A grant is authority, not an action on the world: creating it is idempotent (named
        after the Approval), so it needs no claim; it is still the executor's to do, under the
        same rules, so no grant is ever made for a plan that is gone."""
        namespace, name = body["metadata"]["namespace"], approval["metadata"]["name"]
        spec = ApprovalSpec.model_validate(approval["spec"])
        outcome = self._capabilities.create_approved_grant(namespace, name, spec)
        if outcome.kind is OutcomeKind.DENIED:
            new, effects = after_act(step, state, _acted(outcome), now)
        else:
            found = after_approval(step, state, "Executed", "", now, None)
            assert found is not None
            new, effects = found
        ok = self._apply(
            body,
            plan,
            step.key,
            lambda s: s.status is state.status and s.approval_ref == name,
            new,
            effects,
        )
        self._settle_approval(namespace, name, outcome)
        return ok

    def _act_approved(
        self,
        body: dict[str, Any],
        plan: Plan,
        step: Step,
        state: StepState,
        approval: dict[str, Any],
        now: datetime,
    ) -> bool:
        """The approved action, run by the executor alone: first a claim with a lease (two
        controllers, or a handler and a daemon, never both get past it), then the step's own
        invocation under the step's origin key (the write-ahead row makes it at most once)."""
        meta = approval["metadata"]
        namespace, name = body["metadata"]["namespace"], meta["name"]
        claimed = claim_approved(step, state, now, self._holder, self._timeouts, plan)
        if not self._apply(
            body,
            plan,
            step.key,
            lambda s: s.status is StepStatus.AWAITING_APPROVAL and s.approval_ref == name,
            claimed,
            [],
        ):
            return False
        attempts = state.attempts
        mine = _leased_to(self._holder, attempts)

        spec = ApprovalSpec.model_validate(approval["spec"])
        outcome = self._capabilities.execute_approved(
            self._invocation(body, plan, step, attempts), name, meta["uid"], spec.decided_by
        )
        found = after_approval(step, claimed, "Executed", "", self._clock(), _acted(outcome))
        assert found is not None
        self._apply(body, plan, step.key, mine, found[0], found[1])
        self._settle_approval(namespace, name, outcome)
        return True

    def _settle_approval(self, namespace: str, name: str, outcome: InvocationOutcome) -> None:
        """The Approval's status and the ledger say what the executor did with it."""
        if outcome.kind is OutcomeKind.DENIED:
            self._approvals.not_executed(namespace, name, outcome.reason)
            return
        execution = str(outcome.execution_id or outcome.approval or "")
        self._approvals.executed(
            namespace, name, execution, f"{outcome.kind.value}: {outcome.reason}"
        )

    # -- recovering ----------------------------------------------------------------------

    def _recover(
        self,
        body: dict[str, Any],
        plan: Plan,
        step: Step,
        status: PlanResourceStatus,
        mind: MindSpec,
        now: datetime,
    ) -> bool:
        """An executing step whose lease expired: its executor stopped mid-action."""
        state = states(status)[step.key]
        lease = state.lease

        def same(current: StepState) -> bool:
            return current.status is StepStatus.EXECUTING and current.lease == lease

        retry = state.model_copy(update={"status": StepStatus.READY, "lease": None})
        if step.kind is StepKind.REQUEST_CAPABILITY:
            # A grant request already raised resumes its wait: the person is not asked twice.
            asked = approval_name(
                self._origin(body, plan, step, state.attempts).approval(), ApprovalKind.GRANT
            )
            try:
                self._resources.get(APPROVAL, body["metadata"]["namespace"], asked)
            except NotFound:
                return self._apply(body, plan, step.key, same, retry, [])
            pending = Acted(ActKind.PENDING, f"waiting for approval {asked}", approval=asked)
            new, effects = after_act(step, state, pending, now)
            return self._apply(body, plan, step.key, same, new, effects)
        if step.kind is not StepKind.CAPABILITY or step.capability is None:
            # Checks, waits and internal actions are safe to run again.
            return self._apply(body, plan, step.key, same, retry, [])
        origin = self._origin(body, plan, step, state.attempts)
        found = self._ledger.execution(origin.execution().key())
        if found is not None and found[1] is not None:
            record, outcome = found
            kind = (
                ActKind.EXECUTED if outcome.status is ExecutionStatus.EXECUTED else ActKind.FAILED
            )
            new, effects = after_act(
                step, state, Acted(kind, outcome.summary, dict(outcome.fields), str(record.id)), now
            )
            if state.approval_ref:
                resumed = Effect(EffectKind.FULFIL_SUBORDINATE, step.key, "approved and executed")
                effects = [
                    Effect(EffectKind.RESUME_INTENTION, step.key, "approved and executed"),
                    resumed,
                    *effects,
                ]
            ok = self._apply(body, plan, step.key, same, new, effects)
            if ok and state.approval_ref:
                self._approvals.executed(
                    body["metadata"]["namespace"],
                    state.approval_ref,
                    str(record.id),
                    f"{kind.value}: {outcome.summary}",
                )
            return ok
        spec = self._registry[step.capability]
        if found is not None:
            # A write-ahead row without an outcome: the action may have happened. Whether a
            # person approved it or not, it is not repeated blindly.
            if spec.read_only or spec.idempotent:
                return self._apply(body, plan, step.key, same, retry, [])
            reason = "outcome unknown; not repeating a non-idempotent action without verification"
            blocked = state.model_copy(
                update={"status": StepStatus.BLOCKED, "lease": None, "reason": reason}
            )
            return self._apply(
                body,
                plan,
                step.key,
                same,
                blocked,
                [Effect(EffectKind.UNVERIFIED_INTENTION, step.key, reason)],
            )
        name = approval_name(origin.approval(), ApprovalKind.ACTION)
        try:
            self._resources.get(APPROVAL, body["metadata"]["namespace"], name)
        except NotFound:
            pass
        else:
            # Nothing was written: the step waits on its Approval again (an approved one is
            # claimed and acted on by whoever follows it next).
            new, effects = after_act(
                step,
                state,
                Acted(ActKind.PENDING, f"waiting for approval {name}", approval=name),
                now,
            )
            return self._apply(body, plan, step.key, same, new, effects)
        # No write-ahead row: the action never started. Run it, as the same attempt.
        return self._apply(
            body,
            plan,
            step.key,
            same,
            retry.model_copy(update={"attempts": max(0, state.attempts - 1)}),
            [],
        )

    def release(self, namespace: str, name: str, key: str, by: str) -> bool:
        """A person checked a blocked step and lets it run again (as a new attempt)."""
        body, plan, status = self._read(namespace, name)
        state = states(status).get(key)
        if state is None or state.status is not StepStatus.BLOCKED:
            now_is = "no such step" if state is None else state.status.value
            self._events.post(
                body,
                type_="Warning",
                reason="ReleaseIgnored",
                message=f"{key}: not blocked ({now_is}); nothing released (asked by {by})",
            )
            return False
        released = state.model_copy(
            update={"status": StepStatus.READY, "reason": f"released by {by}"}
        )

        # A blocked step has blocked the plan; lift the plan back into the runnable phases.
        def reopen(s: PlanResourceStatus) -> PlanResourceStatus:
            return s.model_copy(update={"phase": PlanStatus.EXECUTING})

        ok = self._apply(
            body, plan, key, lambda s: s.status is StepStatus.BLOCKED, released, [], reopen
        )
        if ok:
            self._event(
                body,
                plan,
                "plan_step_released",
                (key, str(state.attempts), by),
                {"step": key, "by": by},
            )
            self._events.post(
                body, type_="Normal", reason="Released", message=f"{key}: released by {by}"
            )
            intention = self._intention(body, plan)
            self._ledger.transition_intention(
                intention.id, IntentionStatus.ACTIVE, f"step {key} released by {by}", self._clock()
            )
        return ok

    # -- effects -------------------------------------------------------------------------

    def _prediction_id(self, body: dict[str, Any], step: str) -> str:
        return make_prediction_id(body["metadata"]["uid"], step)

    def _effect(self, body: dict[str, Any], plan: Plan, state: StepState, effect: Effect) -> None:
        now = self._clock()
        namespace = body["metadata"]["namespace"]
        mind = plan.mind or "-"
        intention = self._intention(body, plan)
        kind = effect.kind
        if kind is EffectKind.OPEN_PREDICTION:
            belief = self._ledger.upsert_belief(
                namespace, mind, effect.data["description"], effect.data["confidence"], now
            )
            execution = effect.data.get("execution")
            self._ledger.open_prediction(
                PredictionRecord(
                    id=self._prediction_id(body, effect.step),
                    namespace=namespace,
                    mind=mind,
                    plan=body["metadata"]["name"],
                    step=effect.step,
                    execution_id=int(execution) if execution else None,
                    belief_id=belief.id,
                    criteria=effect.data["check"],
                    confidence=effect.data["confidence"],
                    window_start=effect.data["window_start"],
                    window_end=effect.data["window_end"],
                )
            )
        elif kind in (
            EffectKind.CONFIRM_PREDICTION,
            EffectKind.REFUTE_PREDICTION,
            EffectKind.EXPIRE_PREDICTION,
        ):
            resolution = {
                EffectKind.CONFIRM_PREDICTION: PredictionStatus.CONFIRMED,
                EffectKind.REFUTE_PREDICTION: PredictionStatus.REFUTED,
                EffectKind.EXPIRE_PREDICTION: PredictionStatus.EXPIRED,
            }[kind]
            pid = self._prediction_id(body, effect.step)
            # Resolving a confirmed or refuted prediction also weighs its supporting belief,
            # in the same transaction (the ledger's rule): nothing more to do here.
            self._ledger.resolve_prediction(pid, resolution, now, effect.data.get("observation"))
        elif kind is EffectKind.BLOCK_INTENTION:
            self._ledger.transition_intention(
                intention.id, IntentionStatus.BLOCKED, effect.reason, now
            )
        elif kind is EffectKind.RESUME_INTENTION:
            self._ledger.transition_intention(
                intention.id, IntentionStatus.ACTIVE, effect.reason, now
            )
        elif kind is EffectKind.SUSPEND_INTENTION:
            self._ledger.transition_intention(
                intention.id, IntentionStatus.SUSPENDED, effect.reason, now
            )
        elif kind is EffectKind.UNVERIFIED_INTENTION:
            self._ledger.transition_intention(
                intention.id, IntentionStatus.OUTCOME_UNVERIFIED, effect.reason, now
            )
        elif kind is EffectKind.FULFIL_INTENTION:
            self._ledger.transition_intention(
                intention.id, IntentionStatus.FULFILLED, effect.reason, now
            )
        elif kind is EffectKind.FORM_SUBORDINATE:
            child = IntentionRecord(
                id=intention_id(
                    intention.id,
                    body["metadata"]["uid"],
                    effect.step,
                    str(effect.data.get("approval")),
                ),
                namespace=namespace,
                mind=mind,
                objective=effect.reason[:500],
                kind=IntentionKind.ACTION,
                parent_id=intention.id,
                created_at=now,
                updated_at=now,
            )
            self._ledger.form_intention(child)
        elif kind is EffectKind.FULFIL_SUBORDINATE:
            for child in self._ledger.intentions(parent_id=intention.id):
                if child.status is IntentionStatus.ACTIVE:
                    self._ledger.transition_intention(
                        child.id, IntentionStatus.FULFILLED, effect.reason, now
                    )
        elif kind is EffectKind.RECORD_OBSERVATION:
            self._event(
                body,
                plan,
                "observation_recorded",
                (effect.step,),
                {"step": effect.step, "observation": effect.reason},
            )
        elif kind is EffectKind.NOTIFY_OPERATOR and self._event(
            body,
            plan,
            "operator_notified",
            (effect.step,),
            {"step": effect.step, "note": effect.reason},
        ):
            self._events.post(body, type_="Warning", reason="Escalated", message=effect.reason)

    # -- concluding ----------------------------------------------------------------------

    def _conclude(self, body: dict[str, Any], plan: Plan, status: PlanResourceStatus) -> None:
        """What a finished plan means for its intention. Every effect here is idempotent, so a
        controller that died half-way through is simply followed by one that does it again
        (the Kubernetes Event is posted only by whoever first records the ledger event)."""
        meta = body["metadata"]
        now = self._clock()
        intention = self._intention(body, plan)
        if intention.plan not in (None, meta["name"]):
            return  # the intention has moved on to another plan
        if status.phase is PlanStatus.COMPLETED:
            # Nothing of a finished plan waits on a person any more.
            self._approvals.abandon_plan(
                meta["namespace"], meta["uid"], "the plan that asked completed"
            )
            if self._event(body, plan, "plan_completed", (), {"progress": status.progress}):
                self._events.post(
                    body, type_="Normal", reason="Completed", message="plan completed"
                )
            done = [s.key for s in status.steps if s.status is StepStatus.COMPLETED]
            if done:  # a plan whose every step was skipped did nothing to remember
                confirmed = any(
                    s.kind in (StepKind.VERIFY, StepKind.MONITOR) and s.key in done
                    for s in plan.steps
                )
                text, confidence = render_procedure(
                    plan.objective,
                    procedure_steps(plan, done),
                    confirmed=confirmed,
                    revision=plan.revision,
                    earlier_failures=plan.revision - 1,
                )
                self._ledger.store_procedure(
                    ProceduralMemory(
                        id=f"proc-{meta['uid']}",
                        namespace=meta["namespace"],
                        mind=plan.mind or "-",
                        subject=intention.subject or plan.objective[:200],
                        text=text,
                        confidence=confidence,
                        plan=meta["name"],
                        revision=plan.revision,
                        created_at=now,
                    )
                )
            if plan.strategy is Strategy.DIAGNOSE_THEN_ESCALATE:
                # Telling a person is not doing what was intended.
                self._ledger.transition_intention(
                    intention.id,
                    IntentionStatus.BLOCKED,
                    "escalated to the operator after the action failed",
                    now,
                )
            elif intention.status in (IntentionStatus.ACTIVE, IntentionStatus.BLOCKED):
                self._ledger.transition_intention(
                    intention.id, IntentionStatus.FULFILLED, "plan completed", now
                )
            return
        failed = [s for s in status.steps if s.status is StepStatus.FAILED]
        reason = "; ".join(f"{s.key}: {s.reason}" for s in failed)[:2000] or "a step failed"
        if self._event(body, plan, "plan_failed", (), {"progress": status.progress}):
            self._events.post(body, type_="Warning", reason="Failed", message=reason)
        if intention.status in (IntentionStatus.FULFILLED, IntentionStatus.ABANDONED):
            return
        self.replan(body, plan, intention, reason)

    def _close(self, body: dict[str, Any], phase: PlanStatus, reason: str, why: str) -> bool:
        """A failed plan runs no further: its open steps are cancelled and the Approvals and
        grant requests they wait on withdrawn, so nobody approves work for a dead plan.
        ``phase``: FAILED (it stays failed) or REPLANNING (a new revision follows)."""
        meta = body["metadata"]

        def mark(fresh: dict[str, Any]) -> tuple[dict[str, Any] | None, bool]:
            st = PlanResourceStatus.model_validate(fresh.get("status") or {})
            if st.phase is not PlanStatus.FAILED:
                return None, st.phase is phase
            steps = [
                s
                if s.status in FINAL_STEP
                else s.model_copy(
                    update={"status": StepStatus.CANCELLED, "lease": None, "reason": why}
                )
                for s in st.steps
            ]
            closed = st.model_copy(update={"phase": phase, "steps": steps, "reason": reason})
            return (None, True) if closed == st else (closed.to_k8s(), True)

        _, ok = write_status(self._resources, PLAN, meta["namespace"], meta["name"], mark)
        if not ok:
            return False
        self._approvals.abandon_plan(
            meta["namespace"],
            meta["uid"],
            "the plan that asked was replaced"
            if phase is PlanStatus.REPLANNING
            else "the plan that asked failed",
        )
        return True

    def replan(
        self, body: dict[str, Any], plan: Plan, intention: IntentionRecord, reason: str
    ) -> str | None:
        """A new revision instead of the failed plan, within the replan limit."""
        meta = body["metadata"]
        now = self._clock()
        if plan.origin is PlanOrigin.OPERATOR:
            self._close(body, PlanStatus.FAILED, reason, "cancelled: the plan failed")
            self._ledger.transition_intention(
                intention.id,
                IntentionStatus.ABANDONED,
                f"the operator's plan failed ({reason}); write a new one",
                now,
            )
            return None
        if intention.replans >= MAX_REPLANS:
            self._close(body, PlanStatus.FAILED, reason, "cancelled: the plan failed")
            self._ledger.transition_intention(
                intention.id,
                IntentionStatus.ABANDONED,
                f"replan limit ({MAX_REPLANS}) reached; last failure: {reason}",
                now,
            )
            return None
        if not self._close(body, PlanStatus.REPLANNING, reason, "cancelled for a new revision"):
            return None
        # Idempotent if a crash interrupted an earlier attempt: revision n failing means n
        # replans so far, and its strategy is recorded once.
        failed = list(intention.failed_strategies)
        if len(failed) < plan.revision:
            failed.append(plan.strategy.value)
        intention = self._ledger.update_intention(
            intention.id,
            replans=max(intention.replans, plan.revision),
            failed_strategies=failed,
            at=now,
        )
        self._event(body, plan, "plan_reconsidered", (), {"reason": reason, "trigger": "failed"})
        planned = self._planning.plan(
            intention, revision=plan.revision + 1, supersedes=meta["name"]
        )
        new_name = planned.plan_name

        def supersede(fresh: dict[str, Any]) -> tuple[dict[str, Any] | None, None]:
            st = PlanResourceStatus.model_validate(fresh.get("status") or {})
            phase = PlanStatus.SUPERSEDED if new_name else PlanStatus.FAILED
            why = (
                f"superseded by {new_name}" if new_name else f"no new plan: {planned.result.reason}"
            )
            return st.model_copy(update={"phase": phase, "reason": why}).to_k8s(), None

        write_status(self._resources, PLAN, meta["namespace"], meta["name"], supersede)
        if new_name is None:
            self._ledger.transition_intention(
                intention.id,
                IntentionStatus.ABANDONED,
                f"no possible plan after {reason}: {planned.result.reason}",
                now,
            )
            return None
        self._ledger.update_intention(intention.id, plan=new_name, at=now)
        self._event(
            body,
            plan,
            "plan_replanned",
            (),
            {"from": meta["name"], "to": new_name, "reason": reason},
        )
        self._events.post(
            body, type_="Normal", reason="Replanned", message=f"superseded by {new_name}"
        )
        return new_name


__all__ = ["Executor", "TickResult"]

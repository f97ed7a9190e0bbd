"""The capability service: the only way a mind acts on the world.

Every invocation is authorised by the pure decision order in
``minds.domain.capabilities.authority``, each stage recorded as a ``policy_decision`` event.
What happens next depends on the answer:

- deny: nothing else happens;
- approve: a person is asked (``minds.engine.asking`` raises the ``Approval``, or adopts
  the existing one for this origin) and the caller is told the action is pending;
- allow: a grant that made it so is consumed (one operation, by a conditional write), a
  write-ahead execution row is written, the driver acts, and the outcome is recorded.

Approved actions come back through :meth:`execute_approved`, called by the executor alone,
under its claim on the step, once :func:`minds.domain.approvals.authorises` found the
Approval binding for that very step. It re-checks everything but the need for approval (a
capability locked, denied or forbidden by a commitment since the person approved is not
executed: fail closed) and writes the same write-ahead row key as the step's own invocation,
so no Approval object, re-created or not, makes a step act twice.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace
from datetime import datetime
from typing import Any, Protocol

from pydantic import JsonValue, ValidationError

from minds.domain.base import Model
from minds.domain.capabilities.authority import (
    AuthorityDecision,
    Crossing,
    authorize,
    mind_reference,
    requested_namespace,
)
from minds.domain.capabilities.policy import GrantView
from minds.domain.capabilities.registry import CapabilityRegistry
from minds.domain.capabilities.results import DriverResult
from minds.domain.executions import (
    ExecutionOrigin,
    ExecutionOutcome,
    ExecutionRecord,
    ExecutionStatus,
)
from minds.domain.grants import consumed, view
from minds.domain.ledger import EventRecord, idempotency_key
from minds.domain.resources.grant import CapabilityGrantSpec, CapabilityGrantStatus
from minds.domain.resources.kinds import CAPABILITY_GRANT
from minds.domain.resources.mind import MindSpec, PolicyDecision
from minds.domain.series import Occurrence, observation
from minds.engine import failpoints
from minds.engine.asking import AskingService
from minds.engine.conditional import write_status
from minds.engine.grant_service import unvouched
from minds.engine.invocations import (
    Invocation,
    InvocationOutcome,
    OutcomeKind,
    Preview,
    told_row,
)
from minds.engine.mind_reading import acting_mind
from minds.engine.ports import (
    Clock,
    LedgerPort,
    NotFound,
    ResourcePort,
    Transactional,
)
from minds.engine.promises import MindHistory, Promises
from minds.engine.series import SeriesLedger, note
from minds.engine.telemetry import NO_TELEMETRY, Telemetry

#: How often an invocation re-decides after losing the race for a grant's last operation.
GRANT_RACE_RETRIES = 3
#: Every 409 on a grant means another writer made progress, and a grant has finitely many
#: operations, so contention ends; this bound only guards against a pathological writer.
GRANT_WRITE_ATTEMPTS = 500


class DriverPort(Protocol):
    def supports_dry_run(self, capability_name: str) -> bool: ...

    def invoke(
        self,
        capability_name: str,
        parameters: Model,
        *,
        mind_allowed_hosts: Any = (),
        dry_run: bool = False,
    ) -> DriverResult: ...


#: Records the approval behind an action in the caller's transaction; why not, if it no longer
#: stands (see ``ApprovalService.approve_within``).
Standing = Callable[[], str | None]

#: The rows that tell of a new write-ahead row, computed from it as inserted (its id known).
Told = Callable[[ExecutionRecord], Sequence[EventRecord]]


class ExecutionLedger(LedgerPort, MindHistory, SeriesLedger, Transactional, Protocol):
    def append_events(self, records: Sequence[EventRecord]) -> list[bool]: ...

    def begin_execution(
        self, record: ExecutionRecord, told: Told | None = None
    ) -> tuple[ExecutionRecord, bool]: ...

    def finish_execution(
        self, outcome: ExecutionOutcome, told: Sequence[EventRecord] = ()
    ) -> bool: ...

    def execution(
        self, origin_key: str
    ) -> tuple[ExecutionRecord, ExecutionOutcome | None] | None: ...


class CapabilityService:
    def __init__(
        self,
        *,
        resources: ResourcePort,
        ledger: ExecutionLedger,
        drivers: DriverPort,
        clock: Clock,
        registry: CapabilityRegistry,
        promises: Promises,
        asking: AskingService,
        telemetry: Telemetry = NO_TELEMETRY,
    ) -> None:
        self._resources = resources
        self._ledger = ledger
        self._drivers = drivers
        self._clock = clock
        self._registry = registry
        self._telemetry = telemetry
        self._asking = asking
        #: The promises earlier objects of each Mind's name made: they bind it here, where
        #: every action is authorised, and the cycle and the executor read them from here.
        self.promises = promises

    def _told(self, inv: Invocation, outcome: InvocationOutcome) -> InvocationOutcome:
        self._telemetry.invoked(inv.namespace, inv.origin.mind, inv.capability, outcome.kind.value)
        return outcome

    # -- reading the mind ----------------------------------------------------------------

    def _mind(self, namespace: str, name: str) -> tuple[MindSpec | None, str]:
        return acting_mind(self._resources, namespace, name, self.promises, self._clock())

    def _grants(
        self, namespace: str, mind: str
    ) -> tuple[list[GrantView], dict[str, dict[str, Any]]]:
        views: list[GrantView] = []
        limits: dict[str, dict[str, Any]] = {}
        for body in self._resources.list(CAPABILITY_GRANT, namespace):
            try:
                spec = CapabilityGrantSpec.model_validate(body.get("spec") or {})
                status = CapabilityGrantStatus.model_validate(body.get("status") or {})
            except ValidationError:
                continue  # a grant we cannot read grants nothing
            if spec.mind not in (mind, mind_reference(namespace, mind)):
                continue
            if body["metadata"].get("deletionTimestamp"):
                continue
            if unvouched(self._resources, body, spec) is not None:
                continue  # made by the controller without a person's approval behind it
            name = body["metadata"]["name"]
            views.append(view(namespace, name, spec, status))
            limits[name] = spec.parameter_limits
        return views, limits

    def _crossings(self, inv: Invocation) -> list[Crossing]:
        """Grants held in the namespace the invocation reaches into that name this mind."""
        where = requested_namespace(inv.capability, inv.parameters, self._registry)
        if where is None or where == inv.namespace:
            return []
        views, limits = self._grants(where, mind_reference(inv.namespace, inv.origin.mind))
        return [Crossing(namespace=where, grant=v, limits=limits[v.name]) for v in views]

    def _decide(self, inv: Invocation, spec: MindSpec) -> AuthorityDecision:
        grants, limits = self._grants(inv.namespace, inv.origin.mind)
        return authorize(
            namespace=inv.namespace,
            crossings=self._crossings(inv),
            mind=spec,
            capability=inv.capability,
            parameters=inv.parameters,
            grants=grants,
            grant_limits=limits,
            now=self._clock(),
            require_approval=inv.require_approval,
            check=inv.check,
            registry=self._registry,
        )

    # -- the ledger ----------------------------------------------------------------------

    def _decision_row(self, inv: Invocation, decision: AuthorityDecision, key: str) -> EventRecord:
        payload: dict[str, JsonValue] = {
            "capability": inv.capability,
            "target": decision.target,
            "decision": decision.decision.value,
            "grant": decision.grant,
            "trail": [s.to_k8s() for s in decision.trail],
        }
        return told_row(inv, "policy_decision", key, payload, self._clock())

    def _record_decision(self, inv: Invocation, decision: AuthorityDecision, key: str) -> None:
        """A denial is a row of its own; a decision that lets the action run goes in the
        write-ahead row's transaction, one that asks a person with the request."""
        self._ledger.append_event(self._decision_row(inv, decision, key))

    # -- invoke --------------------------------------------------------------------------

    def invoke(self, inv: Invocation) -> InvocationOutcome:
        return self._told(inv, self._invoke(inv))

    def _invoke(self, inv: Invocation) -> InvocationOutcome:
        spec, why_not = self._mind(inv.namespace, inv.origin.mind)
        if spec is None:
            return InvocationOutcome(OutcomeKind.DENIED, why_not)
        key = inv.origin.execution().key()
        for _ in range(GRANT_RACE_RETRIES + 1):
            decision = self._decide(inv, spec)
            if decision.decision is PolicyDecision.DENY:
                self._record_decision(inv, decision, key)
                return InvocationOutcome(OutcomeKind.DENIED, decision.reason, decision=decision)
            if decision.decision is PolicyDecision.APPROVE:
                decided = self._decision_row(inv, decision, key)
                return self._asking.ask(inv, decision, decided, spec.approvers)
            held_in = decision.grant_namespace or inv.namespace
            if decision.grant is None or self._consume(held_in, decision.grant):
                decided = self._decision_row(inv, decision, key)
                return self._execute(inv, decision, inv.origin.execution(), spec, decided)
            # Lost the race for the grant's last operation: decide again without it.
        return InvocationOutcome(
            OutcomeKind.DENIED, "every covering grant was used up concurrently"
        )

    def preview(self, inv: Invocation, *, dry_run: bool = True) -> Preview:
        """The decision an invoke would get, with no side effects: nothing is written to the
        ledger or the cluster except a server-side dry run of a writing capability (unless
        ``dry_run`` is False: the budget asks only for the decision)."""
        spec, why_not = self._mind(inv.namespace, inv.origin.mind)
        if spec is None:
            return Preview(
                PolicyDecision.DENY, [{"stage": "mind", "decision": "deny", "reason": why_not}]
            )
        decision = self._decide(inv, spec)
        trail = [s.to_k8s() for s in decision.trail]
        dry: DriverResult | None = None
        cap = self._registry.get(inv.capability)
        if (
            dry_run
            and cap is not None
            and not cap.read_only
            and decision.decision is not PolicyDecision.DENY
            and self._drivers.supports_dry_run(inv.capability)
        ):
            dry = self._drivers.invoke(
                inv.capability,
                cap.parse(inv.parameters),
                mind_allowed_hosts=spec.browser.allowed_hosts,
                dry_run=True,
            )
        return Preview(decision.decision, trail, dry)

    def _consume(self, namespace: str, grant: str) -> bool:
        now = self._clock()

        def compute(body: dict[str, Any]) -> tuple[dict[str, Any] | None, bool]:
            spec = CapabilityGrantSpec.model_validate(body.get("spec") or {})
            status = CapabilityGrantStatus.model_validate(body.get("status") or {})
            after = consumed(spec, status, now)
            return (after.to_k8s(), True) if after is not None else (None, False)

        try:
            _, ok = write_status(
                self._resources,
                CAPABILITY_GRANT,
                namespace,
                grant,
                compute,
                max_attempts=GRANT_WRITE_ATTEMPTS,
            )
        except NotFound:
            return False
        return ok

    def _execute(
        self,
        inv: Invocation,
        decision: AuthorityDecision,
        origin: ExecutionOrigin,
        spec: MindSpec,
        decided: EventRecord | None,
        approval: str | None = None,
        standing: Standing | None = None,
    ) -> InvocationOutcome:
        """Act once under ``origin``'s key. A writing capability: three rows and the
        write-ahead row go in one transaction before the action (``decided``, the decision that
        allowed it, when not recorded already, and ``tool_authorised``); the outcome and its
        row in another. A read-only one: all of them in one transaction after the read, or, for
        a routine look found the same as the last, none (its series grows)."""
        cap = self._registry[inv.capability]
        authority: dict[str, JsonValue] = {
            "decision": decision.decision.value,
            "grant": decision.grant,
            "approval": approval,
            "trail": [s.to_k8s() for s in decision.trail],
        }
        record = ExecutionRecord(
            origin_key=origin.key(),
            mind=inv.origin.mind,
            namespace=inv.namespace,
            capability=inv.capability,
            target=decision.target,
            parameters=decision.parameters or {},
            origin=origin,
            evidence=inv.evidence,
            authority=authority,
            started_at=self._clock(),
        )

        def base(row: ExecutionRecord) -> dict[str, JsonValue]:
            return {
                "capability": inv.capability,
                "target": decision.target,
                "execution": row.id,
                "approval": approval,
                "grant": decision.grant,
            }

        def told(row: ExecutionRecord) -> list[EventRecord]:
            authorised = told_row(inv, "tool_authorised", origin.key(), base(row), self._clock())
            return [*([decided] if decided is not None else []), authorised]

        def outcome(row: ExecutionRecord, result: DriverResult) -> ExecutionOutcome:
            return ExecutionOutcome(
                execution_id=row.id,
                status=ExecutionStatus.EXECUTED if result.ok else ExecutionStatus.FAILED,
                summary=result.summary[:4096],
                fields=dict(result.fields),
                output=result.output,
                error=(result.error or None) and result.error[:4096],
                finished_at=self._clock(),
            )

        def finished(row: ExecutionRecord, result: DriverResult) -> list[EventRecord]:
            type_ = "tool_executed" if result.ok else "tool_failed"
            payload = {**base(row), "summary": result.summary, "error": result.error}
            return [told_row(inv, type_, origin.key(), payload, self._clock())]

        def act() -> DriverResult:
            try:
                return self._drivers.invoke(
                    inv.capability,
                    cap.parse(inv.parameters),
                    mind_allowed_hosts=spec.browser.allowed_hosts,
                )
            except Exception as exc:  # a driver bug must still leave an outcome in the ledger
                return DriverResult.failure(f"driver error: {type(exc).__name__}: {exc}")

        def moved(why: str) -> InvocationOutcome:
            return InvocationOutcome(
                OutcomeKind.DENIED, f"not executed: {why}", decision=decision, approval_moved=True
            )

        series: str | None = None
        if cap.read_only:
            if standing is not None:
                with self._ledger.transaction():
                    why = standing()
                if why is not None:
                    return moved(why)
            # A read changes nothing, so nothing needs to be written before it: it is recorded
            # with its outcome in one transaction. A crash in between loses only the record of
            # a look that will be taken again; a second controller's record of the same look
            # (the same origin key) wins, and this one reports it. The events go last, in one
            # statement: appending to the mind's event chain holds its lock until the commit.
            # A routine look that finds what the last look found writes none of it: its
            # series grows in place (``minds.engine.series``).
            result = act()
            failpoints.hit("read-unrecorded", f"{inv.namespace}/{inv.origin.mind}")
            written: list[tuple[ExecutionRecord, bool]] = []

            def full() -> bool:
                row, inserted = self._ledger.begin_execution(record)
                if inserted:
                    rows = [*told(row), *finished(row, result)]
                    self._ledger.finish_execution(outcome(row, result), rows)
                written[:] = [(row, inserted)]
                return inserted

            routine = None
            if standing is None:
                routine = self._routine(inv, decision, result, record.started_at)
            if routine is None:
                with self._ledger.transaction():
                    full()
            elif note(self._ledger, routine, full):
                kind = OutcomeKind.EXECUTED if result.ok else OutcomeKind.FAILED
                return InvocationOutcome(
                    kind,
                    result.summary,
                    result=result,
                    decision=decision,
                    series=routine.subject,
                    routine=True,
                )
            [(row, inserted)] = written
            if not inserted:
                return self._adopt(row)
            series = routine.subject if routine is not None else None
        else:
            failpoints.hit("before-write-ahead", inv.capability)
            # The approval the executor saw first is recorded with the row of the action it
            # allows, or, if it no longer stands, neither is.
            with self._ledger.transaction():
                why = standing() if standing is not None else None
                if why is None:
                    row, inserted = self._ledger.begin_execution(record, told)
            if why is not None:
                return moved(why)
            if not inserted:
                return self._adopt(row)
            failpoints.hit("after-write-ahead", inv.capability)
            result = act()
            self._ledger.finish_execution(outcome(row, result), finished(row, result))
        assert row.id is not None
        kind = OutcomeKind.EXECUTED if result.ok else OutcomeKind.FAILED
        return InvocationOutcome(
            kind,
            result.summary,
            result=result,
            execution_id=row.id,
            decision=decision,
            series=series,
        )

    def _routine(
        self, inv: Invocation, decision: AuthorityDecision, result: DriverResult, at: datetime
    ) -> Occurrence | None:
        """The look as its series sees it, if it may be routine (see ``Routine``)."""
        if inv.routine is None:
            return None
        conclusion, changes = inv.routine.conclude(result)
        return observation(
            namespace=inv.namespace,
            mind=inv.origin.mind,
            capability=inv.capability,
            scope=inv.routine.scope,
            decision=decision,
            result=result,
            facts=inv.routine.facts,
            conclusion=conclusion,
            changes=changes,
            at=at,
            record_key=inv.origin.execution().key(),
        )

    def _adopt(self, row: ExecutionRecord) -> InvocationOutcome:
        """The origin already has a write-ahead row: report what it says, never act twice."""
        found = self._ledger.execution(row.origin_key)
        outcome = found[1] if found else None
        if outcome is None:
            return InvocationOutcome(
                OutcomeKind.FAILED,
                "outcome unknown: a write-ahead row exists without an outcome",
                execution_id=row.id,
            )
        result = DriverResult(
            ok=outcome.status is ExecutionStatus.EXECUTED,
            summary=outcome.summary,
            output=outcome.output,
            error=outcome.error,
        )
        kind = OutcomeKind.EXECUTED if result.ok else OutcomeKind.FAILED
        return InvocationOutcome(kind, outcome.summary, result=result, execution_id=row.id)

    def execute_approved(
        self,
        inv: Invocation,
        approval: str,
        approval_uid: str,
        decided_by: str | None,
        *,
        standing: Standing | None = None,
    ) -> InvocationOutcome:
        """Carry out a step a person approved. Only the executor calls this, under its claim
        on the step, with the step's own invocation (what the Plan says, which the Approval
        was checked to match): the write-ahead row has the step's origin key, so the action
        runs at most once whichever Approval object authorised it. Everything but the need
        for approval is checked again. ``standing``: called in the write-ahead row's transaction,
        before it, to record the approval there (the executor saw it first); it says why not
        when the approval no longer stands, and then nothing is written and nothing runs."""
        return self._told(
            inv, self._execute_approved(inv, approval, approval_uid, decided_by, standing)
        )

    def _execute_approved(
        self,
        inv: Invocation,
        approval: str,
        approval_uid: str,
        decided_by: str | None,
        standing: Standing | None,
    ) -> InvocationOutcome:
        mind_spec, why_not = self._mind(inv.namespace, inv.origin.mind)
        if mind_spec is None:
            return InvocationOutcome(OutcomeKind.DENIED, f"not executed: {why_not}")
        decision = authorize(
            namespace=inv.namespace,
            crossings=self._crossings(inv),
            mind=mind_spec,
            capability=inv.capability,
            parameters=inv.parameters,
            grants=[],
            grant_limits={},
            now=self._clock(),
            registry=self._registry,
        )
        key = idempotency_key("approved", approval_uid)
        if decision.decision is PolicyDecision.DENY:
            self._record_decision(inv, decision, key)
            return InvocationOutcome(
                OutcomeKind.DENIED, f"not executed: {decision.reason}", decision=decision
            )
        decided = self._decision_row(inv, decision, key)
        execution = inv.origin.execution().model_copy(
            update={"approval": approval, "approval_uid": approval_uid}
        )
        done = self._ledger.execution(execution.key())
        if done is not None:
            return self._adopt(done[0])  # acted already: spend nothing, repeat nothing
        # Reaching into another namespace spends the grant held there, approved or not.
        crossing = decision.grant_namespace, decision.grant
        if crossing[0] and crossing[1] and not self._consume(crossing[0], crossing[1]):
            self._ledger.append_event(decided)
            return InvocationOutcome(
                OutcomeKind.DENIED, "not executed: the grant for the other namespace is used up"
            )
        evidence: dict[str, JsonValue] = {**inv.evidence, "decidedBy": decided_by}
        return self._execute(
            replace(inv, evidence=evidence),
            decision,
            execution,
            mind_spec,
            decided,
            approval=approval,
            standing=standing,
        )

"""The mind's cycle: observe, want, resolve, commit, intend, plan; then say so in status.

One cycle of one mind runs at a time, across controllers (a Postgres advisory lock). The rules
are in ``minds.domain.volition``; this module reads what they need, hands it to them, and
records every change and every choice. Observation is read-only and never asks a person (a
check that would need approval is "not observable"). An inactive mind runs no cycle that acts:
it is not even observed.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from contextlib import suppress
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Protocol

from pydantic import JsonValue, ValidationError

from minds.domain.beliefs import PredictionStatus
from minds.domain.capabilities.registry import CapabilityRegistry
from minds.domain.capabilities.results import DriverResult
from minds.domain.execution.machine import OPEN_PLAN
from minds.domain.intentions import (
    LIVE_STATUSES,
    IntentionKind,
    IntentionRecord,
    IntentionStatus,
    intention_id,
)
from minds.domain.ledger import EventRecord, SubjectRef, idempotency_key
from minds.domain.mind_rules import health_conditions
from minds.domain.planning.model import Plan
from minds.domain.resources.approval import Explanation
from minds.domain.resources.common import set_condition
from minds.domain.resources.kinds import APPROVAL, MIND, PLAN
from minds.domain.resources.mind import MindSpec, MindStatus
from minds.domain.series import SeriesKind, cycle
from minds.domain.volition.assumptions import conclusion
from minds.domain.volition.conflicts import Conflict
from minds.domain.volition.coverage import OpenPlan, open_plan
from minds.domain.volition.decisions import VolitionDecision
from minds.domain.volition.deliberation import Deliberation, Held, deliberate
from minds.domain.volition.findings import RECORDED, TAKEN_IN, take_in
from minds.domain.volition.findings import WINDOW as FINDINGS_WINDOW
from minds.domain.volition.formation import (
    DEFAULT_CAPACITY,
    NotFormed,
    abandon_without_plan,
    form,
)
from minds.domain.volition.promises import kept
from minds.domain.volition.reconsideration import (
    ReconsiderationContext,
    Trigger,
    reconsider,
)
from minds.domain.volition.settlement import remembered_failures, serving
from minds.domain.volition.wants import (
    STATUS,
    Observation,
    Valence,
    Want,
    WantStatus,
    decayed_strength,
    goal_met,
)
from minds.engine import failpoints
from minds.engine.approval_service import ApprovalService
from minds.engine.attention_reading import attention
from minds.engine.belief_weighing import weigh
from minds.engine.capability_service import CapabilityService
from minds.engine.conditional import write_status
from minds.engine.correction_service import CorrectionService
from minds.engine.decisions import record_decisions
from minds.engine.invocations import Invocation, Origin, OutcomeKind, Routine
from minds.engine.mind_health import vitals_of
from minds.engine.planning_service import PlanningService
from minds.engine.ports import (
    Beliefs,
    Clock,
    Decisions,
    History,
    Intentions,
    Journal,
    NotFound,
    ResourcePort,
    Transactional,
    VolitionStore,
)
from minds.engine.promises import Earlier
from minds.engine.resuming import plan_resumed
from minds.engine.series import SeriesLedger, close_untouched, note

log = logging.getLogger(__name__)

#: Intentions a change in the world can still make moot.
RECONSIDERED = frozenset({IntentionStatus.ACTIVE, IntentionStatus.BLOCKED})

#: Wants a dream may take up: those not acted on for want of strength or room, never those a
#: commitment, policy or duplication ruled out.
DREAMABLE = frozenset({NotFormed.BELOW_THRESHOLD, NotFormed.CAPACITY, NotFormed.DEFERRED})

OPEN_PLAN_PHASES = frozenset(phase.value for phase in OPEN_PLAN)


@dataclass
class Observed:
    """A cycle's looks at its goals that answered: ``routine`` those that extended a series
    (found the same as the last, belief conclusion included)."""

    all: list[Observation] = field(default_factory=list)
    routine: list[Observation] = field(default_factory=list)

    @property
    def fresh(self) -> list[Observation]:
        """The looks recorded in full."""
        return [o for o in self.all if not any(o is r for r in self.routine)]


@dataclass(frozen=True)
class CycleReport:
    observed: int
    wants: int
    formed: int
    decisions: int
    summary: str


class CycleLedger(
    Journal,
    History,
    Intentions,
    Beliefs,
    Decisions,
    VolitionStore,
    SeriesLedger,
    Transactional,
    Protocol,
):
    """Every role of the ledger a mind's cycle reads or writes."""


class MindCycle:
    def __init__(
        self,
        *,
        resources: ResourcePort,
        ledger: CycleLedger,
        capabilities: CapabilityService,
        planning: PlanningService,
        approvals: ApprovalService,
        clock: Clock,
        registry: CapabilityRegistry,
        review_assumptions: Callable[[str, str], int] | None = None,
    ) -> None:
        self._approvals = approvals
        self._review_assumptions = review_assumptions
        self._resources = resources
        self._ledger = ledger
        self._capabilities = capabilities
        self._planning = planning
        self._clock = clock
        self._registry = registry
        self._corrections = CorrectionService(ledger, resources)

    def run(self, namespace: str, name: str) -> CycleReport | None:
        """One cycle; None when another controller is running this mind's cycle right now."""
        with self._ledger.cycle_lock(namespace, name) as mine:
            if not mine:
                return None
            return self._run(namespace, name)

    # -- recording -----------------------------------------------------------------------

    def _record(self, decisions: tuple[VolitionDecision, ...] | list[VolitionDecision]) -> int:
        return record_decisions(self._ledger, decisions)

    def _store_want(self, want: Want) -> None:
        self._ledger.upsert_want(
            namespace=want.namespace,
            mind=want.mind,
            want_id=want.id,
            subject=want.subject,
            status=want.status.value,
            strength=want.strength,
            data=want.to_k8s(),
            at=want.updated_at,
        )

    # -- observing -----------------------------------------------------------------------

    def _observe(self, namespace: str, name: str, uid: str, spec: MindSpec) -> Observed:
        """Look at each goal's subject. A look that finds what the last look of the goal found
        extends its series (``minds.domain.series``); the series of looks not taken, or not
        answered the same way, are closed."""
        now = self._clock()
        held = self._ledger.beliefs(namespace, name)
        observed = Observed()
        touched: set[str] = set()
        for goal in spec.goals:
            target_ns = goal.subject.namespace or namespace
            subject = f"{target_ns}/{goal.subject.name}"

            def conclude(result: DriverResult, subject: str = subject) -> tuple[JsonValue, bool]:
                seen = Observation(
                    subject=subject, capability=STATUS, fields=dict(result.fields), at=now
                )
                found = conclusion(seen, held) if result.ok else None
                return (None, False) if found is None else (found.facts, found.changes)

            outcome = self._capabilities.invoke(
                Invocation(
                    namespace=namespace,
                    capability=STATUS,
                    parameters={
                        "namespace": target_ns,
                        "kind": goal.subject.kind,
                        "name": goal.subject.name,
                    },
                    origin=Origin(mind=name, cycle=f"{uid}:{goal.name}:{now.isoformat()}"),
                    explanation=Explanation(
                        what=f"observe {goal.name}", why=goal.description or f"goal {goal.name}"
                    ),
                    evidence={"goal": goal.name},
                    check=True,
                    routine=Routine(
                        scope=f"goal {goal.name}",
                        facts={"mind": uid, "goal": goal.name},
                        conclude=conclude,
                    ),
                )
            )
            if outcome.series is not None:
                touched.add(outcome.series)
            if outcome.kind is OutcomeKind.EXECUTED and outcome.result is not None:
                seen = Observation(
                    subject=subject,
                    capability=STATUS,
                    fields=dict(outcome.result.fields),
                    at=now,
                )
                observed.all.append(seen)
                if outcome.routine:
                    observed.routine.append(seen)
        close_untouched(self._ledger, namespace, name, SeriesKind.OBSERVATION, touched, now)
        return observed

    # -- the cycle -----------------------------------------------------------------------

    def _run(self, namespace: str, name: str) -> CycleReport:
        body = self._resources.get(MIND, namespace, name)
        try:
            spec = MindSpec.model_validate(body.get("spec") or {})
        except ValidationError:
            return self._summarise(namespace, name, CycleReport(0, 0, 0, 0, "spec unreadable"))
        if not spec.active:
            # Its routine stops: a series is not carried over a spell of looking at nothing.
            for kind in SeriesKind:
                close_untouched(self._ledger, namespace, name, kind, (), self._clock())
            return self._summarise(
                namespace, name, CycleReport(0, 0, 0, 0, "inactive: observed nothing, did nothing")
            )
        # What earlier Mind objects of this name promised binds this one too.
        earlier = self._capabilities.promises.of(body)
        spec = kept(spec, earlier.promises, self._clock())
        uid = body["metadata"]["uid"]
        observed = self._observe(namespace, name, uid, spec)
        observations = observed.all
        now = self._clock()
        findings = self._take_in_findings(namespace, name, uid, now)
        # First what people said: an intention a person abandoned, or whose plan a person
        # cancelled, has its wants suppressed in that person's name before settlement (below)
        # finds the intention ended and would suppress them in nobody's.
        decisions = self._corrections.apply(
            body, spec, now, record=self._record, store_want=self._store_want,
            withdraw=self._withdraw_pending,
        )  # fmt: skip
        # A resumed intention with no plan that can run (a fork's inheritance) is planned.
        plan_resumed(self._ledger, self._resources, self._planning, namespace, name, now)

        # Read, decide (pure), then apply in one transaction: a crash in between leaves the
        # cycle undone, never half done, and the next cycle decides it again from the ledger.
        deliberation = deliberate(
            spec,
            self._held(namespace, name, earlier),
            [*observations, *findings],
            now,
            namespace=namespace,
            mind=name,
            registry=self._registry,
        )
        decisions += self._apply(namespace, name, deliberation, now)
        wants = dict(deliberation.everything)

        decisions += self._reconsider_met_goals(namespace, name, observations, wants, now)
        # After the world's change is answered (a recovered workload fulfils its intention),
        # a plan whose assumption the moved beliefs no longer carry is reconsidered. Beliefs
        # also move between cycles (a prediction the executor refuted): review every cycle.
        weigh(self._ledger, namespace, name, [*observed.fresh, *findings], routine=observed.routine)
        if self._review_assumptions:
            self._review_assumptions(namespace, name)

        formed = 0
        dreamt = 0
        intentions: list[IntentionRecord] = self._ledger.intentions(namespace=namespace, mind=name)
        mind_view = self._planning.mind_view(namespace, name)
        grants = list(mind_view.grants) if mind_view else []
        open_plans = self._open_plans(namespace)
        approach = sorted(
            (w for w in deliberation.active if w.valence is Valence.APPROACH),
            key=lambda w: (-decayed_strength(w, now), w.id),
        )
        for want in approach:
            formation = form(
                want,
                spec,
                intentions,
                DEFAULT_CAPACITY,
                now,
                conflicts=deliberation.conflicts,
                grants=grants,
                registry=self._registry,
                open_plans=open_plans,
                failed=remembered_failures(wants.values(), want.target or want.subject, now),
            )
            if formation.intention is None:
                decisions += self._record([formation.decision])
                if spec.dreams and formation.reason in DREAMABLE:
                    dreamt += self._dream(namespace, name, want, now)
                continue
            # The choice, the intention and the want's link to it are one write: linked
            # before planning, so whatever becomes of the intention is settled. The Plan is a
            # Kubernetes object and cannot join the transaction; an intention left without
            # one is planned by a later cycle (``plan_resumed``).
            with self._ledger.transaction():
                # The intention's row before the choice's: the order the executor's writes take
                # the two chains' locks in (the other would deadlock with them).
                intention, created = self._ledger.form_intention(formation.intention)
                decisions += self._record([formation.decision])
                if created:
                    want = serving(want, intention.id)
                    self._store_want(want)
            if not created:
                continue
            wants[want.id] = want
            intentions.append(intention)
            formed += 1
            planned = self._planning.plan(intention)
            if planned.plan_name is None:
                abandoned = abandon_without_plan(intention, want, planned.result.reason, now)
                with self._ledger.transaction():
                    self._ledger.transition_intention(
                        intention.id, abandoned.intention.status, abandoned.intention.reason, now
                    )
                    self._store_want(abandoned.want)
                    decisions += self._record(list(abandoned.decisions))
            else:
                self._ledger.update_intention(intention.id, plan=planned.plan_name, at=now)

        open_wants = sum(1 for w in wants.values() if w.status is WantStatus.ACTIVE)
        summary = (
            f"observed {len(observations)} of {len(spec.goals)} goals; {open_wants} open wants; "
            f"formed {formed} intentions; {decisions} decisions recorded"
            + (f"; dreamt {dreamt} plans" if dreamt else "")
        )
        did: dict[str, JsonValue] = {
            "observed": len(observations),
            "findingsTakenIn": len(findings),
            "formed": formed,
            "decisions": decisions,
            "refutedPredictions": sum(
                1
                for p in self._ledger.predictions(namespace, name)
                if p.status is PredictionStatus.REFUTED
            ),
        }
        completed = EventRecord(
            mind=name,
            namespace=namespace,
            type="cycle_completed",
            subject=SubjectRef(kind=MIND.kind, name=name, uid=uid),
            payload=did,
            occurred_at=now,
            idempotency_key=idempotency_key("cycle", uid, now.isoformat()),
        )
        # A cycle that decided nothing, as the last did, extends the cycles' series.
        routine = cycle(
            namespace=namespace,
            mind=name,
            uid=uid,
            did=did,
            at=now,
            key=completed.idempotency_key,
        )
        note(self._ledger, routine, lambda: self._ledger.append_event(completed))
        return self._summarise(
            namespace, name, CycleReport(len(observations), open_wants, formed, decisions, summary)
        )

    def _take_in_findings(
        self, namespace: str, name: str, uid: str, now: datetime
    ) -> list[Observation]:
        """What completed investigations found comes back as observations, once: only those
        whose marker this cycle wrote (see `findings`)."""
        since = now - FINDINGS_WINDOW
        recorded = self._ledger.events(mind=name, namespace=namespace, type=RECORDED, since=since)
        asked = {str(row.payload.get("intention") or "") for row in recorded}
        intentions = {i: held for i in asked if (held := self._ledger.intention(i)) is not None}
        found = take_in(
            recorded,
            self._ledger.events(mind=name, namespace=namespace, type=TAKEN_IN, since=since),
            intentions,
            now,
            mind=SubjectRef(kind=MIND.kind, name=name, uid=uid),
        )
        fresh = self._ledger.append_events(list(found.markers)) if found.markers else []
        return [o for o, new in zip(found.observations, fresh, strict=True) if new]

    def _held(self, namespace: str, name: str, earlier: Earlier) -> Held:
        """What the deliberation starts from, as the ledger has it now."""
        return Held(
            intentions=self._ledger.intentions(namespace=namespace, mind=name),
            wants=[Want.model_validate(d) for d in self._ledger.wants(namespace, name)],
            commitments=self._ledger.commitment_states(namespace, name),
            commitments_at=self._ledger.commitment_updated_at(namespace, name),
            conflicts=[Conflict.model_validate(c) for c in self._ledger.conflicts(namespace, name)],
            predictions=self._ledger.predictions(namespace, name),
            beliefs=self._ledger.beliefs(namespace, name),
            promised={p.name for p in earlier.promises},
            earlier_ended_at=earlier.ended_at,
        )

    def _apply(self, namespace: str, name: str, done: Deliberation, now: datetime) -> int:
        """Write the deliberation whole; how many decisions were new. What a lapsed intention
        still waits a person for is withdrawn after, since an Approval is no ledger row."""
        with self._ledger.transaction():
            for lapsed in done.lapsed:
                after = lapsed.intention
                self._ledger.transition_intention(after.id, after.status, after.reason, now)
            for c in done.commitments:
                self._ledger.set_commitment_state(
                    namespace, name, c.name, c.state.value, c.reason, now
                )
            for want in done.wants:
                self._store_want(want)
            # Half of the cycle is written here: a crash must leave none of it.
            failpoints.hit("cycle-applying", f"{namespace}/{name}")
            for conflict in done.conflicts:
                self._ledger.save_conflict(
                    namespace=namespace,
                    mind=name,
                    conflict_id=conflict.id,
                    open_=conflict.open,
                    data=conflict.to_k8s(),
                    at=now,
                )
            written = self._record(done.decisions)
        for lapsed in done.lapsed:
            if lapsed.intention.plan:
                reason = lapsed.intention.reason or "lapsed"
                self._withdraw_pending(namespace, lapsed.intention.plan, reason)
        return written

    def _open_plans(self, namespace: str) -> list[OpenPlan]:
        """The open Plans of the namespace, whoever wrote them, as formation sees them."""
        found = []
        for body in self._resources.list(PLAN, namespace):
            if (body.get("status") or {}).get("phase") not in OPEN_PLAN_PHASES:
                continue
            try:
                plan = Plan.model_validate(body.get("spec") or {})
            except ValidationError:
                continue  # admission refuses it; it will not run
            found.append(open_plan(body["metadata"]["name"], plan, self._registry))
        return found

    def _reconsider_met_goals(
        self,
        namespace: str,
        name: str,
        observations: list[Observation],
        wants: dict[str, Want],
        now: datetime,
    ) -> int:
        """The world changed: a workload an open intention wants to act on is running again.
        The intention is reconsidered (fulfilled), and whatever it still waits a person for
        is withdrawn: nobody should approve a restart of a workload that recovered."""
        met = {o.subject for o in observations if goal_met(o) is True}
        if not met:
            return 0
        written = 0
        for intention in self._ledger.intentions(namespace=namespace, mind=name):
            if (
                intention.status not in RECONSIDERED
                or intention.kind is not IntentionKind.ACTION
                or intention.subject not in met
                or intention.parent_id is not None
            ):
                continue
            served = tuple(
                w
                for w in wants.values()
                if w.target == intention.subject and w.status is WantStatus.ACTIVE
            )
            verdict = reconsider(
                intention,
                Trigger.WORLD_CHANGE,
                ReconsiderationContext(now=now, wants=served, goal_met=True),
            )
            written += self._record(list(verdict.decisions))
            if verdict.status is None:
                continue
            self._ledger.transition_intention(intention.id, verdict.status, verdict.reason, now)
            for want in verdict.wants:
                self._store_want(want)
            if intention.plan:
                self._withdraw_pending(namespace, intention.plan, verdict.reason)
        return written

    def _withdraw_pending(self, namespace: str, plan: str, reason: str) -> None:
        for approval in self._resources.list(APPROVAL, namespace):
            origin = (approval.get("spec") or {}).get("origin") or {}
            # Whether it is still open is the ledger's to say (withdraw checks), not status's.
            if origin.get("plan") == plan:
                with suppress(NotFound):
                    self._approvals.withdraw(namespace, approval["metadata"]["name"], reason[:1000])

    def _dream(self, namespace: str, name: str, want: Want, now: datetime) -> int:
        """Imagine a plan for a want that was not acted on. The plan is written with origin
        ``dream``: admission keeps it a draft and the executor never runs it. Its intention is
        a record of the dream, suspended from the start."""
        record = IntentionRecord(
            id=intention_id("dream", namespace, name, want.id),
            namespace=namespace,
            mind=name,
            objective=f"(dream) {want.summary}"[:500],
            kind=IntentionKind.ACTION if want.means else IntentionKind.INVESTIGATION,
            subject=want.target,
            means_capability=want.means.capability if want.means else None,
            means_parameters=dict(want.means.parameters) if want.means else None,
            created_at=now,
            updated_at=now,
        )
        intention, created = self._ledger.form_intention(record)
        if not created:
            return 0
        self._ledger.transition_intention(
            intention.id, IntentionStatus.SUSPENDED, "a dream: imagined, never acted on", now
        )
        return 1 if self._planning.plan(intention, dream=True).plan_name else 0

    def _summarise(self, namespace: str, name: str, report: CycleReport) -> CycleReport:
        """The Mind's status: what is open now, and what the last cycle did."""
        now = self._clock()
        wants = sum(1 for d in self._ledger.wants(namespace, name) if d.get("status") == "active")
        intentions = sum(
            1
            for i in self._ledger.intentions(namespace=namespace, mind=name)
            if i.status in LIVE_STATUSES
        )
        plans = sum(
            1
            for p in self._resources.list(PLAN, namespace)
            if (p.get("spec") or {}).get("mind") == name
            and (p.get("status") or {}).get("phase") in OPEN_PLAN_PHASES
        )
        approvals = sum(
            1
            for a in self._resources.list(APPROVAL, namespace)
            if (a.get("spec") or {}).get("mind") == name
            and (a.get("status") or {}).get("phase", "Pending") == "Pending"
        )

        needs = attention(self._ledger, self._resources, namespace, name, now)

        def compute(current: dict[str, Any]) -> tuple[dict[str, Any] | None, None]:
            status = MindStatus.model_validate(current.get("status") or {})
            generation = int(current["metadata"].get("generation", 1))
            # A cycle that completed is the best news of the Mind's health (the ledger answered
            # all through it): Ready rides in the cycle's own write, never one of its own.
            conditions = health_conditions(
                set_condition(status.conditions, needs),
                vitals_of(current, True, now),
                generation,
                now,
            )
            after = status.model_copy(
                update={
                    "open_wants": wants,
                    "open_intentions": intentions,
                    "open_plans": plans,
                    "pending_approvals": approvals,
                    "conditions": conditions,
                    "last_cycle_at": now,
                    "last_cycle": report.summary[:1024],
                }
            )
            return after.to_k8s(), None

        with suppress(NotFound):  # deleted meanwhile: nothing to summarise
            write_status(self._resources, MIND, namespace, name, compute)
        return report

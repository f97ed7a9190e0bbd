"""The mind over simulated days: its own cycle and executor, a fake clock and a scripted world.

Nothing here re-implements the mind. Each interval the controller's real pieces run over the
in-memory fakes of our ports (``tests/fakes``, kept honest by the port contract suite):
``MindCycle.run`` (observe, correct, lapse, settle, commit, want, reconsider, form, plan), then,
until the next interval, what the controller does between cycles: ``PlanService.admit`` for
every Plan, ``Executor.tick`` at each wake-up a plan asks for, ``ApprovalService.reconcile``
for every Approval (its expiry included). A change to the cycle's order or wiring is therefore
a change to what the simulated days do.

What is scripted is only what is outside the controller:
- the world: one workload, broken during given spells; ``service.status`` says so; a restart
  heals the spell it falls in, or not;
- people: every Approval is answered (approved, denied) some time after it is asked, or left
  to expire; a person may cancel each of the mind's plans some time after it appears;
- an operator's Plan on the workload may be open during a window: it waits for the window's
  length, then restarts the workload itself.

It counts what happened, per want, per commitment and per workload, from the ledger and the
world (never from the simulator's own guesses).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from minds.domain.base import Model
from minds.domain.capabilities.registry import REGISTRY
from minds.domain.capabilities.results import DriverResult
from minds.domain.intentions import IntentionKind, IntentionRecord
from minds.domain.planning.model import PlanOrigin, Strategy
from minds.domain.resources.kinds import APPROVAL, MIND, PLAN
from minds.domain.resources.mind import MindSpec
from minds.domain.volition.commitments import CommitmentState
from minds.domain.volition.wants import Want
from minds.engine.assembly import EnginePorts, assemble
from minds.engine.cycle import OPEN_PLAN_PHASES
from tests.fakes.clock import FakeClock
from tests.fakes.ledger import FakeLedger
from tests.fakes.resources import FakeEvents, FakeResources
from tests.unit.volition.builders import ATLAS, NS
from tests.unit.volition.builders import MIND as NAME

WORKLOAD = {"namespace": NS, "kind": "Deployment", "name": "atlas-worker"}
OPERATOR_PLAN = "by-hand"
PERSON = "alice"
#: Passes through one interval of the controller at most (a plan that never sleeps fails).
PASSES = 200


@dataclass(frozen=True)
class Spell:
    """The workload is broken from `start` for `length` (unless a restart heals it)."""

    start: datetime
    length: timedelta

    def covers(self, at: datetime) -> bool:
        return self.start <= at < self.start + self.length


@dataclass(frozen=True)
class People:
    """What people do. ``decision``: how each Approval is answered ("Approved", "Denied"),
    or None: nobody answers and it expires. ``cancel_after``: a person cancels each of the
    mind's plans that long after it appears (None: nobody cancels)."""

    decision: str | None = "Approved"
    answer_after: timedelta = timedelta(minutes=5)
    cancel_after: timedelta | None = None


@dataclass
class Workload:
    """The world as the drivers see it: ``service.status`` tells the state, ``service.restart``
    heals the spell it falls in when restarts heal. Other capabilities read nothing of note."""

    clock: FakeClock
    spells: tuple[Spell, ...]
    restart_heals: bool
    #: When a restart healed each spell it healed.
    healed: dict[int, datetime] = field(default_factory=dict)
    #: Each restart the world saw: when, and the spell it fell in (-1: none).
    restarts: list[tuple[datetime, int]] = field(default_factory=list)

    def spell(self, at: datetime) -> int:
        """The spell the workload was broken in at ``at`` (-1: it ran)."""
        for index, spell in enumerate(self.spells):
            if spell.covers(at) and at <= self.healed.get(index, spell.start + spell.length):
                return index
        return -1

    def supports_dry_run(self, capability_name: str) -> bool:
        return False

    def invoke(
        self,
        capability_name: str,
        parameters: Model,
        *,
        mind_allowed_hosts: Any = (),
        dry_run: bool = False,
    ) -> DriverResult:
        now = self.clock()
        spell = self.spell(now)
        if capability_name == "service.status":
            broken = spell >= 0
            return DriverResult.success(
                f"atlas-worker is {'degraded' if broken else 'running'}",
                fields={
                    "state": "degraded" if broken else "running",
                    "ready_replicas": 0 if broken else 1,
                    "desired_replicas": 1,
                    "restarts": len(self.restarts),
                },
            )
        if capability_name == "service.restart":
            self.restarts.append((now, spell))
            if self.restart_heals and spell >= 0:
                self.healed[spell] = now
            return DriverResult.success("restart requested (health not yet verified)")
        return DriverResult.success(f"{capability_name}: nothing of note")


@dataclass
class Simulation:
    spec: MindSpec
    spells: tuple[Spell, ...]
    restart_heals: bool
    operator_window: tuple[datetime, datetime] | None = None
    people: People = field(default_factory=People)
    clock: FakeClock = field(default_factory=FakeClock)
    resources: FakeResources = field(default_factory=FakeResources)
    ledger: FakeLedger = field(default_factory=FakeLedger)
    events: FakeEvents = field(default_factory=FakeEvents)
    #: When each Plan and Approval was first seen (what people's delays count from).
    seen: dict[tuple[str, str], datetime] = field(default_factory=dict)
    cycles: int = 0
    #: When the last cycle ran.
    last_cycle_at: datetime | None = None

    def __post_init__(self) -> None:
        self.world = Workload(self.clock, self.spells, self.restart_heals)
        spec = self.spec.to_k8s()
        spec.setdefault("approvers", {"groups": ["sre"]})
        self.resources.create(MIND, NS, {"metadata": {"name": NAME}, "spec": spec})
        resources, ledger, events, clock = self.resources, self.ledger, self.events, self.clock
        engine = assemble(
            EnginePorts(
                resources=resources,
                ledger=ledger,
                events=events,
                drivers=self.world,
                clock=clock,
                registry=REGISTRY,
                holder="simulated-controller",
            )
        )
        self.approvals = engine.approvals
        self.plans = engine.plans
        self.executor = engine.executor
        self.mind = engine.cycle

    # -- running ---------------------------------------------------------------------------

    def run(self, start: datetime, days: float, every: timedelta) -> None:
        """A cycle every ``every`` for ``days``, and the controller's work in between."""
        self.clock.now = max(self.clock.now, start) if self.cycles else start
        at, end = start, start + timedelta(days=days)
        while at < end:
            self.clock.now = max(self.clock.now, at)
            self._cycle()
            self._controller(until=at + every)
            at += every

    def cycle(self, now: datetime) -> None:
        """One cycle at ``now`` and the controller's work right after it."""
        self.clock.now = max(self.clock.now, now)
        self._cycle()
        self._controller(until=now)

    def _cycle(self) -> None:
        self._operator(self.clock())
        self.last_cycle_at = self.clock()
        self.mind.run(NS, NAME)
        self.cycles += 1

    def spell(self, at: datetime) -> int:
        return self.world.spell(at)

    def incident(self, at: datetime) -> int:
        """The last spell that began by ``at`` (-1: none yet), healed or not: what the mind
        still deals with after a break (a contradicted belief, a refuted prediction)."""
        return max((i for i, s in enumerate(self.spells) if s.start <= at), default=-1)

    def _operator(self, now: datetime) -> None:
        window = self.operator_window
        if window is None or not window[0] <= now < window[1]:
            return
        if (PLAN.plural, OPERATOR_PLAN) in self.seen:
            return
        waiting = int((window[1] - now).total_seconds()) or 1
        self.resources.create(
            PLAN,
            NS,
            {
                "metadata": {"name": OPERATOR_PLAN},
                "spec": {
                    "objective": "restart atlas-worker by hand, after a look",
                    "origin": PlanOrigin.OPERATOR.value,
                    "strategy": Strategy.AUTHORED.value,
                    "author": PERSON,
                    "mind": NAME,
                    "steps": [
                        {
                            "key": "W1",
                            "title": "look first",
                            "kind": "wait",
                            "waitSeconds": waiting,
                        },
                        {
                            "key": "P1",
                            "title": "restart atlas-worker",
                            "kind": "capability",
                            "capability": "service.restart",
                            "parameters": WORKLOAD,
                            "dependsOn": ["W1"],
                        },
                    ],
                },
            },
        )
        self.seen[(PLAN.plural, OPERATOR_PLAN)] = now
        self.plans.admit(NS, OPERATOR_PLAN)  # the controller's handler, on the watch's news

    def _controller(self, until: datetime) -> None:
        """What the controller does between two cycles: every Plan admitted and ticked at the
        wake-ups it asks for, every Approval reconciled (expiry included), people's answers."""
        for _ in range(PASSES):
            now = self.clock()
            known = len(self.seen)
            wakes = self._people(now) + self._approvals(now) + self._plans(now)
            if len(self.seen) > known or self._unseen() or any(w <= now for w in wakes):
                # More to do at once: a new object's watch event, a plan that hit its
                # transitions per tick, a person who just answered.
                continue
            later = [w for w in wakes if w < until]
            if not later:
                return
            self.clock.now = min(later)
        raise AssertionError(f"the controller never settled before {until}")

    def _unseen(self) -> bool:
        """Whether a Plan or Approval appeared that the controller has not looked at yet."""
        return any(
            (kind.plural, body["metadata"]["name"]) not in self.seen
            for kind in (PLAN, APPROVAL)
            for body in self.resources.list(kind, NS)
        )

    def _plans(self, now: datetime) -> list[datetime]:
        wakes = []
        for body in self.resources.list(PLAN, NS):
            name = body["metadata"]["name"]
            self.seen.setdefault((PLAN.plural, name), now)
            self.plans.admit(NS, name)
            phase = (self.resources.get(PLAN, NS, name).get("status") or {}).get("phase")
            if phase not in OPEN_PLAN_PHASES:
                continue
            result = self.executor.tick(NS, name)
            # A wake-up now is more to do at once only if this tick moved the plan.
            wake = result.wake_at
            if wake is not None and (result.transitions or wake > now):
                wakes.append(wake)
        return wakes

    def _approvals(self, now: datetime) -> list[datetime]:
        wakes = []
        for body in self.resources.list(APPROVAL, NS):
            name = body["metadata"]["name"]
            self.seen.setdefault((APPROVAL.plural, name), now)
            after = self.approvals.reconcile(NS, name)
            if (after.get("status") or {}).get("phase", "Pending") in ("Pending", "Approved"):
                expires = datetime.fromisoformat(str(body["spec"]["expiresAt"]))
                if expires > now:
                    wakes.append(expires)
        return wakes

    def _people(self, now: datetime) -> list[datetime]:
        """People answer what is asked of them and cancel what they meant to; the times of
        what they will do next."""
        wakes = []
        people = self.people
        for body in self.resources.list(APPROVAL, NS):
            first = self.seen.get((APPROVAL.plural, body["metadata"]["name"]))
            pending = (body.get("status") or {}).get("phase", "Pending") == "Pending"
            if first is None or people.decision is None or not pending:
                continue
            if body["spec"].get("decision") not in (None, "Pending"):
                continue
            due = first + people.answer_after
            if now < due:
                wakes.append(due)
                continue
            decision = {"decision": people.decision, "decidedBy": PERSON}
            self.resources.patch_spec(APPROVAL, body, decision)
            wakes.append(now)
        if people.cancel_after is None:
            return wakes
        for body in self.resources.list(PLAN, NS):
            spec, status = body["spec"], body.get("status") or {}
            first = self.seen.get((PLAN.plural, body["metadata"]["name"]))
            mine = spec.get("origin") not in (PlanOrigin.OPERATOR.value, PlanOrigin.DREAM.value)
            if first is None or not mine or spec.get("cancellation"):
                continue
            if status.get("phase") not in OPEN_PLAN_PHASES:
                continue
            due = first + people.cancel_after
            if now < due:
                wakes.append(due)
                continue
            cancel = {"cancellation": {"by": PERSON, "reason": "not now"}}
            self.resources.patch_spec(PLAN, body, cancel)
            wakes.append(now)
        return wakes

    # -- what the ledger and the world say happened ------------------------------------------

    @property
    def intentions(self) -> dict[str, IntentionRecord]:
        return {i.id: i for i in self.ledger.intentions(namespace=NS, mind=NAME)}

    @property
    def wants(self) -> dict[str, Want]:
        return {w["id"]: Want.model_validate(w) for w in self.ledger.wants(NS, NAME)}

    @property
    def commitments(self) -> dict[str, CommitmentState]:
        states = self.ledger.commitment_states(NS, NAME)
        return {name: CommitmentState(state) for name, state in states.items()}

    @property
    def unsettled(self) -> list[Want]:
        """Wants still serving an intention that had ended before the last cycle began: that
        cycle should have settled them."""
        intentions = self.intentions
        last = self.last_cycle_at
        return [
            w
            for w in self.wants.values()
            if (i := intentions.get(w.intention or "")) is not None
            and i.status.final
            and last is not None
            and i.updated_at < last
        ]

    def _formed(self) -> list[tuple[str, IntentionRecord]]:
        """Each intention the cycle formed, with the want it serves."""
        intentions = self.intentions
        return [
            (d.subjects["want"], intentions[d.subjects["intention"]])
            for d in self.ledger.decisions(namespace=NS, mind=NAME, kind="formation")
            if d.outcome == "formed" and d.subjects.get("intention") in intentions
        ]

    def _plan_origin(self, plan: str) -> tuple[str, str | None]:
        """(origin, intention) of a plan, as it was written."""
        body = self.resources.get(PLAN, NS, plan)
        return body["spec"]["origin"], body["spec"].get("intention")

    def _restarts(self) -> list[tuple[datetime, int, str, str | None]]:
        """Each restart the world saw: when, its spell, its plan's origin and intention."""
        executions = sorted(
            (e for e in self.ledger.executions() if e.capability == "service.restart"),
            key=lambda e: e.id or 0,
        )
        # Every restart is written ahead, then made: the two lists pair up in order.
        assert len(executions) == len(self.world.restarts), (executions, self.world.restarts)
        found = []
        for (at, spell), execution in zip(self.world.restarts, executions, strict=True):
            assert execution.target == ATLAS
            assert execution.origin.plan is not None  # a restart is always a plan's step
            origin, intention = self._plan_origin(execution.origin.plan)
            found.append((at, spell, origin, intention))
        return found

    @property
    def formed(self) -> Counter[tuple[str, int]]:
        """Intentions formed per (want, incident: -1 before any)."""
        return Counter((want, self.incident(i.created_at)) for want, i in self._formed())

    @property
    def restarts(self) -> Counter[int]:
        """The mind's own restarts per spell (-1: while the workload ran)."""
        return Counter(spell for _, spell, origin, _ in self._restarts() if origin != "operator")

    @property
    def operator_restarts(self) -> int:
        return sum(1 for _, _, origin, _ in self._restarts() if origin == "operator")

    @property
    def restarts_while_covered(self) -> int:
        window = self.operator_window
        if window is None:
            return 0
        return sum(
            1
            for at, _, origin, _ in self._restarts()
            if origin != "operator" and window[0] <= at < window[1]
        )

    @property
    def acts_for(self) -> Counter[str]:
        """The mind's restarts per commitment they carried out."""
        serving = {i.id: want for want, i in self._formed()}
        wants = self.wants
        found: Counter[str] = Counter()
        for _, _, origin, intention in self._restarts():
            want = wants.get(serving.get(intention or "", ""))
            if origin != "operator" and want is not None and want.commitment:
                found[want.commitment] += 1
        return found

    @property
    def looks_for(self) -> Counter[str]:
        """Investigations formed per want subject (``request:q1`` for a question)."""
        wants = self.wants
        return Counter(
            wants[want].subject
            for want, i in self._formed()
            if i.kind is IntentionKind.INVESTIGATION and want in wants
        )

    @property
    def investigations(self) -> Counter[tuple[str | None, int]]:
        """Investigations formed per (subject, incident), whatever want moved them."""
        return Counter(
            (i.subject, self.incident(i.created_at))
            for _, i in self._formed()
            if i.kind is IntentionKind.INVESTIGATION
        )

    def _mine(self) -> list[dict[str, Any]]:
        """The mind's own plans (not a person's, not dreams)."""
        return [
            b
            for b in self.resources.list(PLAN, NS)
            if b["spec"]["origin"] not in (PlanOrigin.OPERATOR.value, PlanOrigin.DREAM.value)
        ]

    @property
    def planned_restarts(self) -> int:
        """Restart steps in the mind's own plans."""
        return sum(
            1
            for b in self._mine()
            for step in b["spec"]["steps"]
            if step.get("capability") == "service.restart"
        )

    @property
    def asked(self) -> int:
        """Approvals the mind's own plans asked people for."""
        mine = {b["metadata"]["name"] for b in self._mine()}
        return sum(
            1
            for a in self.resources.list(APPROVAL, NS)
            if (a["spec"].get("origin") or {}).get("plan") in mine
        )

    @property
    def escalations(self) -> Counter[int]:
        """Plans that tell a person, per spell they were made in."""
        return Counter(
            self.spell(self.seen[(PLAN.plural, b["metadata"]["name"])])
            for b in self.resources.list(PLAN, NS)
            if b["spec"].get("strategy") == Strategy.DIAGNOSE_THEN_ESCALATE.value
        )

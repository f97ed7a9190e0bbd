"""A small simulator: the mind's pure rules, in the cycle's order, over simulated days.

It composes the same domain functions `engine/cycle.py` applies (lapse, settlement, commitments,
wants, formation with coverage and remembered failures), with a fake clock and a scripted
world and executor instead of the cluster:

- the world: one workload, broken during given spells; a restart heals it, or not;
- the executor: an investigation completes at once; a restart that heals fulfils its intention;
  one that does not is refuted, and the replan escalates (diagnose then tell a person), which
  leaves the intention blocked; an intention that starts with `direct` failed escalates at once;
- an operator's Plan restarting the workload may be open during a window;
- a commitment's act may take a while (`act_takes`: its intention stays active until then), and
  acts during `failing` spells fail (the intention is abandoned, its strategy failed).

It counts what the mind did, per want, per commitment and per workload.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from minds.domain.intentions import IntentionRecord, IntentionStatus, transitioned, updated
from minds.domain.planning.model import PlanOrigin, Strategy
from minds.domain.resources.mind import MindSpec
from minds.domain.volition.commitments import (
    CommitmentContext,
    CommitmentState,
    check_commitments,
)
from minds.domain.volition.coverage import OpenPlan
from minds.domain.volition.formation import DEFAULT_CAPACITY, form
from minds.domain.volition.lapse import lapse
from minds.domain.volition.settlement import remembered_failures, serving, settle
from minds.domain.volition.wants import (
    Observation,
    Valence,
    Want,
    WantStatus,
    decayed_strength,
    derive_wants,
)
from tests.unit.volition.builders import ATLAS, MIND, NS


@dataclass(frozen=True)
class Spell:
    """The workload is broken from `start` for `length` (unless a restart heals it)."""

    start: datetime
    length: timedelta

    def covers(self, at: datetime) -> bool:
        return self.start <= at < self.start + self.length


@dataclass
class Simulation:
    spec: MindSpec
    spells: tuple[Spell, ...]
    restart_heals: bool
    operator_window: tuple[datetime, datetime] | None = None
    act_takes: timedelta = timedelta(0)
    failing: tuple[Spell, ...] = ()
    finishing: dict[str, datetime] = field(default_factory=dict)  # intention -> when it ends
    fulfilled_at: dict[str, datetime] = field(default_factory=dict)
    acts: list[tuple[str, datetime]] = field(default_factory=list)  # (commitment, when)
    wants: dict[str, Want] = field(default_factory=dict)
    intentions: dict[str, IntentionRecord] = field(default_factory=dict)
    commitments: dict[str, CommitmentState] = field(default_factory=dict)
    healed: set[int] = field(default_factory=set)
    restarts: Counter[int] = field(default_factory=Counter)  # per spell (-1: none)
    escalations: Counter[int] = field(default_factory=Counter)
    formed: Counter[tuple[str, int]] = field(default_factory=Counter)  # per (want, spell)
    acts_for: Counter[str] = field(default_factory=Counter)  # restarts per commitment
    looks_for: Counter[str] = field(default_factory=Counter)  # investigations per want subject
    restarts_while_covered: int = 0

    def spell(self, at: datetime) -> int:
        for index, spell in enumerate(self.spells):
            if spell.covers(at) and index not in self.healed:
                return index
        return -1

    def _covering(self, now: datetime) -> list[OpenPlan]:
        window = self.operator_window
        if window is None or not window[0] <= now < window[1]:
            return []
        return [OpenPlan(name="by-hand", origin=PlanOrigin.OPERATOR, writes=frozenset({ATLAS}))]

    def _move(
        self, intention: IntentionRecord, to: IntentionStatus, why: str, now: datetime
    ) -> None:
        after = transitioned(intention, to, why, now)
        assert after is not None
        self.intentions[after.id] = after

    def cycle(self, now: datetime) -> None:
        state = "degraded" if self.spell(now) >= 0 else "running"
        observations = [
            Observation(subject=ATLAS, capability="service.status", fields={"state": state}, at=now)
        ]
        for iid, until in list(self.finishing.items()):
            if now >= until:
                del self.finishing[iid]
                self._move(self.intentions[iid], IntentionStatus.FULFILLED, "plan completed", now)
        for intention in list(self.intentions.values()):
            lapsed = lapse(intention, now)
            if lapsed is not None:
                self.intentions[intention.id] = lapsed.intention
        for want in list(self.wants.values()):
            ended = self.intentions.get(want.intention or "")
            settled = settle(want, ended, now) if ended else None
            if settled is None:
                continue
            self.wants[want.id] = settled.want
            if settled.commitment is not None:
                self.commitments[settled.commitment.name] = settled.commitment.state
                self.fulfilled_at[settled.commitment.name] = now
        context = CommitmentContext(
            spec=self.spec, recorded=dict(self.commitments), fulfilled_at=dict(self.fulfilled_at)
        )
        states, _ = check_commitments(now, context, namespace=NS, mind=MIND)
        self.commitments = {name: a.state for name, a in states.items()}
        derived = derive_wants(
            observations,
            [],
            [],
            self.spec,
            list(self.wants.values()),
            now,
            namespace=NS,
            mind=MIND,
            commitments=context.model_copy(update={"recorded": dict(self.commitments)}),
        )
        self.wants.update({w.id: w for w in derived.wants})
        self._reconsider_met(state, now)
        self._form(now)

    def _reconsider_met(self, state: str, now: datetime) -> None:
        """The world changed: a running workload fulfils the action intentions about it."""
        if state != "running":
            return
        for intention in list(self.intentions.values()):
            live = intention.status in (IntentionStatus.ACTIVE, IntentionStatus.BLOCKED)
            slow = intention.id in self.finishing  # its act is still under way
            if live and intention.means_capability and intention.subject == ATLAS and not slow:
                self._move(intention, IntentionStatus.FULFILLED, "goal met", now)

    def _form(self, now: datetime) -> None:
        approach = sorted(
            (
                w
                for w in self.wants.values()
                if w.status is WantStatus.ACTIVE and w.valence is Valence.APPROACH
            ),
            key=lambda w: (-decayed_strength(w, now), w.id),
        )
        for want in approach:
            formation = form(
                want,
                self.spec,
                list(self.intentions.values()),
                DEFAULT_CAPACITY,
                now,
                open_plans=self._covering(now),
                failed=remembered_failures(self.wants.values(), want.target or want.subject, now),
            )
            if formation.intention is None:
                continue
            intention = formation.intention
            self.intentions[intention.id] = intention
            self.wants[want.id] = serving(want, intention.id)
            self.formed[(want.id, self.spell(now))] += 1
            self._execute(intention, want, now)

    def _execute(self, intention: IntentionRecord, want: Want, now: datetime) -> None:
        spell = self.spell(now)
        if intention.means_capability is None:
            self.looks_for[want.subject] += 1
            self._move(intention, IntentionStatus.FULFILLED, "plan completed", now)
            return
        if Strategy.DIRECT.value not in intention.failed_strategies:
            self.restarts[spell] += 1
            if self._covering(now):
                self.restarts_while_covered += 1
            if want.commitment:
                self.acts_for[want.commitment] += 1
                self.acts.append((want.commitment, now))
                if any(f.covers(now) for f in self.failing):
                    failed = updated(intention, failed_strategies=["direct"], at=now)
                    self._move(failed, IntentionStatus.ABANDONED, "replan limit", now)
                    return
                if self.act_takes and spell < 0:
                    self.finishing[intention.id] = now + self.act_takes
                    return
            if self.restart_heals and spell >= 0:
                self.healed.add(spell)
            if self.restart_heals or spell < 0:
                self._move(intention, IntentionStatus.FULFILLED, "plan completed", now)
                return
            intention = updated(intention, replans=1, failed_strategies=["direct"], at=now)
            self.intentions[intention.id] = intention
        self.escalations[spell] += 1
        self._move(intention, IntentionStatus.BLOCKED, "escalated to the operator", now)

    def run(self, start: datetime, days: float, every: timedelta) -> None:
        now = start
        end = start + timedelta(days=days)
        while now < end:
            self.cycle(now)
            now += every

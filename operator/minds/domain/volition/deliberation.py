"""A cycle's deliberation: from what the mind holds and what it observed, every change its
volition makes, computed at once and applied by the caller in one transaction.

In order, each step seeing what the steps before it changed: intentions that waited too long
lapse (`lapse`); ended intentions settle the wants they served and the commitments they carried
(`settlement`); the commitments are judged (`commitments`); wants are derived from the evidence
(`wants`); conflicts between them are resolved (`conflicts`). Nothing here reads or writes: the
caller reads the inputs, and writes the result whole or not at all, so a crash between deciding
and applying leaves the cycle undone rather than half done. Pure: the clock is passed in.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime

from minds.domain.beliefs import BeliefRecord, PredictionRecord
from minds.domain.capabilities.registry import REGISTRY, CapabilityRegistry
from minds.domain.corrections import revocations
from minds.domain.intentions import IntentionRecord
from minds.domain.resources.mind import MindSpec
from minds.domain.volition.commitments import (
    CommitmentContext,
    CommitmentState,
    check_commitments,
)
from minds.domain.volition.conflicts import Conflict, resolve_conflicts
from minds.domain.volition.decisions import VolitionDecision
from minds.domain.volition.lapse import Lapsed, lapse
from minds.domain.volition.promises import left_by_earlier
from minds.domain.volition.settlement import answering, settle
from minds.domain.volition.wants import Observation, Want, WantStatus, derive_wants


@dataclass(frozen=True)
class Held:
    """What the mind holds when its cycle starts, as the ledger has it."""

    intentions: Sequence[IntentionRecord]
    wants: Sequence[Want]
    #: Each commitment's recorded state, and when it was recorded.
    commitments: Mapping[str, str]
    commitments_at: Mapping[str, datetime]
    conflicts: Sequence[Conflict]
    predictions: Sequence[PredictionRecord]
    beliefs: Sequence[BeliefRecord]
    #: The names an earlier Mind object of this name promised, and when the last one ended
    #: (None: there was none, or it is not known).
    promised: Collection[str] = ()
    earlier_ended_at: datetime | None = None


@dataclass(frozen=True)
class CommitmentWrite:
    name: str
    state: CommitmentState
    reason: str


@dataclass(frozen=True)
class Deliberation:
    """Every change of one cycle's deliberation, in the order it is to be written."""

    lapsed: tuple[Lapsed, ...]
    commitments: tuple[CommitmentWrite, ...]
    #: Wants to store, in the order they changed (a want may appear more than once; the last
    #: one is what it is now).
    wants: tuple[Want, ...]
    conflicts: tuple[Conflict, ...]
    decisions: tuple[VolitionDecision, ...]
    #: Every want of the mind after the deliberation, by id.
    everything: Mapping[str, Want] = field(default_factory=dict)

    @property
    def active(self) -> list[Want]:
        return [w for w in self.everything.values() if w.status is WantStatus.ACTIVE]


def deliberate(
    spec: MindSpec,
    held: Held,
    evidence: Sequence[Observation],
    now: datetime,
    *,
    namespace: str,
    mind: str,
    registry: CapabilityRegistry = REGISTRY,
) -> Deliberation:
    """One cycle's volition over ``held`` and ``evidence`` (observations and findings).
    ``spec``: the Mind's spec with the promises of earlier objects it keeps."""
    decisions: list[VolitionDecision] = []
    writes: list[CommitmentWrite] = []
    stored: list[Want] = []

    # Lapse: an intention abandoned after waiting too long is what settlement then sees.
    intentions = {i.id: i for i in held.intentions}
    lapsed = tuple(found for i in held.intentions if (found := lapse(i, now)) is not None)
    for found in lapsed:
        intentions[found.intention.id] = found.intention
        decisions.append(found.decision)

    # Settlement: once, since the settled want forgets its intention.
    wants = {w.id: w for w in held.wants}
    states = dict(held.commitments)
    states_at = dict(held.commitments_at)
    for want in held.wants:
        intention = answering(want, intentions)
        settled = settle(want, intention, now) if intention else None
        if settled is None:
            continue
        if (c := settled.commitment) is not None:
            writes.append(CommitmentWrite(c.name, c.state, c.reason))
            states[c.name], states_at[c.name] = c.state.value, now
        wants[want.id] = settled.want
        stored.append(settled.want)
        decisions.extend(settled.decisions)

    # Commitments: a state an earlier object left is this one's only for what it promised.
    recorded = {k: CommitmentState(v) for k, v in states.items()}
    stale = left_by_earlier(states_at, held.promised, held.earlier_ended_at)
    own = {k: v for k, v in recorded.items() if k not in stale}
    context = CommitmentContext(
        spec=spec,
        recorded=own,
        revocations=revocations(spec),
        # A fulfilled commitment's row was last written when it was fulfilled.
        fulfilled_at={
            k: states_at[k]
            for k, v in own.items()
            if v is CommitmentState.FULFILLED and k in states_at
        },
    )
    assessed, judged = check_commitments(
        now, context, namespace=namespace, mind=mind, registry=registry, told=recorded
    )
    writes.extend(CommitmentWrite(k, a.state, a.reason) for k, a in assessed.items())
    decisions.extend(judged)
    # Wants are judged on the states just assessed.
    context = CommitmentContext(
        spec=spec,
        recorded={k: a.state for k, a in assessed.items()},
        fulfilled_at=context.fulfilled_at,
    )

    # Wants, from the evidence, over the wants as settlement left them.
    derived = derive_wants(
        evidence,
        held.predictions,
        held.beliefs,
        spec,
        list(wants.values()),
        now,
        namespace=namespace,
        mind=mind,
        commitments=context,
        registry=registry,
    )
    stored.extend(derived.wants)
    decisions.extend(derived.decisions)
    wants.update({w.id: w for w in derived.wants})

    # Conflicts between the active wants.
    active = [w for w in wants.values() if w.status is WantStatus.ACTIVE]
    resolved = resolve_conflicts(
        active, spec, list(held.conflicts), now, namespace=namespace, mind=mind
    )
    decisions.extend(resolved.decisions)

    return Deliberation(
        lapsed=lapsed,
        commitments=tuple(writes),
        wants=tuple(stored),
        conflicts=resolved.conflicts,
        decisions=tuple(decisions),
        everything=wants,
    )

"""When a Mind's cycle runs early: which change of a goal's subject matters, and the debounce.

The subjects of active goals (Deployments, StatefulSets, DaemonSets) are watched. Most of what
a watch delivers about a workload is no news to a goal: a managed-fields entry, an annotation,
a condition's ``lastUpdateTime`` ticking over while nothing else moves. What a goal is judged
on (see the ``service.status`` rules) is the workload's generation and the generation its
controller observed, its replica counts, how many replicas are ready and available, and its
conditions' types, statuses and reasons. Only a change there wakes the cycle.

The debounce: the first change wakes the cycle after ``settle`` (a status update arrives as
several events within milliseconds), and changes after that wake it at most once per
``cooldown``, at the end of it. A burst of changes therefore costs at most two cycles per
cooldown: one at its start, so a broken workload is looked at within ``settle``, and one at
the end, so the cycle sees how the burst ended. Pure: the caller keeps the state and the time.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta
from enum import StrEnum
from typing import Final

from minds.domain.resources.mind import MindSpec

#: The kinds a goal's subject may be, by the plural their API serves them as.
WORKLOAD_PLURALS: Final[Mapping[str, str]] = {
    "Deployment": "deployments",
    "StatefulSet": "statefulsets",
    "DaemonSet": "daemonsets",
}


#: A goal's subject: the plural of its kind, its namespace, its name.
Subject = tuple[str, str, str]


def subjects(namespace: str, spec: MindSpec) -> frozenset[Subject]:
    """What a Mind of ``namespace`` watches: its goals' subjects, while it is active (an
    inactive Mind observes nothing, so nothing of the world is news to it)."""
    if not spec.active:
        return frozenset()
    return frozenset(
        (WORKLOAD_PLURALS[g.subject.kind], g.subject.namespace or namespace, g.subject.name)
        for g in spec.goals
    )


class WakeReason(StrEnum):
    """Why a cycle was woken early: a fixed set, so a metric labelled by it stays bounded."""

    APPEARED = "appeared"
    GONE = "gone"
    GENERATION = "generation"
    AVAILABILITY = "availability"
    REPLICAS = "replicas"
    CONDITIONS = "conditions"


#: Status counts a goal's state is decided on; of each pair the first is a Deployment's or a
#: StatefulSet's name, the second a DaemonSet's.
_AVAILABILITY: Final = (
    "readyReplicas",
    "availableReplicas",
    "unavailableReplicas",
    "numberReady",
    "numberAvailable",
    "numberUnavailable",
)
_REPLICAS: Final = (
    "replicas",
    "updatedReplicas",
    "currentReplicas",
    "desiredNumberScheduled",
    "currentNumberScheduled",
    "updatedNumberScheduled",
    "numberMisscheduled",
)


@dataclass(frozen=True)
class WorkloadSignal:
    """What of a workload's body a goal can be judged on; equal signals, same judgement."""

    generation: tuple[int, int]
    availability: tuple[int, ...]
    replicas: tuple[int, ...]
    conditions: frozenset[tuple[str, str, str]]


def _mapping(value: object) -> Mapping[str, object]:
    return value if isinstance(value, Mapping) else {}


def _count(mapping: Mapping[str, object], key: str) -> int:
    value = mapping.get(key)
    # -1 for a count the object does not have: absent and 0 are not the same news.
    return value if isinstance(value, int) else -1


def signal(body: Mapping[str, object]) -> WorkloadSignal:
    spec, status = _mapping(body.get("spec")), _mapping(body.get("status"))
    meta = _mapping(body.get("metadata"))
    conditions = status.get("conditions")
    return WorkloadSignal(
        generation=(_count(meta, "generation"), _count(status, "observedGeneration")),
        availability=tuple(_count(status, key) for key in _AVAILABILITY),
        replicas=(_count(spec, "replicas"), *(_count(status, key) for key in _REPLICAS)),
        conditions=frozenset(
            (str(c.get("type", "")), str(c.get("status", "")), str(c.get("reason", "")))
            for c in (conditions if isinstance(conditions, list) else [])
            if isinstance(c, Mapping)
        ),
    )


def what_changed(before: WorkloadSignal | None, after: WorkloadSignal | None) -> WakeReason | None:
    """The change from ``before`` to ``after`` (None: no such workload) that matters to a goal,
    the first in the order of ``WakeReason``; None when nothing does."""
    if before is None:
        return None if after is None else WakeReason.APPEARED
    if after is None:
        return WakeReason.GONE
    if before.generation != after.generation:
        return WakeReason.GENERATION
    if before.availability != after.availability:
        return WakeReason.AVAILABILITY
    if before.replicas != after.replicas:
        return WakeReason.REPLICAS
    if before.conditions != after.conditions:
        return WakeReason.CONDITIONS
    return None


@dataclass(frozen=True)
class Debounce:
    #: How long the first change waits for the events that come with it.
    settle: timedelta = timedelta(milliseconds=250)
    #: At least this long between two early wake-ups of one Mind's cycle.
    cooldown: timedelta = timedelta(seconds=2)

    def changed(self, pending: Pending, now: datetime) -> Pending:
        """A change arrived: when the cycle is to be woken for it (never sooner than one that
        is already due, never within ``cooldown`` of the last wake-up)."""
        if pending.due is not None:
            return pending
        due = now + self.settle
        if pending.woken is not None:
            due = max(due, pending.woken + self.cooldown)
        return Pending(due=due, woken=pending.woken)

    def fire(self, pending: Pending, now: datetime) -> tuple[Pending, bool]:
        """The time came (or a timer fired late or early): whether to wake the cycle now."""
        if pending.due is None or now < pending.due:
            return pending, False
        return Pending(due=None, woken=now), True

    def forgettable(self, pending: Pending, now: datetime) -> bool:
        """Nothing due and the cooldown over: keeping this state would change nothing."""
        return pending.due is None and (
            pending.woken is None or now >= pending.woken + self.cooldown
        )


@dataclass(frozen=True)
class Pending:
    """One Mind's debounce state: when its next early wake-up is due, when it last was woken."""

    due: datetime | None = None
    woken: datetime | None = None

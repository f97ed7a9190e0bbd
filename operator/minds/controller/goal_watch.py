"""The Minds hear their goals: a change of a goal's subject wakes the Mind's cycle early.

Fed from two sides: the Minds' watch (which subjects each active Mind's goals name) and the
workloads' watches (what those subjects look like now). A change that matters to a goal (see
``minds.domain.wakeups``) asks for an early wake-up of every Mind whose goal names the
workload, debounced per Mind. The wake-up itself is only a nudge to the Mind's cycle: the
cycle it starts observes with real reads and records them as every cycle does, and the
periodic cycle stays the safety net for anything a watch missed.

Nothing here is state: after a restart the first listing of each watch is taken in without
waking anybody (every Ready Mind runs a cycle at start anyway).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterable, Mapping
from datetime import datetime

from pydantic import ValidationError

from minds.domain.resources.mind import MindSpec
from minds.domain.wakeups import (
    Debounce,
    Pending,
    Subject,
    WakeReason,
    WorkloadSignal,
    signal,
    subjects,
    what_changed,
)

log = logging.getLogger(__name__)

MindKey = tuple[str, str]
#: Run a call after so many seconds (on the controller's event loop).
Later = Callable[[float, Callable[[], None]], None]
#: Watch exactly these (namespace, plural) pairs.
Follow = Callable[[Iterable[tuple[str, str]]], None]


class GoalWatch:
    def __init__(
        self,
        *,
        wake: Callable[[str, str], None],
        woken: Callable[[str, str, WakeReason], None],
        clock: Callable[[], datetime],
        later: Later,
        debounce: Debounce | None = None,
    ) -> None:
        self._wake = wake
        self._woken = woken
        self._clock = clock
        self._later = later
        self._debounce = debounce or Debounce()
        self._follow: Follow = lambda pairs: None
        self._lock = threading.Lock()
        self._goals: dict[MindKey, frozenset[Subject]] = {}
        self._minds: dict[Subject, frozenset[MindKey]] = {}
        self._signals: dict[Subject, WorkloadSignal] = {}
        self._pending: dict[MindKey, Pending] = {}
        self._reasons: dict[MindKey, WakeReason] = {}

    def attach(self, follow: Follow) -> None:
        """Whom to tell which namespaces and kinds to watch (the watches tell us back)."""
        self._follow = follow

    # -- the Minds' side ------------------------------------------------------------------

    def mind(self, body: Mapping[str, object]) -> None:
        meta = body.get("metadata")
        if not isinstance(meta, Mapping):
            return
        key = (str(meta.get("namespace")), str(meta.get("name")))
        try:
            spec = MindSpec.model_validate(body.get("spec") or {})
        except ValidationError:
            named: frozenset[Subject] = frozenset()  # admission refuses it; it has no cycle
        else:
            named = subjects(key[0], spec)
        with self._lock:
            if self._goals.get(key, frozenset()) == named:
                return
            self._goals[key] = named
        self._changed_goals()

    def mind_gone(self, namespace: str, name: str) -> None:
        with self._lock:
            self._goals.pop((namespace, name), None)
            self._pending.pop((namespace, name), None)
        self._changed_goals()

    def _changed_goals(self) -> None:
        with self._lock:
            minds: dict[Subject, set[MindKey]] = {}
            for key, named in self._goals.items():
                for subject in named:
                    minds.setdefault(subject, set()).add(key)
            self._minds = {subject: frozenset(keys) for subject, keys in minds.items()}
            wanted = {(namespace, plural) for plural, namespace, _name in self._minds}
        self._follow(wanted)

    # -- the workloads' side (minds.adapters.kube.workload_watch.WorkloadListener) ----------

    def seen(self, plural: str, namespace: str, body: Mapping[str, object], *, first: bool) -> None:
        meta = body.get("metadata")
        name = str(meta.get("name")) if isinstance(meta, Mapping) else ""
        self._saw((plural, namespace, name), signal(body), first=first)

    def gone(self, plural: str, namespace: str, name: str) -> None:
        self._saw((plural, namespace, name), None, first=False)

    def forget(self, plural: str, namespace: str) -> None:
        with self._lock:
            for subject in [s for s in self._signals if s[:2] == (plural, namespace)]:
                del self._signals[subject]

    def _saw(self, subject: Subject, now: WorkloadSignal | None, *, first: bool) -> None:
        with self._lock:
            before = self._signals.pop(subject, None)
            if now is not None:
                self._signals[subject] = now
            minds = self._minds.get(subject, frozenset())
        reason = what_changed(before, now)
        if first or reason is None:
            return
        for mind in minds:
            self._changed(mind, reason)

    # -- the debounce -----------------------------------------------------------------------

    def _changed(self, mind: MindKey, reason: WakeReason) -> None:
        now = self._clock()
        with self._lock:
            before = self._pending.get(mind, Pending())
            after = self._pending[mind] = self._debounce.changed(before, now)
            armed = before.due is None and after.due is not None
            if armed:
                self._reasons[mind] = reason
        if armed and after.due is not None:
            self._later(max(0.0, (after.due - now).total_seconds()), lambda: self._fire(mind))

    def _fire(self, mind: MindKey) -> None:
        now = self._clock()
        with self._lock:
            pending, wake = self._debounce.fire(self._pending.get(mind, Pending()), now)
            if mind in self._pending:
                self._pending[mind] = pending
            reason = self._reasons.pop(mind, None) if wake else None
        if not wake:
            if pending.due is not None:  # the timer ran early: wait out the rest
                self._later((pending.due - now).total_seconds(), lambda: self._fire(mind))
            return
        namespace, name = mind
        if reason is not None:
            self._woken(namespace, name, reason)
        self._wake(namespace, name)

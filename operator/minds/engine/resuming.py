"""A person resumed an intention that has no plan that can run: the cycle plans it anew (the
rule is ``minds.domain.volition.resumption.replanned_on_resume``). Forks quiesce inherited work
until a person resumes it; once resumed, it is planned like any intention the mind forms."""

from __future__ import annotations

from datetime import datetime
from typing import Protocol

from pydantic import ValidationError

from minds.domain.execution.machine import FINAL_PLAN
from minds.domain.intentions import IntentionRecord, IntentionStatus
from minds.domain.planning.model import Plan, PlanOrigin
from minds.domain.resources.kinds import PLAN
from minds.domain.resources.plan import PlanResourceStatus
from minds.domain.volition.reconsideration import answer_key
from minds.domain.volition.resumption import LEFT_WAITING, PlanFacts, replanned_on_resume
from minds.engine.planning_service import PlanningService
from minds.engine.ports import Intentions, Journal, NotFound, ResourceReader


class ResumingLedger(Journal, Intentions, Protocol):
    """The ledger roles the rule reads and writes."""


#: A plan that is named but cannot be read: the rule leaves its intention alone.
_UNREADABLE = PlanFacts(phase=None)


def _facts(
    ledger: Journal, resources: ResourceReader, intention: IntentionRecord
) -> tuple[PlanFacts | None, Plan | None]:
    if intention.plan is None:
        return None, None
    try:
        body = resources.get(PLAN, intention.namespace, intention.plan)
        plan = Plan.model_validate(body.get("spec") or {})
        status = PlanResourceStatus.model_validate(body.get("status") or {})
    except (NotFound, ValidationError):
        return _UNREADABLE, None
    uid = body["metadata"]["uid"]
    # Only a plan that ended can have left its intention waiting: a running one costs no read.
    ended = status.phase in FINAL_PLAN
    facts = PlanFacts(
        phase=status.phase,
        dream=plan.origin is PlanOrigin.DREAM,
        ended_waiting=ended
        and any(ledger.event(answer_key(uid, t)) is not None for t in LEFT_WAITING),
    )
    return facts, plan


def _unchanged(ledger: Intentions, intention: IntentionRecord) -> bool:
    """Whether the ledger still holds ``intention`` as it was read: every change of an
    intention (its status, its plan) is one version later."""
    now = ledger.intention(intention.id)
    return now is not None and now.version == intention.version


def plan_resumed(
    ledger: ResumingLedger,
    resources: ResourceReader,
    planning: PlanningService,
    namespace: str,
    mind: str,
    now: datetime,
) -> int:
    """Plan each resumed intention that has no plan that can run; how many were planned."""
    planned = 0
    for intention in ledger.intentions(namespace=namespace, mind=mind):
        if intention.status is not IntentionStatus.ACTIVE:
            continue
        facts, old = _facts(ledger, resources, intention)
        if facts is _UNREADABLE or not replanned_on_resume(intention, facts):
            continue
        # The intention was read before its plan's facts, and the executor runs in another
        # thread: a plan that completed (or ended waiting) in between shows its end in the
        # facts while the intention read says it is still active, which is exactly what a
        # person's resume of a waiting intention looks like. Replanning on that would do the
        # work again (a second investigation, a second restart). The executor moves the
        # intention before it records the answer the facts read (``reconsidering.answer``), so
        # the intention read again now is at least as new as those facts: judge only an
        # intention that has not changed meanwhile; a changed one is looked at next cycle.
        if not _unchanged(ledger, intention):
            continue
        follows = old is not None and old.origin is not PlanOrigin.DREAM
        revision = old.revision + 1 if follows and old is not None else 1
        supersedes = intention.plan if follows else None
        made = planning.plan(intention, revision=revision, supersedes=supersedes)
        if made.plan_name is None:
            ledger.transition_intention(
                intention.id,
                IntentionStatus.ABANDONED,
                f"resumed, but no possible plan: {made.result.reason}"[:2000],
                now,
            )
            continue
        ledger.update_intention(intention.id, plan=made.plan_name, at=now)
        planned += 1
    return planned

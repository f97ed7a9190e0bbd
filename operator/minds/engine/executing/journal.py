"""What a transition tells: its ledger rows, written in one transaction, and the few
Kubernetes Events a person reads in ``kubectl describe``.

A transition gathers ``Entry`` values and hands them to ``tell`` once; rows keep their
idempotency keys, so a transition replayed after a crash writes nothing twice, and a notice
marked ``once`` is posted only by whoever wrote its row first.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from minds.domain.intentions import IntentionKind, IntentionRecord, intention_id
from minds.domain.ledger import EventRecord, SubjectRef, idempotency_key
from minds.domain.planning.model import Plan
from minds.domain.resources.kinds import PLAN
from minds.engine.executing.context import Deps
from minds.engine.mind_story import tell_story


@dataclass(frozen=True)
class Notice:
    """A Kubernetes Event about the Plan: for people, best effort, never the record."""

    type_: str
    reason: str
    message: str


@dataclass(frozen=True)
class Entry:
    row: EventRecord | None = None
    notice: Notice | None = None
    #: Post the notice only when this call wrote the row (not when it was already there).
    once: bool = False


def plan_row(
    deps: Deps,
    body: dict[str, Any],
    plan: Plan,
    type_: str,
    key: tuple[str, ...],
    payload: dict[str, Any],
) -> EventRecord:
    """A ledger row about the plan, keyed by the plan's uid, its type and ``key``."""
    meta = body["metadata"]
    return EventRecord(
        mind=plan.mind or "-",
        namespace=meta["namespace"],
        type=type_,
        subject=SubjectRef(kind=PLAN.kind, name=meta["name"], uid=meta["uid"]),
        payload={"intention": plan.intention, **payload},
        occurred_at=deps.clock(),
        idempotency_key=idempotency_key("plan", meta["uid"], type_, *key),
    )


def tell(deps: Deps, body: dict[str, Any], entries: Sequence[Entry]) -> list[bool]:
    """Write the entries' rows in one transaction, then post their notices; for each entry,
    whether its row was new (True for an entry without a row)."""
    fresh = write(deps, entries)
    post(deps, body, entries, fresh)
    return fresh


def write(deps: Deps, entries: Sequence[Entry]) -> list[bool]:
    """The entries' rows, in one call: for each entry, whether its row was new."""
    rows = [e.row for e in entries if e.row is not None]
    written = iter(deps.ledger.append_events(rows) if rows else [])
    return [next(written) if e.row is not None else True for e in entries]


def post(deps: Deps, body: dict[str, Any], entries: Sequence[Entry], fresh: list[bool]) -> None:
    """The entries' notices, once their rows are committed (a notice marked ``once`` only by
    whoever wrote its row)."""
    for entry, new in zip(entries, fresh, strict=True):
        if entry.notice is not None and (new or not entry.once):
            n = entry.notice
            deps.events.post(body, type_=n.type_, reason=n.reason, message=n.message)
    new_rows = (e.row for e, new in zip(entries, fresh, strict=True) if new and e.row is not None)
    tell_story(deps.events, deps.resources, new_rows)


def record(
    deps: Deps,
    body: dict[str, Any],
    plan: Plan,
    type_: str,
    key: tuple[str, ...],
    payload: dict[str, Any],
    notice: Notice | None = None,
) -> bool:
    """A transition that tells one row (and its notice, posted once): whether it was new."""
    return tell(deps, body, [Entry(plan_row(deps, body, plan, type_, key, payload), notice, True)])[
        0
    ]


def plan_intention(deps: Deps, body: dict[str, Any], plan: Plan) -> IntentionRecord:
    """The plan's intention; an operator-authored plan gets an implicit one."""
    meta = body["metadata"]
    if plan.intention:
        found = deps.ledger.intention(plan.intention)
        if found is not None:
            return found
    now = deps.clock()
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
    formed, _ = deps.ledger.form_intention(record)
    return formed

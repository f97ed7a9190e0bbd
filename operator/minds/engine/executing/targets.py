"""One writing action per target at a time, whoever planned it (the rule is
``minds.domain.execution.covering``): the target's lock, and what a step does instead of acting
when the target is busy or the action was just done by another plan."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager, nullcontext
from datetime import datetime
from typing import Any

from pydantic import ValidationError

from minds.domain.execution.covering import COVERED_FOR, covered, covering, held_off
from minds.domain.planning.model import PlanOrigin, Step, StepState
from minds.engine.executing.context import Deps


def writing_target(deps: Deps, step: Step) -> str | None:
    """The target a step writes to; None for a read, or a step that names no target (the
    capability layer refuses those on its own)."""
    spec = deps.registry.get(step.capability or "")
    if spec is None or spec.read_only:
        return None
    try:
        return spec.target_of(spec.parse(step.parameters or {}))
    except ValidationError:
        return None


@contextmanager
def holding(deps: Deps, namespace: str, target: str | None) -> Iterator[bool]:
    """Hold the target's lock for the block (always True for no target)."""
    lock = nullcontext(True) if target is None else deps.ledger.target_lock(namespace, target)
    with lock as mine:
        yield mine


def instead(
    deps: Deps,
    body: dict[str, Any],
    step: Step,
    state: StepState,
    target: str | None,
    mine: bool,
    now: datetime,
) -> StepState | None:
    """What the step becomes instead of acting: held off while another writer holds the
    target, skipped when another plan's same action, verified since, covers it; None: act."""
    if target is None:
        return None
    if not mine:
        return held_off(state, target, now)
    namespace, uid = body["metadata"]["namespace"], body["metadata"]["uid"]
    writes = deps.ledger.verified_writes_on(namespace, target, now - COVERED_FOR)
    by = covering(step.capability or "", uid, writes, now, _formed(deps, body))
    return covered(state, by, now) if by is not None else None


def _formed(deps: Deps, body: dict[str, Any]) -> datetime | None:
    """When the mind formed the intention the plan serves; None for a plan without one (a
    person's plan, whose implicit intention is formed when it first runs)."""
    spec = body.get("spec") or {}
    # A person's plan may name an intention; only the mind's own plans answer one it formed.
    intention = spec.get("intention") if spec.get("origin") != PlanOrigin.OPERATOR else None
    found = deps.ledger.intention(intention) if intention else None
    return found.created_at if found is not None else None

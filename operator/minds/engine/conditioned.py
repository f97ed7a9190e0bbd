"""Conditions ride in the status write that changes a phase.

Every writer of a Plan's or a CapabilityGrant's status (admission, the executor's transitions,
a cancellation, a grant's reconcile and its counter) hands its status to ``replace_status``;
this port adds the conditions that phase means on the way, so no writer can forget them and
none costs a request of its own. The previous conditions are read from the object the write is
conditional on, so a condition's transition time moves only when its status does. An
Approval's conditions come from the ledger with its phase (``minds.domain.approvals``), and a
Mind's from its health (``minds.domain.mind_rules``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from datetime import datetime
from typing import Any, Final

from pydantic import ValidationError

from minds.domain.planning.model import PlanStatus
from minds.domain.resources.common import Condition
from minds.domain.resources.conditions import grant_conditions, plan_conditions
from minds.domain.resources.grant import GrantPhase
from minds.domain.resources.kinds import CAPABILITY_GRANT, PLAN, Kind
from minds.engine.ports import Clock, ResourcePort

Derive = Callable[[list[Condition], Mapping[str, Any], int | None, datetime], list[Condition]]


def _previous(body: Mapping[str, Any]) -> list[Condition]:
    out = []
    for raw in (body.get("status") or {}).get("conditions") or []:
        try:
            out.append(Condition.model_validate(raw))
        except ValidationError:
            continue  # not ours to keep: derived afresh
    return out


def _plan(
    previous: list[Condition], status: Mapping[str, Any], generation: int | None, now: datetime
) -> list[Condition]:
    validation = status.get("validation")
    return plan_conditions(
        previous,
        PlanStatus(status.get("phase") or PlanStatus.DRAFT),
        valid=None if validation is None else not validation.get("errors"),
        progress=status.get("progress"),
        reason=status.get("reason"),
        generation=generation,
        now=now,
    )


def _grant(
    previous: list[Condition], status: Mapping[str, Any], generation: int | None, now: datetime
) -> list[Condition]:
    return grant_conditions(
        previous,
        GrantPhase(status.get("phase") or GrantPhase.PENDING),
        used=int(status.get("operationsUsed") or 0),
        message=status.get("message"),
        generation=generation,
        now=now,
    )


#: The kinds whose conditions follow from the status being written.
DERIVED: Final[Mapping[str, Derive]] = {PLAN.kind: _plan, CAPABILITY_GRANT.kind: _grant}


class Conditioned:
    """A ResourcePort that derives the conditions of what it writes (see the module)."""

    def __init__(self, inner: ResourcePort, clock: Clock) -> None:
        self._inner = inner
        self._clock = clock

    def replace_status(
        self, kind: Kind, body: dict[str, Any], status: dict[str, Any]
    ) -> dict[str, Any]:
        derive = DERIVED.get(kind.kind)
        if derive is not None:
            generation = (body.get("metadata") or {}).get("generation")
            derived = derive(_previous(body), status, generation, self._clock())
            status = {**status, "conditions": [c.to_k8s() for c in derived]}
        return self._inner.replace_status(kind, body, status)

    def get(self, kind: Kind, namespace: str, name: str) -> dict[str, Any]:
        return self._inner.get(kind, namespace, name)

    def select(
        self, kind: Kind, namespace: str, match: Callable[[Mapping[str, Any]], bool]
    ) -> list[dict[str, Any]]:
        return self._inner.select(kind, namespace, match)

    def list(
        self, kind: Kind, namespace: str, label_selector: str | None = None
    ) -> list[dict[str, Any]]:
        return self._inner.list(kind, namespace, label_selector)

    def create(self, kind: Kind, namespace: str, body: dict[str, Any]) -> dict[str, Any]:
        return self._inner.create(kind, namespace, body)

    def patch_spec(self, kind: Kind, body: dict[str, Any], spec: dict[str, Any]) -> dict[str, Any]:
        return self._inner.patch_spec(kind, body, spec)

    def delete(self, kind: Kind, namespace: str, name: str, uid: str) -> None:
        self._inner.delete(kind, namespace, name, uid)

"""Admit Plan resources: validate, record, and write the status they earned."""

from __future__ import annotations

from typing import Any

from pydantic import ValidationError

from minds.domain.capabilities.registry import CapabilityRegistry
from minds.domain.errors import NotFound
from minds.domain.ledger import EventRecord, EventType, SubjectRef, idempotency_key
from minds.domain.plan_admission import Admission, admit, reopens
from minds.domain.planning.views import MindView
from minds.domain.resources.kinds import MIND, PLAN
from minds.domain.resources.mind import MindSpec
from minds.domain.resources.plan import PlanResourceStatus
from minds.engine.conditional import write_status
from minds.engine.mind_story import tell_story
from minds.engine.ports import Clock, EventPort, LedgerPort, ResourcePort


class PlanService:
    def __init__(
        self,
        *,
        resources: ResourcePort,
        ledger: LedgerPort,
        events: EventPort,
        clock: Clock,
        registry: CapabilityRegistry,
    ) -> None:
        self._resources = resources
        self._ledger = ledger
        self._events = events
        self._clock = clock
        self._registry = registry

    def _mind_view(self, namespace: str, name: str | None) -> MindView | None:
        if not name:
            return None
        try:
            body = self._resources.get(MIND, namespace, name)
            spec = MindSpec.model_validate(body.get("spec") or {})
        except (NotFound, ValidationError):
            return None
        return MindView.from_spec(name, namespace, spec)

    def admit(self, namespace: str, name: str) -> Admission:
        def compute(body: dict[str, Any]) -> tuple[dict[str, Any] | None, Admission]:
            spec = body.get("spec") or {}
            current = PlanResourceStatus.model_validate(body.get("status") or {})
            # A plan past validation is left as it is: its Mind is not even looked at.
            mind = self._mind_view(namespace, spec.get("mind")) if reopens(current) else None
            generation = int(body["metadata"].get("generation", 1))
            admission = admit(spec, current, mind, generation, self._registry, self._clock())
            if not admission.changed:
                return None, admission
            # The ledger first, as every status writer does: a status written and a ledger
            # that failed meanwhile would leave the plan shown validated and never recorded
            # (the next try finds nothing to change). The row is keyed by the generation
            # read, so writing it again on a 409 or a retry adds nothing.
            self._record(body, admission)
            return admission.status.to_k8s(), admission

        _, admission = write_status(self._resources, PLAN, namespace, name, compute)
        return admission

    def _record(self, body: dict[str, Any], admission: Admission) -> None:
        meta = body["metadata"]
        spec = body.get("spec") or {}
        result = admission.result
        type_ = EventType.PLAN_VALIDATED if result.ok else EventType.PLAN_DRAFTED
        inserted = self._ledger.append_event(
            row := EventRecord(
                mind=spec.get("mind") or "-",
                namespace=meta["namespace"],
                type=type_,
                subject=SubjectRef(kind=PLAN.kind, name=meta["name"], uid=meta.get("uid")),
                payload={
                    "generation": int(meta.get("generation", 1)),
                    "origin": spec.get("origin"),
                    "strategy": spec.get("strategy"),
                    "validation": result.to_k8s(),
                },
                occurred_at=self._clock(),
                idempotency_key=idempotency_key(
                    "plan", type_.value, meta["uid"], str(meta.get("generation", 1))
                ),
            )
        )
        if not inserted:
            return
        # A valid plan says so once, on itself (``kubectl describe plan`` tells its own
        # story); a refusal too, with its first error: its author reads it there.
        tell_story(self._events, self._resources, [row])
        if not result.ok:
            first = result.errors[0]
            where = f" at {first.field}" if first.field else ""
            self._events.post(
                body,
                type_="Warning",
                reason="InvalidPlan",
                message=f"{len(result.errors)} validation error(s); first{where}: "
                f"{first.message}; the plan stays a draft and never runs",
            )

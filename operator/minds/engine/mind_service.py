"""The Mind lifecycle use case: accept a spec, record it, report readiness.

Level-triggered: every call looks at the Mind as it is now and brings the ledger and status in
line with it. Ledger rows carry idempotency keys derived from the object's uid and generation,
so a replayed call (a controller restart, a kopf retry, two controllers) writes nothing twice.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from pydantic import ValidationError

from minds.domain.ledger import EventRecord, EventType, MindRecord, SubjectRef, idempotency_key
from minds.domain.mind_rules import (
    READY,
    ReadyReason,
    SpecProblem,
    check_spec,
    health_conditions,
    ready_condition,
    spec_accepted,
)
from minds.domain.resources.common import Condition, set_condition
from minds.domain.resources.kinds import MIND
from minds.domain.resources.mind import MindSpec, MindStatus
from minds.domain.story import Reason
from minds.domain.volition.promises import KeptPromise
from minds.engine.conditional import write_status
from minds.engine.mind_health import LedgerPulse, vitals_of
from minds.engine.ports import Clock, EventPort, LedgerPort, NotFound, ResourcePort
from minds.engine.promises import Promises


@dataclass(frozen=True)
class MindOutcome:
    ready: Condition
    recorded: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class Checked:
    """What a health check found: when to look again, and whether the ledger just came back
    (the cycle, failing meanwhile, is then tried at once rather than at its backoff)."""

    again: timedelta
    recovered: bool


#: A health check runs every cycle interval, and at least this often: a Mind that cycles once a
#: day still turns not Ready soon after its ledger stops answering.
MAX_CHECK = timedelta(seconds=30)


def _subject(body: dict[str, Any]) -> SubjectRef:
    meta = body["metadata"]
    return SubjectRef(kind=MIND.kind, name=meta["name"], uid=meta.get("uid"))


def _parse_spec(raw: dict[str, Any]) -> tuple[MindSpec, list[SpecProblem]]:
    """Parse what the API server accepted; a mismatch is reported, never raised.

    It can only happen when the installed CRD is older or newer than this controller.
    """
    try:
        return MindSpec.model_validate(raw), []
    except ValidationError as exc:
        problems = [
            SpecProblem("spec." + ".".join(str(p) for p in err["loc"]), str(err["msg"]))
            for err in exc.errors()
        ]
        return MindSpec(), problems


class MindService:
    def __init__(
        self,
        *,
        resources: ResourcePort,
        ledger: LedgerPort,
        events: EventPort,
        clock: Clock,
        capabilities: frozenset[str],
        model_endpoints: frozenset[str] = frozenset(),
        promises: Promises | None = None,
    ) -> None:
        self._resources = resources
        self._ledger = ledger
        self._events = events
        self._clock = clock
        self._capabilities = capabilities
        self._model_endpoints = model_endpoints
        self._promises = promises
        self._pulse = LedgerPulse(ledger, clock)
        #: A controller that was down ran no cycle: the cycle's clock starts when it starts.
        self._started_at = clock()

    def reconcile(self, namespace: str, name: str) -> MindOutcome:
        body = self._resources.get(MIND, namespace, name)
        meta = body["metadata"]
        uid, generation = meta["uid"], int(meta.get("generation", 1))
        now = self._clock()
        spec, problems = _parse_spec(body.get("spec") or {})
        if not problems:
            problems = check_spec(spec, self._capabilities, self._model_endpoints)
        raw_spec = body.get("spec") or {}

        self._ledger.upsert_mind(
            MindRecord(
                namespace=namespace,
                name=name,
                uid=uid,
                generation=generation,
                spec=raw_spec,
                registered_at=now,
                updated_at=now,
            )
        )
        recorded: list[str] = []
        payload: dict[str, Any] = {
            "generation": generation,
            "spec": raw_spec,
            "problems": [str(p) for p in problems],
        }
        if self._append(body, EventType.MIND_REGISTERED, payload, uid, "registered"):
            recorded.append(EventType.MIND_REGISTERED)
            self._events.post(
                body,
                type_="Normal",
                reason="Registered",
                message=f"mind registered in the ledger (generation {generation})",
            )
        if generation > 1 and self._append(
            body, EventType.MIND_UPDATED, payload, uid, str(generation), "updated"
        ):
            recorded.append(EventType.MIND_UPDATED)
            self._events.post(
                body,
                type_="Normal",
                reason="Updated",
                message=f"spec change recorded (generation {generation})",
            )

        def compute(current: dict[str, Any]) -> tuple[dict[str, Any] | None, Condition]:
            status = MindStatus.model_validate(current.get("status") or {})
            cur_gen = int(current["metadata"].get("generation", 1))
            verdict = set_condition(
                status.conditions, ready_condition(spec, problems, cur_gen, now)
            )
            # The ledger just answered (the Mind was recorded): health rides in the same write.
            vitals = vitals_of(current, True, self._started_at)
            conditions = health_conditions(verdict, vitals, cur_gen, now)
            status = status.model_copy(
                update={"conditions": conditions, "observed_generation": cur_gen}
            )
            return status.to_k8s(), next(c for c in conditions if c.type == READY)

        if self._promises is not None:
            recorded += self._tell_promises(body, spec, now)
        previous = _ready_of(body)
        _, condition = write_status(self._resources, MIND, namespace, name, compute)
        if problems and (previous is None or previous.message != condition.message):
            self._events.post(
                body, type_="Warning", reason=condition.reason, message=condition.message
            )
        return MindOutcome(ready=condition, recorded=recorded)

    def check(self, namespace: str, name: str) -> Checked | None:
        """Ready and Degraded brought in line with the ledger's answer and the cycle's clock,
        written only when they change; None for a Mind that is gone or whose spec is refused
        (its conditions say so already, and it has no cycle to watch)."""
        now = self._clock()
        answers = self._pulse.answers()

        def compute(current: dict[str, Any]) -> tuple[dict[str, Any] | None, Checked | None]:
            status = MindStatus.model_validate(current.get("status") or {})
            if not spec_accepted([c.to_k8s() for c in status.conditions]):
                return None, None
            generation = int(current["metadata"].get("generation", 1))
            vitals = vitals_of(current, answers, self._started_at)
            conditions = health_conditions(status.conditions, vitals, generation, now)
            before = _ready_of(current)
            down = before is not None and before.reason == ReadyReason.LEDGER_UNAVAILABLE
            checked = Checked(min(vitals.interval, MAX_CHECK), down and answers)
            if conditions == status.conditions:
                return None, checked
            return status.model_copy(update={"conditions": conditions}).to_k8s(), checked

        try:
            _, checked = write_status(self._resources, MIND, namespace, name, compute)
        except NotFound:
            return None
        return checked

    def forget(self, body: dict[str, Any]) -> bool:
        """Record the deletion; the caller releases the finalizer once this returns."""
        meta = body["metadata"]
        now = self._clock()
        self._ledger.mark_mind_deleted(meta["namespace"], meta["name"], meta["uid"], now)
        payload = {"generation": int(meta.get("generation", 1))}
        inserted = self._append(body, EventType.MIND_DELETED, payload, meta["uid"], "deleted")
        if inserted:
            self._events.post(
                body,
                type_="Normal",
                reason="Deleted",
                message="deletion recorded in the ledger; finalizer released",
            )
        return inserted

    def _tell_promises(self, body: dict[str, Any], spec: MindSpec, now: datetime) -> list[str]:
        """Say once, in the ledger and on the Mind, each promise of an earlier object of its name
        that binds it: a person who deleted and re-created it learns it was not a way out."""
        assert self._promises is not None
        told: list[str] = []
        for promise in self._promises.kept(body, spec, now).commitments:
            if not isinstance(promise, KeptPromise):
                continue  # the Mind's own
            until = promise.expires_at.isoformat() if promise.expires_at else "it is kept for ever"
            message = (
                f"irrevocable commitment {promise.name} ({promise.mode.value} "
                f"{promise.capability} on {promise.target}), made by {promise.kept_from}, "
                f"binds this Mind; deleting a Mind does not end its promises (expires: {until})"
            )
            payload = {"commitment": promise.model_dump(mode="json", by_alias=True)}
            uid = body["metadata"]["uid"]
            if self._append(body, EventType.PROMISE_KEPT, payload, uid, promise.name, "kept"):
                told.append(EventType.PROMISE_KEPT)
                self._events.post(
                    body, type_="Warning", reason=Reason.PROMISE_KEPT, message=message
                )
        return told

    def _append(
        self, body: dict[str, Any], type_: EventType, payload: dict[str, Any], *key: str
    ) -> bool:
        meta = body["metadata"]
        return self._ledger.append_event(
            EventRecord(
                mind=meta["name"],
                namespace=meta["namespace"],
                type=type_,
                subject=_subject(body),
                payload=payload,
                occurred_at=self._clock(),
                idempotency_key=idempotency_key("mind", type_.value, *key),
            )
        )


def _ready_of(body: dict[str, Any]) -> Condition | None:
    for raw in (body.get("status") or {}).get("conditions") or []:
        if raw.get("type") == READY:
            try:
                return Condition.model_validate(raw)
            except ValidationError:
                return None
    return None

"""Forking a mind: a new Mind that inherits what the source knows, none of what it is doing.

The fork is created inactive, so it does nothing until a person activates it.

The fork gets the source's spec (goals, values, commitments, policy), its beliefs, wants and
procedural memories. Inherited intentions arrive suspended; no plan, Approval or grant is
copied: approvals and grants were given to the source and stay with it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from minds.domain.intentions import IntentionRecord, IntentionStatus, intention_id
from minds.domain.ledger import EventRecord, SubjectRef, idempotency_key
from minds.domain.procedures import ProceduralMemory
from minds.domain.resources.kinds import MIND
from minds.domain.volition.wants import WantOrigin, want_id
from minds.engine.ports import (
    AlreadyExists,
    Beliefs,
    Clock,
    Intentions,
    Journal,
    Procedures,
    ResourcePort,
    VolitionStore,
)

LIVE = (
    IntentionStatus.ACTIVE,
    IntentionStatus.BLOCKED,
    IntentionStatus.SUSPENDED,
    IntentionStatus.OUTCOME_UNVERIFIED,
)


@dataclass(frozen=True)
class Forked:
    name: str
    beliefs: int
    wants: int
    procedures: int
    intentions: int


class ForkLedger(Journal, Beliefs, Intentions, Procedures, VolitionStore, Protocol):
    """What a fork reads of its source and writes for the new mind."""


class ForkService:
    def __init__(self, *, resources: ResourcePort, ledger: ForkLedger, clock: Clock) -> None:
        self._resources = resources
        self._ledger = ledger
        self._clock = clock

    def fork(self, namespace: str, source: str, new: str) -> Forked:
        now = self._clock()
        body = self._resources.get(MIND, namespace, source)
        try:
            self._resources.create(
                MIND,
                namespace,
                {
                    "metadata": {
                        "name": new,
                        "namespace": namespace,
                        "annotations": {"minds.dev/forked-from": source},
                    },
                    # A fork starts inactive: two minds acting on the same goals is a decision
                    # for a person to make by setting spec.active.
                    "spec": {**(body.get("spec") or {}), "active": False},
                },
            )
        except AlreadyExists as exc:
            raise ValueError(f"a Mind named {new} already exists in {namespace}") from exc
        beliefs = self._ledger.beliefs(namespace, source)
        for belief in beliefs:
            self._ledger.upsert_belief(namespace, new, belief.statement, belief.confidence, now)
        wants = self._ledger.wants(namespace, source)
        for want in wants:
            # The id a want of the new mind would have, so its own cycle reinforces the copy
            # instead of deriving a duplicate beside it.
            copy = {
                **want,
                "mind": new,
                "id": want_id(namespace, new, str(want["subject"]), WantOrigin(want["origin"])),
            }
            self._ledger.upsert_want(
                namespace=namespace,
                mind=new,
                want_id=copy["id"],
                subject=str(want.get("subject", "")),
                status=str(want.get("status", "active")),
                strength=float(want.get("strength", 0.0)),
                data=copy,
                at=now,
            )
        procedures = self._ledger.procedures(namespace, source)
        for memory in procedures:
            self._ledger.store_procedure(
                ProceduralMemory(
                    **{
                        **memory.model_dump(),
                        "id": f"{memory.id}-{new}"[:200],
                        "mind": new,
                        "created_at": now,
                    }
                )
            )
        inherited = 0
        for intention in self._ledger.intentions(namespace=namespace, mind=source):
            if intention.status not in LIVE:
                continue
            inherited_copy = IntentionRecord(
                id=intention_id("fork", new, intention.id),
                namespace=namespace,
                mind=new,
                objective=intention.objective,
                kind=intention.kind,
                subject=intention.subject,
                means_capability=intention.means_capability,
                means_parameters=intention.means_parameters,
                requires_approval=intention.requires_approval,
                created_at=now,
                updated_at=now,
            )
            self._ledger.form_intention(inherited_copy)
            self._ledger.transition_intention(
                inherited_copy.id,
                IntentionStatus.SUSPENDED,
                f"inherited from {source} by fork; its work stays with {source}",
                now,
            )
            inherited += 1
        self._ledger.append_event(
            EventRecord(
                mind=new,
                namespace=namespace,
                type="mind_forked",
                subject=SubjectRef(kind=MIND.kind, name=new),
                payload={
                    "from": source,
                    "beliefs": len(beliefs),
                    "wants": len(wants),
                    "procedures": len(procedures),
                    "intentions": inherited,
                },
                occurred_at=now,
                idempotency_key=idempotency_key("fork", namespace, source, new),
            )
        )
        return Forked(new, len(beliefs), len(wants), len(procedures), inherited)

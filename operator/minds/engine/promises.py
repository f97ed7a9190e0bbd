"""The promises a Mind keeps from the earlier objects of its name, read from the ledger
(``minds.domain.volition.promises`` says which bind it).

Every spec a Mind object registered is in the ledger (its `mind_registered` and `mind_updated`
rows). The earlier objects of a name are gone and their rows never change, so what they
promised is read once per Mind object (its uid) and remembered: an action, a cycle and a review
cost no ledger read for it after the first.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Iterable
from datetime import datetime
from typing import Any, Final, Protocol

from pydantic import ValidationError

from minds.domain.ledger import EventRecord, EventType
from minds.domain.resources.mind import Commitment, MindSpec
from minds.domain.volition.promises import Declared, KeptPromise, kept, promises

__all__ = ["MindHistory", "Promises"]

#: Mind objects whose promises are remembered at once (the least recently read go first).
REMEMBERED: Final = 4096

_DECLARING: Final = (EventType.MIND_REGISTERED.value, EventType.MIND_UPDATED.value)


class MindHistory(Protocol):
    """The ledger's rows about Mind objects."""

    def events(
        self,
        *,
        mind: str | None = None,
        namespace: str | None = None,
        type: str | Iterable[str] | None = None,
    ) -> list[EventRecord]: ...


def _commitments(spec: Any) -> tuple[Commitment, ...]:
    """The commitments a recorded spec declared; one that no longer parses binds nothing it
    did not say clearly (each is read on its own)."""
    raw = spec.get("commitments") if isinstance(spec, dict) else None
    found: list[Commitment] = []
    for item in raw if isinstance(raw, list) else ():
        try:
            found.append(Commitment.model_validate(item))
        except ValidationError:
            continue
    return tuple(found)


class Promises:
    def __init__(self, history: MindHistory) -> None:
        self._history = history
        self._made: OrderedDict[tuple[str, str, str], tuple[KeptPromise, ...]] = OrderedDict()

    def made_before(self, namespace: str, name: str, uid: str) -> tuple[KeptPromise, ...]:
        """What the Mind objects of ``name`` before the one of ``uid`` promised."""
        key = (namespace, name, uid)
        if key in self._made:
            self._made.move_to_end(key)
            return self._made[key]
        last: dict[str, Declared] = {}
        for row in self._history.events(mind=name, namespace=namespace, type=_DECLARING):
            other = row.subject.uid
            if other is None or other == uid:
                continue
            first = last[other].at if other in last else row.occurred_at
            last[other] = Declared(other, first, _commitments(row.payload.get("spec")))
        made = promises(sorted(last.values(), key=lambda d: d.at), name)
        self._made[key] = made
        if len(self._made) > REMEMBERED:
            self._made.popitem(last=False)
        return made

    def kept(self, body: dict[str, Any], spec: MindSpec, now: datetime) -> MindSpec:
        """The spec of the Mind ``body`` with the promises it keeps."""
        meta = body["metadata"]
        uid = meta.get("uid")
        if not uid:
            return spec
        return kept(spec, self.made_before(meta["namespace"], meta["name"], uid), now)

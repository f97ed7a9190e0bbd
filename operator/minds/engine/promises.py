"""The promises a Mind keeps from the earlier objects of its name, read from the ledger
(``minds.domain.volition.promises`` says which bind it).

Every spec a Mind object registered is in the ledger (its `mind_registered` and `mind_updated`
rows), and when each ended (`mind_deleted`). The earlier objects of a name are gone and their
rows never change, so what they left is read once per Mind object (its uid) and remembered: an
action, a cycle and a review cost no ledger read for it after the first.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Iterable
from datetime import datetime
from typing import Any, Final, NamedTuple, Protocol

from pydantic import ValidationError

from minds.domain.ledger import EventRecord, EventType
from minds.domain.resources.mind import Commitment, MindSpec
from minds.domain.volition.promises import Declared, KeptPromise, kept, promises

__all__ = ["Earlier", "MindHistory", "Promises"]

#: Mind objects whose promises are remembered at once (the least recently read go first).
REMEMBERED: Final = 4096

_DECLARING: Final = (EventType.MIND_REGISTERED.value, EventType.MIND_UPDATED.value)
#: What is read of the earlier objects: what they declared, and when they ended.
_READ: Final = (*_DECLARING, EventType.MIND_DELETED.value)


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


class Earlier(NamedTuple):
    """What the earlier objects of a Mind's name left it."""

    #: Their promises (``minds.domain.volition.promises.promises``).
    promises: tuple[KeptPromise, ...]
    #: When the last of them ended: its deletion as the ledger recorded it (or, for one deleted
    #: while no controller ran, its last row); None when there was none.
    ended_at: datetime | None


class Promises:
    def __init__(self, history: MindHistory) -> None:
        self._history = history
        self._earlier: OrderedDict[tuple[str, str, str], Earlier] = OrderedDict()
        # Handlers, the cycle and the executor read from their own threads.
        self._lock = threading.Lock()

    def earlier(self, namespace: str, name: str, uid: str) -> Earlier:
        """What the Mind objects of ``name`` other than the one of ``uid`` left it."""
        key = (namespace, name, uid)
        with self._lock:
            if key in self._earlier:
                self._earlier.move_to_end(key)
                return self._earlier[key]
        declared: dict[str, Declared] = {}
        last: datetime | None = None
        deleted: datetime | None = None
        for row in self._history.events(mind=name, namespace=namespace, type=_READ):
            other = row.subject.uid
            if other is None or other == uid:
                continue
            last = row.occurred_at if last is None else max(last, row.occurred_at)
            if row.type == EventType.MIND_DELETED.value:
                deleted = row.occurred_at if deleted is None else max(deleted, row.occurred_at)
                continue
            first = declared[other].at if other in declared else row.occurred_at
            declared[other] = Declared(other, first, _commitments(row.payload.get("spec")))
        made = promises(sorted(declared.values(), key=lambda d: d.at), name)
        found = Earlier(made, deleted or last)
        with self._lock:
            self._earlier[key] = found
            if len(self._earlier) > REMEMBERED:
                self._earlier.popitem(last=False)
        return found

    def of(self, body: dict[str, Any]) -> Earlier:
        """What the earlier objects of the Mind ``body``'s name left it."""
        meta = body["metadata"]
        uid = meta.get("uid")
        if not uid:
            return Earlier((), None)
        return self.earlier(meta["namespace"], meta["name"], uid)

    def kept(self, body: dict[str, Any], spec: MindSpec, now: datetime) -> MindSpec:
        """The spec of the Mind ``body`` with the promises it keeps."""
        return kept(spec, self.of(body).promises, now)

"""Tell, on the Mind or on the Plan, what their ledger rows say happened (``minds.domain.story``
decides which rows and on whom).

Called with rows just written, and only those that were new: a transition replayed after a
crash writes no row twice and so tells nothing twice.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from minds.domain.ledger import EventRecord
from minds.domain.resources.kinds import KINDS, MIND
from minds.domain.story import Teller, told
from minds.engine.ports import EventPort, NotFound, ResourceReader

_BY_KIND = {kind.kind: kind for kind in KINDS}


def _teller(resources: ResourceReader, row: EventRecord, on: Teller) -> dict[str, Any] | None:
    """The object whose Events tell ``row``; None when it is gone (nobody to tell)."""
    if on is Teller.MIND:
        if row.mind == "-":  # an operator's plan that names no mind
            return None
        kind, name, uid = MIND, row.mind, None
    else:
        subject = _BY_KIND.get(row.subject.kind)
        if subject is None:
            return None
        kind, name, uid = subject, row.subject.name, row.subject.uid
    try:
        body = resources.get(kind, row.namespace, name)
    except NotFound:
        return None
    # A Plan re-created under the same name is another plan: it was not this one's story.
    return None if uid and body["metadata"].get("uid") != uid else body


def tell_story(events: EventPort, resources: ResourceReader, rows: Iterable[EventRecord]) -> None:
    for row in rows:
        story = told(row)
        if story is None:
            continue
        body = _teller(resources, row, story.on)
        if body is not None:
            events.post(body, type_=story.type_, reason=story.reason, message=story.message)

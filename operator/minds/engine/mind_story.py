"""Tell on the Mind what its ledger rows say it did (``minds.domain.story`` decides which).

Called with rows just written, and only those that were new: a transition replayed after a
crash writes no row twice and so tells nothing twice.
"""

from __future__ import annotations

from collections.abc import Iterable

from minds.domain.ledger import EventRecord
from minds.domain.resources.kinds import MIND
from minds.domain.story import told
from minds.engine.ports import EventPort, NotFound, ResourceReader


def tell_mind(events: EventPort, resources: ResourceReader, rows: Iterable[EventRecord]) -> None:
    for row in rows:
        story = told(row)
        if story is None or row.mind == "-":  # "-": an operator's plan that names no mind
            continue
        try:
            body = resources.get(MIND, row.namespace, row.mind)
        except NotFound:  # deleted meanwhile: nobody to tell
            continue
        events.post(body, type_=story.type_, reason=story.reason, message=story.message)

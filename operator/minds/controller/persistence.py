"""kopf's diff base, built without copying what it throws away.

kopf builds an "essence" of every object on every watch event: it deep-copies the whole body,
then drops ``status`` and most of ``metadata``. For a Plan, whose status grows with every step
and whose managedFields grow with every writer, that copy costs more than everything our
handlers do with the event. The essence is the same when the body handed to kopf's builder
lacks what the builder drops, so we hand it that.

Kinds whose handlers are all raw-event handlers (level-triggered: they compare what is there,
never what changed) have no use for an essence at all: kopf reads it only for change and
daemon handlers. Theirs is empty.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, cast

import kopf

#: Parts of metadata the builder never keeps (it keeps labels and annotations, and reads
#: ownerReferences to name its keys).
_DROPPED_METADATA = ("managedFields",)


class SpecEssenceStorage(kopf.AnnotationsDiffBaseStorage):
    def __init__(self, *, level_triggered: frozenset[str] = frozenset(), **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self._level_triggered = level_triggered

    def build(
        self, *, body: kopf.Body, extra_fields: Iterable[kopf.FieldSpec] | None = None
    ) -> kopf.BodyEssence:
        if body.get("kind") in self._level_triggered:
            return kopf.BodyEssence()
        fields = list(extra_fields or [])
        trimmed = kopf.Body(cast(kopf.RawBody, _trimmed(body, fields)))
        return super().build(body=trimmed, extra_fields=fields)


def _trimmed(body: kopf.Body, extra_fields: list[kopf.FieldSpec]) -> dict[str, Any]:
    keeps_status = any(_first_name(field) == "status" for field in extra_fields)
    trimmed = {key: value for key, value in body.items() if keeps_status or key != "status"}
    meta = body.get("metadata")
    if isinstance(meta, dict):
        trimmed["metadata"] = {k: v for k, v in meta.items() if k not in _DROPPED_METADATA}
    return trimmed


def _first_name(field: kopf.FieldSpec) -> str | None:
    """The top-level key a kopf field names ("status.phase", ("status", "phase"), None)."""
    if isinstance(field, str):
        return field.split(".", 1)[0]
    if isinstance(field, tuple | list) and field:
        return str(field[0])
    return None

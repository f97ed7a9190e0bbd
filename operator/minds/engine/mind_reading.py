"""A Mind's spec as the engine reads it: from the controller's copy, None when there is none
that parses (a Mind being deleted, or one admission let through in an older shape); with
``promises``, with the promises earlier objects of its name made (``minds.engine.promises``)."""

from __future__ import annotations

from datetime import datetime

from pydantic import ValidationError

from minds.domain.resources.kinds import MIND
from minds.domain.resources.mind import MindSpec
from minds.engine.ports import NotFound, ResourceReader
from minds.engine.promises import Promises


def mind_spec(
    resources: ResourceReader,
    namespace: str,
    name: str | None,
    promises: tuple[Promises, datetime] | None = None,
) -> MindSpec | None:
    if not name:
        return None
    try:
        body = resources.get(MIND, namespace, name)
        spec = MindSpec.model_validate(body["spec"])
    except (NotFound, ValidationError, KeyError):
        return None
    if promises is None:
        return spec
    kept, now = promises
    return kept.kept(body, spec, now)

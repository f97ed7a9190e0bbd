"""A Mind's spec as the engine reads it: from the controller's copy, None when there is none
that parses (a Mind being deleted, or one admission let through in an older shape)."""

from __future__ import annotations

from pydantic import ValidationError

from minds.domain.resources.kinds import MIND
from minds.domain.resources.mind import MindSpec
from minds.engine.ports import NotFound, ResourceReader


def mind_spec(resources: ResourceReader, namespace: str, name: str | None) -> MindSpec | None:
    if not name:
        return None
    try:
        return MindSpec.model_validate(resources.get(MIND, namespace, name)["spec"])
    except (NotFound, ValidationError, KeyError):
        return None

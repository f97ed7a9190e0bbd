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


def acting_mind(
    resources: ResourceReader, namespace: str, name: str, promises: Promises, now: datetime
) -> tuple[MindSpec | None, str]:
    """The spec an action of the Mind is judged by (its promises kept), or None and why not:
    gone, unreadable, or inactive (an inactive mind never acts)."""
    try:
        body = resources.get(MIND, namespace, name)
    except NotFound:
        return None, f"mind {namespace}/{name} not found"
    try:
        spec = MindSpec.model_validate(body.get("spec") or {})
    except ValidationError:
        return None, f"mind {namespace}/{name} has a spec this controller cannot read"
    if not spec.active:
        return None, f"mind {namespace}/{name} is inactive: inactive minds never act"
    return promises.kept(body, spec, now), ""

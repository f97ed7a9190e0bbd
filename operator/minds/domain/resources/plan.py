"""The ``Plan`` custom resource: the plan model as spec, the live step state machine as status."""

from __future__ import annotations

from typing import Annotated

from pydantic import Field

from minds.domain.planning.model import Budget, Plan, PlanStatusBlock, ResourceUse
from minds.domain.resources.common import API_GROUP

#: The spec of a Plan resource is the plan itself: one model, rendered both ways.
PlanSpec = Plan

#: A person asks for a blocked step to run again by setting this annotation on the Plan to
#: ``<step>:<who>``; the controller releases the step and removes the annotation.
RELEASE_ANNOTATION = f"{API_GROUP}/release"


class PlanResourceStatus(PlanStatusBlock):
    """Status adds what ``kubectl get plans`` shows at a glance."""

    progress: Annotated[str, Field(max_length=32)] | None = None
    #: The budget the executor enforces: the plan's, never more than its mind allows.
    budget: Budget | None = None
    #: What the plan is expected to cost, computed at admission (not trusted from the spec).
    estimate: ResourceUse | None = None
    waiting_on: Annotated[str, Field(max_length=253)] | None = None
    observed_generation: int | None = None

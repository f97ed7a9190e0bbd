"""The ``Plan`` custom resource: the plan model as spec, the live step state machine as status."""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass
from typing import Annotated

from pydantic import Field

from minds.domain.planning.model import Budget, Plan, PlanStatusBlock, ResourceUse
from minds.domain.resources.common import API_GROUP, Condition

#: The spec of a Plan resource is the plan itself: one model, rendered both ways.
PlanSpec = Plan

#: A person asks for a blocked step to run again by setting this annotation on the Plan to
#: ``<step>:<who>``; the controller releases the step and removes the annotation.
RELEASE_ANNOTATION = f"{API_GROUP}/release"

#: Kubernetes names every request made with a ServiceAccount token so; none is a person.
SERVICE_ACCOUNT_PREFIX = "system:serviceaccount:"


@dataclass(frozen=True)
class Release:
    """A person's release of one blocked step, as the annotation names it."""

    step: str
    by: str


@dataclass(frozen=True)
class ReleaseRefused:
    reason: str


def read_release(value: str, steps: Collection[str]) -> Release | ReleaseRefused:
    """The annotation parsed whole: the first ``:`` ends the step key (keys have none) and all
    the rest is the name, so ``P1:alice:approver`` is released by ``alice:approver``, never by
    ``approver``. Admission already holds all of this; the controller holds it again, since a
    value admitted by a cluster without the policy must not be acted on in a name it does not
    carry."""
    step, colon, by = value.partition(":")
    if not colon or not step or not by:
        return ReleaseRefused(f"{RELEASE_ANNOTATION} must be STEP:USERNAME, not {value!r}")
    if step not in steps:
        return ReleaseRefused(
            f"{RELEASE_ANNOTATION} names step {step!r}, which this plan does not have"
            f" (its steps: {', '.join(steps) or 'none'})"
        )
    if by.startswith(SERVICE_ACCOUNT_PREFIX):
        return ReleaseRefused(f"{by} is a service account: a person releases a step")
    return Release(step, by)


class PlanResourceStatus(PlanStatusBlock):
    """Status adds what ``kubectl get plans`` shows at a glance."""

    progress: Annotated[str, Field(max_length=32)] | None = None
    #: The budget the executor enforces: the plan's, never more than its mind allows.
    budget: Budget | None = None
    #: What the plan is expected to cost, computed at admission (not trusted from the spec).
    estimate: ResourceUse | None = None
    waiting_on: Annotated[str, Field(max_length=253)] | None = None
    observed_generation: int | None = None
    #: Validated, Progressing, then Complete and Failed once it finished (like a Job), derived
    #: from the phase in the write that changes it (``minds.domain.resources.conditions``).
    conditions: list[Condition] = Field(default_factory=list, max_length=8)

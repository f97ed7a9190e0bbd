"""Four eyes: who wrote the plan that asks, and so may not approve its steps.

The admission policy makes a Plan's ``spec.author`` the authenticated requester who created
it; the controller copies it into each Approval that plan raises (admission then refuses that
person's decision) and checks it again before recording an approval.
"""

from __future__ import annotations

from minds.domain.errors import NotFound
from minds.domain.resources.approval import ApprovalOrigin, Approvers, MindApprovers
from minds.domain.resources.kinds import PLAN
from minds.engine.ports import ResourcePort


def plan_author(
    resources: ResourcePort, namespace: str, origin: ApprovalOrigin, approvers: MindApprovers
) -> str | None:
    """The person who may not approve for ``origin``: the author of the very Plan (its uid)
    that asks, unless the Mind lets plan authors approve. None: four eyes do not apply."""
    if approvers.plan_authors_may_approve or not origin.plan:
        return None
    try:
        plan = resources.get(PLAN, namespace, origin.plan)
    except NotFound:
        return None
    if plan["metadata"].get("uid") != origin.plan_uid:
        return None
    author = (plan.get("spec") or {}).get("author")
    return author if isinstance(author, str) and author else None


def asked_of(
    resources: ResourcePort, namespace: str, origin: ApprovalOrigin, approvers: MindApprovers
) -> dict[str, Approvers | str | None]:
    """Who a new Approval asks, fixed into its spec: the Mind's approvers now, and the author
    who may not decide."""
    return {
        "approvers": Approvers(users=approvers.users, groups=approvers.groups),
        "author": plan_author(resources, namespace, origin, approvers),
    }

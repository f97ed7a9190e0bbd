"""What a capability step invokes, and under which origin key: built from the Plan alone, so
the step, its budget check (a policy preview) and an approved action all ask the same thing.
"""

from __future__ import annotations

from typing import Any

from minds.domain.planning.model import Plan, Step
from minds.domain.resources.approval import Explanation
from minds.engine.invocations import Invocation as CapabilityInvocation
from minds.engine.invocations import Origin


def origin(body: dict[str, Any], plan: Plan, step: Step, attempt: int) -> Origin:
    meta = body["metadata"]
    return Origin(
        mind=plan.mind or "-",
        intention=plan.intention,
        plan=meta["name"],
        plan_uid=meta["uid"],
        step=step.key,
        attempt=max(1, attempt),
    )


def _explanation(plan: Plan, step: Step) -> Explanation:
    expected = step.expectation.description if step.expectation else ""
    return Explanation(
        what=f"{step.title} ({step.capability} on {step.target or 'its target'})"[:4096],
        why=plan.objective[:4096],
        expected_outcome=expected[:4096],
        side_effects=(plan.risk or "")[:4096],
        alternatives=[
            f"{a.strategy.value}: {a.reason}"[:4096] for a in plan.alternatives if not a.selected
        ][:16],
    )


def invocation(body: dict[str, Any], plan: Plan, step: Step, attempt: int) -> CapabilityInvocation:
    """What a capability step invokes: built from the Plan alone, whether it runs at once or
    after a person approved it."""
    return CapabilityInvocation(
        namespace=body["metadata"]["namespace"],
        capability=step.capability or "",
        parameters=dict(step.parameters or {}),
        origin=origin(body, plan, step, attempt),
        explanation=_explanation(plan, step),
        evidence={"intention": plan.intention, "plan": body["metadata"]["name"], "step": step.key},
        require_approval=step.requires_approval,
        batch_key=plan.intention,
    )

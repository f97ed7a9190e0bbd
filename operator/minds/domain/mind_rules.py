"""What a Mind's spec means once the schema has accepted it.

The API server refuses what the CRD schema and its CEL rules can express. What is left is
checked here: rules that need the capability vocabulary, or that relate fields the schema sees
separately. The result is a Ready condition whose reason and message name the field, and the
ledger events that record the mind's lifecycle.
"""

from __future__ import annotations

import fnmatch
from collections.abc import Collection
from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum

from minds.domain.resources.common import Condition, ConditionStatus
from minds.domain.resources.mind import MindSpec

READY = "Ready"


class ReadyReason(StrEnum):
    ACCEPTED = "Accepted"
    INVALID_SPEC = "InvalidSpec"
    INACTIVE = "Inactive"


@dataclass(frozen=True)
class SpecProblem:
    """One thing wrong with a spec, with the path of the field as ``kubectl explain`` names it."""

    field: str
    message: str

    def __str__(self) -> str:
        return f"{self.field}: {self.message}"


def _matches_any(pattern: str, capabilities: Collection[str]) -> bool:
    return any(fnmatch.fnmatchcase(name, pattern) for name in capabilities)


def check_spec(
    spec: MindSpec, capabilities: Collection[str], model_endpoints: Collection[str] = ()
) -> list[SpecProblem]:
    """Problems the schema cannot see: capability names and patterns that match nothing, and a
    model endpoint the controller's configuration does not list.

    A pattern that matches no registered capability is almost always a typo, and a typo in a
    ``refrain`` commitment or a ``deny`` rule would silently protect nothing: refuse it.
    """
    problems: list[SpecProblem] = []
    if spec.model is not None and spec.model.endpoint not in model_endpoints:
        listed = ", ".join(sorted(model_endpoints)) or "none"
        problems.append(
            SpecProblem(
                "spec.model.endpoint",
                f"{spec.model.endpoint!r} is not a model endpoint of this controller "
                f"(configured: {listed}); the cluster admin chooses the endpoints",
            )
        )
    for i, name in enumerate(spec.locked_capabilities):
        if name not in capabilities:
            problems.append(
                SpecProblem(f"spec.lockedCapabilities[{i}]", f"unknown capability {name!r}")
            )
    for i, rule in enumerate(spec.capability_policy):
        if not _matches_any(rule.capability, capabilities):
            problems.append(
                SpecProblem(
                    f"spec.capabilityPolicy[{i}].capability",
                    f"{rule.capability!r} matches no registered capability",
                )
            )
    for i, commitment in enumerate(spec.commitments):
        if not _matches_any(commitment.capability, capabilities):
            problems.append(
                SpecProblem(
                    f"spec.commitments[{i}].capability",
                    f"{commitment.capability!r} matches no registered capability",
                )
            )
    for i, value in enumerate(spec.values):
        for j, pattern in enumerate(value.avoid):
            if not _matches_any(pattern, capabilities):
                problems.append(
                    SpecProblem(
                        f"spec.values[{i}].avoid[{j}]",
                        f"{pattern!r} matches no registered capability",
                    )
                )
    return problems


def ready_condition(
    spec: MindSpec, problems: list[SpecProblem], generation: int, now: datetime
) -> Condition:
    if problems:
        listed = "; ".join(str(p) for p in problems[:10])
        more = f" (and {len(problems) - 10} more)" if len(problems) > 10 else ""
        return Condition(
            type=READY,
            status=ConditionStatus.FALSE,
            reason=ReadyReason.INVALID_SPEC,
            message=f"{listed}{more}",
            last_transition_time=now,
            observed_generation=generation,
        )
    if not spec.active:
        return Condition(
            type=READY,
            status=ConditionStatus.TRUE,
            reason=ReadyReason.INACTIVE,
            message="accepted; inactive minds observe nothing and never act",
            last_transition_time=now,
            observed_generation=generation,
        )
    return Condition(
        type=READY,
        status=ConditionStatus.TRUE,
        reason=ReadyReason.ACCEPTED,
        message="spec accepted",
        last_transition_time=now,
        observed_generation=generation,
    )

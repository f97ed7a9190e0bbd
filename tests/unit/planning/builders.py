"""Small builders for plans, minds and intentions, in the resource's own spelling."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from minds.domain.capabilities.policy import GrantView, PolicyDecision, PolicyRule
from minds.domain.capabilities.registry import REGISTRY
from minds.domain.planning.model import Plan, ValidationResult
from minds.domain.planning.validation import validate
from minds.domain.planning.views import (
    FailedAttempt,
    IntentionKind,
    IntentionView,
    Means,
    MindView,
    Workload,
)

NOW = datetime(2025, 3, 1, 12, 0, tzinfo=UTC)
WORKLOAD = {"namespace": "prod", "name": "atlas"}
TARGET = "prod/atlas"


def status_check(**over: Any) -> dict[str, Any]:
    return {
        "capability": "service.status",
        "parameters": dict(WORKLOAD),
        "field": "state",
        "comparison": "equals",
        "value": "running",
    } | over


def expectation(**over: Any) -> dict[str, Any]:
    return {
        "description": "atlas runs normally within 60 s",
        "check": status_check(),
        "confidence": 0.8,
        "windowSeconds": 60,
    } | over


def restart(**over: Any) -> dict[str, Any]:
    return {
        "key": "P1",
        "title": "restart atlas",
        "kind": "capability",
        "capability": "service.restart",
        "parameters": dict(WORKLOAD),
        "target": TARGET,
        "expectation": expectation(),
    } | over


def status(**over: Any) -> dict[str, Any]:
    return {
        "key": "D1",
        "title": "read atlas status",
        "kind": "capability",
        "capability": "service.status",
        "parameters": dict(WORKLOAD),
    } | over


def verify(**over: Any) -> dict[str, Any]:
    return {
        "key": "V1",
        "title": "verify atlas runs",
        "kind": "verify",
        "dependsOn": ["P1"],
        "verifies": "P1",
    } | over


def wait(key: str, *depends_on: str, **over: Any) -> dict[str, Any]:
    return {
        "key": key,
        "title": f"wait {key}",
        "kind": "wait",
        "waitSeconds": 5,
        "dependsOn": list(depends_on),
    } | over


def monitor(**over: Any) -> dict[str, Any]:
    return {
        "key": "M1",
        "title": "monitor atlas",
        "kind": "monitor",
        "check": status_check(),
        "stableSeconds": 900,
        "deadlineSeconds": 3600,
    } | over


def summary(*depends_on: str, **over: Any) -> dict[str, Any]:
    return {
        "key": "S1",
        "title": "summarise",
        "kind": "internal",
        "internalAction": "summarise_findings",
        "dependsOn": list(depends_on),
    } | over


def request(**over: Any) -> dict[str, Any]:
    return {
        "key": "R1",
        "title": "ask for logs",
        "kind": "request_capability",
        "request": {
            "capability": "logs.query",
            "targetPattern": TARGET,
            "durationSeconds": 1800,
            "operationCap": 20,
            "reason": "diagnose atlas",
            "risk": "logs may contain personal identifiers",
            "mitigation": "masking on by default",
            "fallback": "ask the operator",
        }
        | over,
    }


def plan(*steps: dict[str, Any], **over: Any) -> Plan:
    return Plan.model_validate(
        {
            "objective": "atlas runs normally",
            "origin": "operator",
            "strategy": "authored",
            "steps": list(steps),
        }
        | over
    )


def mind(**over: Any) -> MindView:
    return MindView(name="caretaker", namespace="prod", **over)


def check(p: Plan, m: MindView | None = None) -> ValidationResult:
    return validate(p, REGISTRY, m or mind())


def error_codes(result: ValidationResult) -> set[str]:
    return {issue.code.value for issue in result.errors}


def warning_codes(result: ValidationResult) -> set[str]:
    return {issue.code.value for issue in result.warnings}


def rule(capability: str, decision: str, target: str = "*") -> PolicyRule:
    return PolicyRule(capability=capability, target=target, decision=PolicyDecision(decision))


def grant(capability: str = "logs.query", target: str = TARGET, **over: Any) -> GrantView:
    return GrantView.model_validate(
        {
            "namespace": "prod",
            "name": "logs-atlas",
            "capability": capability,
            "targetPattern": target,
            "expiresAt": NOW + timedelta(minutes=30),
            "operationsRemaining": 20,
        }
        | over
    )


def restart_intention(**over: Any) -> IntentionView:
    return IntentionView.model_validate(
        {
            "id": "int-1",
            "objective": "prod/atlas runs normally",
            "kind": IntentionKind.ACTION,
            "subject": TARGET,
            "means": Means(capability="service.restart", parameters=dict(WORKLOAD)),
        }
        | over
    )


def investigation(**over: Any) -> IntentionView:
    return IntentionView.model_validate(
        {
            "id": "int-2",
            "objective": "find out why prod/atlas is degraded",
            "kind": IntentionKind.INVESTIGATION,
            "subject": TARGET,
            "workload": Workload(namespace="prod", name="atlas"),
        }
        | over
    )


def failed(strategy: str, revision: int = 1, summary: str = "") -> FailedAttempt:
    return FailedAttempt.model_validate(
        {"strategy": strategy, "revision": revision, "summary": summary}
    )

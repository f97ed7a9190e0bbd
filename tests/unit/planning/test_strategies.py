"""Each deterministic strategy: when it applies, and the plan it makes."""

from __future__ import annotations

from datetime import timedelta

import pytest

from minds.domain.capabilities.registry import REGISTRY
from minds.domain.planning.model import (
    Comparison,
    InternalAction,
    StepKind,
)
from minds.domain.planning.strategies import (
    PREFERENCE,
    Context,
    Draft,
    NotApplicable,
    diagnose,
    diagnose_then_escalate,
    direct,
)
from minds.domain.planning.views import IntentionView, Means, MindView, Workload

from .builders import (
    NOW,
    TARGET,
    WORKLOAD,
    failed,
    grant,
    investigation,
    mind,
    restart_intention,
    rule,
)


def ctx(intention: IntentionView, m: MindView | None = None) -> Context:
    return Context(intention=intention, mind=m or mind(), registry=REGISTRY, now=NOW)


def drafted(outcome: Draft | NotApplicable) -> Draft:
    assert isinstance(outcome, Draft), outcome
    return outcome


def not_applicable(outcome: Draft | NotApplicable) -> str:
    assert isinstance(outcome, NotApplicable), outcome
    return outcome.reason


def test_the_preference_order_is_the_seeds() -> None:
    assert [s.value for s in PREFERENCE] == [
        "direct",
        "diagnose",
        "diagnose_then_escalate",
        "model",
    ]


# --- direct ---------------------------------------------------------------------------------


def test_direct_restart_is_verified_by_observation() -> None:
    plan = drafted(direct(ctx(restart_intention())))
    p1, v1 = plan.steps
    assert (p1.key, p1.kind, p1.capability) == ("P1", StepKind.CAPABILITY, "service.restart")
    assert p1.parameters == {"namespace": "prod", "kind": "Deployment", "name": "atlas"}
    assert p1.target == TARGET
    assert p1.max_attempts is None  # not idempotent: one attempt
    expectation = p1.expectation
    assert expectation is not None
    assert expectation.window_seconds == 60
    assert expectation.confidence == 0.8
    assert "running normally within 60 s" in expectation.description
    check = expectation.check
    assert (check.capability, check.field, check.comparison, check.value) == (
        "service.status",
        "state",
        Comparison.EQUALS,
        "running",
    )
    assert check.parameters == p1.parameters
    assert (v1.key, v1.kind, v1.verifies, v1.depends_on) == ("V1", StepKind.VERIFY, "P1", ["P1"])
    assert plan.expected_confidence == 0.8


@pytest.mark.parametrize("required", [True, False])
def test_direct_requires_approval_exactly_when_the_intention_does(required: bool) -> None:
    plan = drafted(direct(ctx(restart_intention(requires_approval=required))))
    assert plan.steps[0].requires_approval is required


def test_direct_read_has_no_verification_and_may_retry() -> None:
    intention = restart_intention(means=Means(capability="logs.query", parameters=WORKLOAD))
    plan = drafted(direct(ctx(intention, mind(policy=(rule("logs.query", "allow"),)))))
    [p1] = plan.steps
    assert p1.expectation is None
    assert p1.max_attempts == 3
    assert p1.requires_approval is False
    assert plan.expected_confidence == 0.9


def test_a_read_never_carries_the_intentions_approval_flag() -> None:
    intention = restart_intention(
        requires_approval=True, means=Means(capability="service.status", parameters=WORKLOAD)
    )
    assert drafted(direct(ctx(intention))).steps[0].requires_approval is False


@pytest.mark.parametrize(
    ("intention", "m", "reason"),
    [
        (restart_intention(means=None), None, "names no capability"),
        (
            restart_intention(means=Means(capability="shell.exec", parameters={})),
            None,
            "not a registered capability",
        ),
        (restart_intention(), mind(locked_capabilities=("service.restart",)), "locked"),
        (restart_intention(), mind(policy=(rule("service.restart", "deny"),)), "policy denies"),
        (
            restart_intention(
                means=Means(capability="service.restart", parameters={"name": "atlas"})
            ),
            None,
            "fail the schema",
        ),
    ],
    ids=["no-means", "unregistered", "locked", "denied", "bad-parameters"],
)
def test_direct_does_not_apply(intention: IntentionView, m: MindView | None, reason: str) -> None:
    assert reason in not_applicable(direct(ctx(intention, m)))


# --- diagnose -------------------------------------------------------------------------------


def _capabilities(plan: Draft) -> list[str | None]:
    return [s.capability for s in plan.steps if s.kind == StepKind.CAPABILITY]


def test_diagnose_reads_status_memory_disk_and_asks_for_logs() -> None:
    plan = drafted(diagnose(ctx(investigation())))
    assert [s.key for s in plan.steps] == ["D1", "D2", "D3", "R1", "D4", "S1"]
    assert _capabilities(plan) == [
        "service.status",
        "host.memory.status",
        "host.disk.usage",
        "logs.query",
    ]
    by_key = {s.key: s for s in plan.steps}
    request = by_key["R1"].request
    assert request is not None
    assert request.capability == "logs.query"
    assert request.target_pattern == TARGET
    assert request.duration_seconds == 30 * 60
    assert request.operation_cap == 20
    assert request.risk == "logs may contain personal identifiers"
    assert request.mitigation == "masking on by default"
    assert request.fallback == "ask the operator"
    assert by_key["D4"].depends_on == ["R1"]
    assert by_key["D4"].parameters is not None
    assert by_key["D4"].parameters["mask"] is True
    s1 = by_key["S1"]
    assert s1.internal_action is InternalAction.SUMMARISE_FINDINGS
    assert s1.depends_on == ["D1", "D2", "D3", "D4"]
    assert all(s.max_attempts == 3 for s in plan.steps if s.kind == StepKind.CAPABILITY)


def test_diagnose_reads_logs_directly_under_a_live_grant() -> None:
    plan = drafted(diagnose(ctx(investigation(), mind(grants=(grant(),)))))
    assert "R1" not in [s.key for s in plan.steps]
    assert "logs.query" in _capabilities(plan)


def test_diagnose_asks_again_when_the_grant_has_expired() -> None:
    expired = grant(expiresAt=NOW - timedelta(seconds=1))
    plan = drafted(diagnose(ctx(investigation(), mind(grants=(expired,)))))
    assert "R1" in [s.key for s in plan.steps]


def test_diagnose_reads_logs_directly_when_policy_allows() -> None:
    plan = drafted(diagnose(ctx(investigation(), mind(policy=(rule("logs.query", "allow"),)))))
    assert "R1" not in [s.key for s in plan.steps]
    assert "logs.query" in _capabilities(plan)


@pytest.mark.parametrize(
    ("m", "missing"),
    [
        (mind(policy=(rule("logs.query", "deny"),)), "logs.query"),
        (mind(policy=(rule("host.memory.status", "deny"),)), "host.memory.status"),
        (mind(policy=(rule("service.status", "deny", "prod/*"),)), "service.status"),
        (mind(locked_capabilities=("host.disk.usage",)), "host.disk.usage"),
    ],
    ids=["logs-denied", "memory-denied", "status-denied", "disk-locked"],
)
def test_diagnose_leaves_out_what_policy_forbids(m: MindView, missing: str) -> None:
    plan = drafted(diagnose(ctx(investigation(), m)))
    assert missing not in _capabilities(plan)
    assert len(_capabilities(plan)) == 3
    if missing == "logs.query":
        assert "R1" not in [s.key for s in plan.steps]
    assert missing in plan.risk  # the operator sees what was not read


def test_diagnose_includes_readings_policy_asks_approval_for() -> None:
    m = mind(policy=(rule("host.*", "approve"),))
    plan = drafted(diagnose(ctx(investigation(), m)))
    assert "host.memory.status" in _capabilities(plan)
    assert "host.disk.usage" in _capabilities(plan)


def test_diagnose_does_not_apply_when_nothing_may_be_read() -> None:
    m = mind(policy=(rule("*", "deny"),))
    assert "allows no diagnostic reading" in not_applicable(diagnose(ctx(investigation(), m)))


def test_diagnose_is_for_investigations() -> None:
    action = investigation(kind="action")
    assert "not an investigation" in not_applicable(diagnose(ctx(action)))


def test_diagnose_needs_a_service_like_subject() -> None:
    assert "not a workload" in not_applicable(diagnose(ctx(investigation(workload=None))))


def test_diagnose_finds_the_workload_in_a_service_means() -> None:
    intention = investigation(
        workload=None, means=Means(capability="service.status", parameters=WORKLOAD)
    )
    plan = drafted(diagnose(ctx(intention)))
    assert plan.steps[0].target == TARGET


# --- diagnose_then_escalate -----------------------------------------------------------------


def test_escalation_diagnoses_then_tells_the_operator_without_repeating() -> None:
    intention = restart_intention(
        revision=2, failures=(failed("direct", 1, "V1 refuted: state degraded"),)
    )
    plan = drafted(diagnose_then_escalate(ctx(intention)))
    keys = [s.key for s in plan.steps]
    assert keys == ["D1", "D2", "D3", "R1", "D4", "S1", "N1"]
    assert "service.restart" not in _capabilities(plan)
    n1 = plan.steps[-1]
    assert n1.kind == StepKind.INTERNAL
    assert n1.internal_action is InternalAction.NOTIFY_OPERATOR
    assert n1.depends_on == ["S1"]
    assert n1.note is not None
    assert "service.restart" in n1.note
    assert "V1 refuted" in n1.note
    assert "not being repeated" in n1.note


@pytest.mark.parametrize(
    ("intention", "reason"),
    [
        (restart_intention(), "no direct action"),
        (restart_intention(failures=(failed("diagnose"),)), "no direct action"),
        (
            restart_intention(
                means=Means(capability="browser.read", parameters={"url": "https://a.org"}),
                failures=(failed("direct"),),
            ),
            "not a service action",
        ),
        (
            restart_intention(means=None, failures=(failed("direct"),)),
            "not a service action",
        ),
        (
            restart_intention(
                means=Means(capability="service.status", parameters=WORKLOAD),
                failures=(failed("direct"),),
            ),
            "not a service action",
        ),
    ],
    ids=["fresh", "other-failure", "not-service", "no-means", "a-read"],
)
def test_escalation_applies_only_after_a_failed_direct_service_action(
    intention: IntentionView, reason: str
) -> None:
    assert reason in not_applicable(diagnose_then_escalate(ctx(intention)))


def test_escalation_uses_the_intentions_workload_when_given() -> None:
    intention = restart_intention(
        failures=(failed("direct"),), workload=Workload(namespace="prod", name="atlas")
    )
    plan = drafted(diagnose_then_escalate(ctx(intention)))
    assert plan.steps[0].target == TARGET

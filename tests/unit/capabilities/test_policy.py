"""Policy decisions: first matching rule wins, capability defaults, target globs, grants."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from minds.domain.capabilities.policy import (
    GrantView,
    PolicyDecision,
    PolicyRule,
    decide,
    decide_with_grants,
    live_grant_for,
    target_matches,
)

NOW = datetime(2025, 3, 1, 12, 0, tzinfo=UTC)
ALLOW, APPROVE, DENY = PolicyDecision.ALLOW, PolicyDecision.APPROVE, PolicyDecision.DENY


def rule(capability: str, decision: PolicyDecision, target: str = "*") -> PolicyRule:
    return PolicyRule(capability=capability, target=target, decision=decision)


def grant(**over: object) -> GrantView:
    fields: dict[str, object] = {
        "name": "logs-atlas",
        "namespace": "prod",
        "capability": "logs.query",
        "target_pattern": "prod/atlas",
        "expires_at": NOW + timedelta(minutes=30),
        "operations_remaining": 20,
    }
    return GrantView.model_validate(fields | over)


@pytest.mark.parametrize(
    ("capability", "decision"),
    [
        ("service.status", ALLOW),
        ("host.disk.usage", ALLOW),
        ("host.memory.status", ALLOW),
        ("host.process.list", APPROVE),
        ("logs.query", APPROVE),
        ("service.restart", APPROVE),
        ("browser.navigate", APPROVE),
        ("browser.read", APPROVE),
        ("browser.links", APPROVE),
    ],
)
def test_without_rules_the_capability_default_applies(
    capability: str, decision: PolicyDecision
) -> None:
    outcome = decide([], capability, "prod/atlas")
    assert outcome.decision is decision
    assert outcome.rule is None
    assert "default" in outcome.reason


def test_unregistered_capabilities_are_denied_whatever_the_rules_say() -> None:
    outcome = decide([rule("*", ALLOW)], "shell.exec", "prod/atlas")
    assert outcome.decision is DENY


def test_the_first_matching_rule_wins() -> None:
    narrow_first = [
        rule("service.restart", DENY, "prod/atlas-*"),
        rule("service.*", ALLOW),
    ]
    assert decide(narrow_first, "service.restart", "prod/atlas-worker").decision is DENY
    assert decide(narrow_first, "service.restart", "prod/web").decision is ALLOW
    broad_first = list(reversed(narrow_first))
    assert decide(broad_first, "service.restart", "prod/atlas-worker").decision is ALLOW
    assert decide(broad_first, "service.restart", "prod/atlas-worker").rule == 0


def test_a_rule_can_deny_even_the_bounded_read() -> None:
    assert decide([rule("service.status", DENY)], "service.status", "prod/a").decision is DENY


def test_rules_for_other_capabilities_do_not_match() -> None:
    outcome = decide([rule("browser.*", ALLOW)], "logs.query", "prod/atlas")
    assert outcome.decision is APPROVE


@pytest.mark.parametrize(
    ("pattern", "target", "matches"),
    [
        ("*", "prod/atlas", True),
        ("atlas-*", "prod/atlas-worker", True),
        ("atlas-*", "staging/atlas-worker", True),
        ("atlas-*", "prod/web", False),
        ("prod/atlas-*", "prod/atlas-worker", True),
        ("prod/atlas-*", "staging/atlas-worker", False),
        ("*/payments", "prod/payments", True),
        ("*/payments", "prod/payments-api", False),
        ("host", "host", True),
        ("*.example.org", "docs.example.org", True),
        ("*.example.org", "example.com", False),
        ("Atlas", "prod/atlas", False),
    ],
)
def test_target_patterns(pattern: str, target: str, matches: bool) -> None:
    assert target_matches(pattern, target) is matches


def test_a_live_grant_turns_approve_into_allow() -> None:
    outcome = decide_with_grants([], [grant()], "logs.query", "prod/atlas", NOW)
    assert outcome.decision is ALLOW
    assert outcome.grant == "logs-atlas"


def test_a_grant_never_overrides_deny() -> None:
    rules = [rule("logs.query", DENY)]
    assert decide_with_grants(rules, [grant()], "logs.query", "prod/atlas", NOW).decision is DENY


def test_a_grant_covers_only_its_capability_and_targets() -> None:
    assert decide_with_grants([], [grant()], "logs.query", "prod/web", NOW).decision is APPROVE
    assert (
        decide_with_grants([], [grant()], "service.restart", "prod/atlas", NOW).decision is APPROVE
    )


@pytest.mark.parametrize(
    "over",
    [
        {"expires_at": NOW},
        {"expires_at": NOW - timedelta(seconds=1)},
        {"not_before": NOW + timedelta(seconds=1)},
        {"operations_remaining": 0},
        {"revoked": True},
    ],
    ids=["expires-now", "expired", "not-yet", "exhausted", "revoked"],
)
def test_only_live_grants_count(over: dict[str, object]) -> None:
    assert live_grant_for([grant(**over)], "logs.query", "prod/atlas", NOW) is None
    assert decide_with_grants([], [grant(**over)], "logs.query", "prod/atlas", NOW).decision is (
        APPROVE
    )


def test_a_started_grant_is_live() -> None:
    started = grant(not_before=NOW - timedelta(minutes=1))
    assert live_grant_for([started], "logs.query", "prod/atlas", NOW) == started

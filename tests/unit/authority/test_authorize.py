"""The decision order of `authorize`, one rule at a time, and properties over random inputs.

Each rule has a case that fails when the rule is removed and a passing neighbour next to it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from minds.domain.capabilities.authority import (
    AuthorityDecision,
    Crossing,
    Stage,
    authorize,
    commitment_applies,
    risk_of,
)
from minds.domain.capabilities.policy import GrantView
from minds.domain.capabilities.registry import REGISTRY
from minds.domain.resources.mind import Commitment, MindSpec, PolicyDecision, Risk

NOW = datetime(2025, 3, 1, 12, 0, tzinfo=UTC)
ALLOW, APPROVE, DENY = PolicyDecision.ALLOW, PolicyDecision.APPROVE, PolicyDecision.DENY
RANK = {DENY: 0, APPROVE: 1, ALLOW: 2}
ATLAS = {"namespace": "prod", "name": "atlas"}
TARGET = "prod/atlas"


def mind(**spec: Any) -> MindSpec:
    return MindSpec.model_validate(spec)


def refrain(**over: Any) -> dict[str, Any]:
    return {"name": "no-restarts", "mode": "refrain", "capability": "service.restart"} | over


def rule(capability: str, decision: str, target: str = "*") -> dict[str, str]:
    return {"capability": capability, "target": target, "decision": decision}


def grant(**over: Any) -> GrantView:
    fields: dict[str, Any] = {
        "name": "restart-atlas",
        "namespace": "prod",
        "capability": "service.restart",
        "targetPattern": TARGET,
        "expiresAt": NOW + timedelta(minutes=30),
        "operationsRemaining": 5,
    }
    return GrantView.model_validate(fields | over)


def run(
    capability: str = "service.restart",
    parameters: Mapping[str, Any] | None = None,
    *,
    spec: MindSpec | None = None,
    grants: Sequence[GrantView] = (),
    limits: Mapping[str, Mapping[str, Any]] | None = None,
    require_approval: bool = False,
    check: bool = False,
    namespace: str = "prod",
    crossings: Sequence[Crossing] = (),
) -> AuthorityDecision:
    return authorize(
        namespace=namespace,
        crossings=crossings,
        mind=spec or mind(),
        capability=capability,
        parameters=ATLAS if parameters is None else parameters,
        grants=list(grants),
        grant_limits=limits or {},
        now=NOW,
        require_approval=require_approval,
        check=check,
    )


def stages(decision: AuthorityDecision) -> list[Stage]:
    return [result.stage for result in decision.trail]


# -- registered and locked -------------------------------------------------------------------


def test_an_unregistered_capability_is_denied_at_the_first_stage() -> None:
    decided = run("shell.exec", spec=mind(capabilityPolicy=[rule("*", "allow")]))
    assert decided.decision is DENY
    assert stages(decided) == [Stage.REGISTERED]
    assert "not a registered capability" in decided.reason
    assert run("service.status").decision is ALLOW


def test_a_locked_capability_is_denied_even_where_policy_allows() -> None:
    allowing = [rule("service.restart", "allow")]
    locked = run(spec=mind(lockedCapabilities=["service.restart"], capabilityPolicy=allowing))
    assert locked.decision is DENY
    assert stages(locked) == [Stage.REGISTERED, Stage.LOCKED]
    assert "locked" in locked.reason
    # a lock on another capability changes nothing
    other = run(spec=mind(lockedCapabilities=["logs.query"], capabilityPolicy=allowing))
    assert other.decision is ALLOW


# -- parameters ------------------------------------------------------------------------------


def test_an_unknown_parameter_is_refused_by_name() -> None:
    decided = run(parameters=ATLAS | {"force": True})
    assert decided.decision is DENY
    assert decided.trail[-1].stage is Stage.PARAMETERS
    assert "force" in decided.reason
    assert decided.parameters is None
    assert run(parameters=ATLAS | {"kind": "StatefulSet"}).decision is APPROVE


def test_a_parameter_of_the_wrong_type_is_refused_by_name() -> None:
    decided = run("logs.query", ATLAS | {"limit": "many"})
    assert decided.decision is DENY
    assert decided.trail[-1].stage is Stage.PARAMETERS
    assert "limit" in decided.reason
    assert run("logs.query", ATLAS | {"limit": 10}).decision is APPROVE


def test_a_missing_parameter_is_refused_by_name() -> None:
    decided = run(parameters={"namespace": "prod"})
    assert decided.decision is DENY
    assert decided.trail[-1].stage is Stage.PARAMETERS
    assert "name" in decided.reason


def test_parameters_are_checked_before_commitments_and_policy() -> None:
    spec = mind(commitments=[refrain()], capabilityPolicy=[rule("*", "deny")])
    decided = run(parameters={"namespace": "PROD", "name": "atlas"}, spec=spec)
    assert decided.trail[-1].stage is Stage.PARAMETERS


# -- targets ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("capability", "parameters", "target"),
    [
        ("service.status", {"namespace": "prod", "name": "atlas"}, "prod/atlas"),
        ("service.restart", {"namespace": "team-a", "name": "web.v2"}, "team-a/web.v2"),
        ("logs.query", {"namespace": "prod", "name": "atlas", "limit": 5}, "prod/atlas"),
        ("host.memory.status", {}, "host"),
        ("host.disk.usage", {"path": "/var"}, "host"),
        ("browser.read", {"url": "https://Docs.Example.ORG/a?b=c"}, "docs.example.org"),
    ],
)
def test_the_target_is_derived_from_the_parameters(
    capability: str, parameters: dict[str, Any], target: str
) -> None:
    assert run(capability, parameters).target == target


def test_parameters_come_back_parsed_with_defaults_in_the_resource_spelling() -> None:
    decided = run("logs.query", ATLAS, spec=mind(capabilityPolicy=[rule("logs.query", "allow")]))
    assert decided.parameters is not None
    assert decided.parameters["sinceSeconds"] == 3600
    assert decided.parameters["mask"] is True


# -- commitments -----------------------------------------------------------------------------


def test_a_matching_refrain_denies_even_where_policy_allows() -> None:
    allowing = [rule("service.restart", "allow")]
    decided = run(spec=mind(commitments=[refrain()], capabilityPolicy=allowing))
    assert decided.decision is DENY
    assert decided.trail[-1].stage is Stage.COMMITMENTS
    assert "commitments[0] (no-restarts)" in decided.reason
    assert decided.target == TARGET
    assert run(spec=mind(capabilityPolicy=allowing)).decision is ALLOW


def test_a_refrain_denies_whatever_grant_is_live() -> None:
    decided = run(spec=mind(commitments=[refrain()]), grants=[grant()])
    assert decided.decision is DENY
    assert decided.grant is None


def test_a_refrain_unless_approval_asks_for_approval_where_policy_allows() -> None:
    allowing = [rule("service.restart", "allow")]
    spec = mind(commitments=[refrain(unlessApproval=True)], capabilityPolicy=allowing)
    decided = run(spec=spec)
    assert decided.decision is APPROVE
    assert stages(decided) == [Stage.REGISTERED, Stage.COMMITMENTS, Stage.POLICY]
    assert decided.trail[1].decision is APPROVE
    assert "unless approved" in decided.trail[1].reason
    # the policy stage itself still says allow: the commitment is what asks
    assert decided.trail[2].decision is ALLOW


def test_a_refrain_unless_approval_does_not_soften_a_policy_deny() -> None:
    spec = mind(
        commitments=[refrain(unlessApproval=True)],
        capabilityPolicy=[rule("service.restart", "deny")],
    )
    assert run(spec=spec).decision is DENY


def test_a_refrain_on_a_capability_glob_and_target_pattern_applies() -> None:
    spec = mind(commitments=[refrain(capability="service.*", target="prod/*")])
    assert run(spec=spec).decision is DENY
    staging = {"namespace": "staging", "name": "atlas"}
    assert run(parameters=staging, spec=spec, namespace="staging").decision is APPROVE


def test_the_first_refrain_that_denies_is_named_even_after_unless_approval_ones() -> None:
    spec = mind(
        commitments=[
            refrain(name="ask-first", unlessApproval=True),
            refrain(name="never"),
        ]
    )
    decided = run(spec=spec)
    assert decided.decision is DENY
    assert "commitments[1] (never)" in decided.reason


def test_a_revoked_refrain_no_longer_constrains_but_an_irrevocable_one_does() -> None:
    revoked = [{"commitment": "no-restarts", "by": "admin", "reason": "trusted now"}]
    allowing = [rule("service.restart", "allow")]
    lifted = mind(commitments=[refrain()], commitmentRevocations=revoked, capabilityPolicy=allowing)
    assert run(spec=lifted).decision is ALLOW
    asking = mind(
        commitments=[refrain(unlessApproval=True)],
        commitmentRevocations=revoked,
        capabilityPolicy=allowing,
    )
    assert run(spec=asking).decision is ALLOW  # it no longer asks either
    binding = mind(
        commitments=[refrain(revocable=False)],
        commitmentRevocations=revoked,
        capabilityPolicy=allowing,
    )
    assert run(spec=binding).decision is DENY


ALLOWING_ALL = [rule("service.*", "allow")]


@pytest.mark.parametrize(
    ("capability", "commitment"),
    [
        pytest.param("service.restart", refrain(capability="logs.query"), id="other-capability"),
        pytest.param("service.restart", refrain(target="staging/*"), id="other-target"),
        pytest.param("service.restart", refrain(target="web"), id="other-name"),
        pytest.param("service.restart", refrain(access="read"), id="read-vs-writing"),
        pytest.param(
            "service.status",
            refrain(capability="service.*", access="write"),
            id="write-vs-read-only",
        ),
        pytest.param("service.restart", refrain(risk="low"), id="risk-low-vs-high"),
        pytest.param("service.restart", refrain(risk="medium"), id="risk-medium-vs-high"),
        pytest.param(
            "service.status",
            refrain(capability="service.status", risk="high"),
            id="risk-high-vs-low",
        ),
        pytest.param(
            "service.restart", refrain(expiresAt=NOW - timedelta(seconds=1)), id="expired"
        ),
        pytest.param("service.restart", refrain(expiresAt=NOW), id="expires-now"),
        pytest.param(
            "service.restart",
            {"name": "restart-weekly", "mode": "do", "capability": "service.restart"},
            id="do-mode",
        ),
    ],
)
def test_commitments_that_do_not_apply_do_not_constrain(
    capability: str, commitment: dict[str, Any]
) -> None:
    decided = run(capability, spec=mind(commitments=[commitment], capabilityPolicy=ALLOWING_ALL))
    assert decided.decision is ALLOW
    assert Stage.COMMITMENTS not in stages(decided)


@pytest.mark.parametrize(
    ("capability", "commitment"),
    [
        pytest.param("service.restart", refrain(target="prod/atlas"), id="exact-target"),
        pytest.param("service.restart", refrain(target="atlas"), id="name-only-target"),
        pytest.param("service.restart", refrain(access="write"), id="write-vs-writing"),
        pytest.param(
            "service.status", refrain(capability="service.*", access="read"), id="read-vs-read"
        ),
        pytest.param("service.restart", refrain(access="any"), id="any-access"),
        pytest.param("service.restart", refrain(risk="high"), id="risk-high"),
        pytest.param(
            "service.status", refrain(capability="service.status", risk="low"), id="risk-low"
        ),
        pytest.param(
            "service.restart", refrain(expiresAt=NOW + timedelta(seconds=1)), id="not-yet-expired"
        ),
    ],
)
def test_neighbouring_commitments_that_do_apply_deny(
    capability: str, commitment: dict[str, Any]
) -> None:
    decided = run(capability, spec=mind(commitments=[commitment], capabilityPolicy=ALLOWING_ALL))
    assert decided.decision is DENY
    assert decided.trail[-1].stage is Stage.COMMITMENTS


@pytest.mark.parametrize(
    ("capability", "risk"),
    [
        ("service.status", Risk.LOW),
        ("logs.query", Risk.LOW),
        ("service.restart", Risk.HIGH),
    ],
)
def test_risk_of_reads_is_low_and_of_unrepeatable_writes_high(capability: str, risk: Risk) -> None:
    assert risk_of(REGISTRY[capability]) is risk


def test_a_repeatable_write_is_medium_risk() -> None:
    spec = replace(REGISTRY["service.restart"], idempotent=True)
    assert risk_of(spec) is Risk.MEDIUM
    commitment = Commitment.model_validate(refrain(risk="medium"))
    assert commitment_applies(commitment, spec, TARGET, NOW)
    assert not commitment_applies(commitment, REGISTRY["service.restart"], TARGET, NOW)


# -- policy ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("capability", "parameters", "decision"),
    [
        ("service.status", ATLAS, ALLOW),
        ("service.restart", ATLAS, APPROVE),
        ("logs.query", ATLAS, APPROVE),
        ("host.disk.usage", {}, ALLOW),
        ("host.memory.status", {}, ALLOW),
        ("host.process.list", {}, APPROVE),
        ("browser.read", {"url": "https://example.org/"}, APPROVE),
    ],
)
def test_without_a_matching_rule_the_registry_default_decides(
    capability: str, parameters: dict[str, Any], decision: PolicyDecision
) -> None:
    decided = run(
        capability, parameters, spec=mind(capabilityPolicy=[rule("browser.links", "deny")])
    )
    assert decided.decision is decision
    assert decided.decision is REGISTRY[capability].default_decision
    assert decided.trail[-1].stage is Stage.POLICY
    assert "default" in decided.reason


def test_policy_deny_denies_even_with_a_live_covering_grant() -> None:
    decided = run(spec=mind(capabilityPolicy=[rule("service.restart", "deny")]), grants=[grant()])
    assert decided.decision is DENY
    assert decided.grant is None
    assert stages(decided) == [Stage.REGISTERED, Stage.POLICY]


def test_policy_deny_of_the_bounded_read_is_respected() -> None:
    decided = run("service.status", spec=mind(capabilityPolicy=[rule("service.status", "deny")]))
    assert decided.decision is DENY


def test_policy_rule_on_another_target_does_not_apply() -> None:
    spec = mind(capabilityPolicy=[rule("service.restart", "deny", "staging/*")])
    assert run(spec=spec).decision is APPROVE


# -- grants ----------------------------------------------------------------------------------


def test_a_live_covering_grant_turns_approve_into_allow_and_is_named() -> None:
    decided = run(grants=[grant()])
    assert decided.decision is ALLOW
    assert decided.grant == "restart-atlas"
    assert stages(decided) == [Stage.REGISTERED, Stage.POLICY, Stage.GRANT]
    assert "grant restart-atlas covers" in decided.reason
    assert run().grant is None


def test_the_first_covering_grant_is_used() -> None:
    decided = run(grants=[grant(name="first"), grant(name="second")])
    assert decided.grant == "first"


def test_a_grant_for_a_glob_target_covers_a_matching_target() -> None:
    decided = run(
        grants=[grant(targetPattern="prod/atlas-*")], parameters=ATLAS | {"name": "atlas-1"}
    )
    assert decided.decision is ALLOW


def test_a_grant_is_not_consulted_where_policy_already_allows() -> None:
    decided = run("service.status", grants=[grant(capability="service.status")])
    assert decided.decision is ALLOW
    assert decided.grant is None
    assert Stage.GRANT not in stages(decided)


@pytest.mark.parametrize(
    "over",
    [
        pytest.param({"expiresAt": NOW}, id="expires-now"),
        pytest.param({"expiresAt": NOW - timedelta(minutes=1)}, id="expired"),
        pytest.param({"revoked": True}, id="revoked"),
        pytest.param({"notBefore": NOW + timedelta(seconds=1)}, id="not-yet-started"),
        pytest.param({"operationsRemaining": 0}, id="exhausted"),
        pytest.param({"capability": "logs.query"}, id="other-capability"),
        pytest.param({"targetPattern": "staging/atlas"}, id="other-namespace"),
        pytest.param({"targetPattern": "prod/web-*"}, id="outside-pattern"),
    ],
)
def test_a_grant_that_does_not_cover_leaves_approve(over: dict[str, Any]) -> None:
    decided = run(grants=[grant(**over)])
    assert decided.decision is APPROVE
    assert decided.grant is None
    assert Stage.GRANT not in stages(decided)


@pytest.mark.parametrize(
    "over",
    [
        pytest.param({"expiresAt": NOW + timedelta(seconds=1)}, id="expires-soon"),
        pytest.param({"notBefore": NOW}, id="starts-now"),
        pytest.param({"operationsRemaining": 1}, id="last-operation"),
        pytest.param({"targetPattern": "atlas"}, id="name-only-pattern"),
        pytest.param({"targetPattern": "*"}, id="everything"),
    ],
)
def test_neighbouring_grants_that_do_cover_allow(over: dict[str, Any]) -> None:
    assert run(grants=[grant(**over)]).decision is ALLOW


def test_a_grant_whose_limits_the_parameters_exceed_stays_approve_and_says_why() -> None:
    limits = {"restart-atlas": {"kind": "StatefulSet"}}
    decided = run(grants=[grant()], limits=limits)
    assert decided.decision is APPROVE
    assert decided.grant is None
    assert decided.trail[-1].stage is Stage.GRANT
    assert decided.trail[-1].decision is APPROVE
    assert "grant restart-atlas does not cover" in decided.reason
    assert "kind" in decided.reason
    within = run(grants=[grant()], limits={"restart-atlas": {"kind": "Deployment"}})
    assert within.decision is ALLOW


def test_a_grant_over_its_limits_is_skipped_for_the_next_one_that_fits() -> None:
    limits = {"narrow": {"name": "web"}, "wide": {"namespace": "prod"}}
    decided = run(grants=[grant(name="narrow"), grant(name="wide")], limits=limits)
    assert decided.decision is ALLOW
    assert decided.grant == "wide"
    assert stages(decided) == [Stage.REGISTERED, Stage.POLICY, Stage.GRANT, Stage.GRANT]


def test_logs_grant_limits_bound_numbers_and_pin_masking() -> None:
    limits = {"logs": {"limit": 100, "mask": True, "namespace": ["prod", "staging"]}}
    logs = grant(name="logs", capability="logs.query")
    assert run("logs.query", ATLAS | {"limit": 100}, grants=[logs], limits=limits).grant == "logs"
    over = run("logs.query", ATLAS | {"limit": 101}, grants=[logs], limits=limits)
    assert over.decision is APPROVE
    unmasked = run("logs.query", ATLAS | {"mask": False}, grants=[logs], limits=limits)
    assert unmasked.decision is APPROVE
    assert "mask" in unmasked.reason


def test_a_limit_on_a_multi_word_parameter_binds_in_either_spelling() -> None:
    # Planning accepts parameterLimits keyed by field name or alias, so authority must too;
    # otherwise an approved grant request would never cover anything.
    logs = grant(name="logs", capability="logs.query")
    for key in ("sinceSeconds", "since_seconds"):
        limits = {"logs": {key: 600}}
        within = run("logs.query", ATLAS | {"sinceSeconds": 600}, grants=[logs], limits=limits)
        assert within.decision is ALLOW, key
        over = run("logs.query", ATLAS | {"sinceSeconds": 601}, grants=[logs], limits=limits)
        assert over.decision is APPROVE, key


def test_a_grant_also_satisfies_a_refrain_unless_approval() -> None:
    # A grant is authority a person approved; it covers "unless approval" like any approve.
    allowing = [rule("service.restart", "allow")]
    spec = mind(commitments=[refrain(unlessApproval=True)], capabilityPolicy=allowing)
    decided = run(spec=spec, grants=[grant()])
    assert decided.decision is ALLOW
    assert decided.grant == "restart-atlas"


# -- require_approval ------------------------------------------------------------------------


def test_require_approval_turns_a_policy_allow_into_approve_for_a_writing_capability() -> None:
    spec = mind(capabilityPolicy=[rule("service.restart", "allow")])
    decided = run(spec=spec, require_approval=True)
    assert decided.decision is APPROVE
    assert decided.trail[-1].stage is Stage.REQUIRE_APPROVAL
    assert run(spec=spec).decision is ALLOW


def test_require_approval_turns_a_grant_allow_into_approve_and_drops_the_grant() -> None:
    decided = run(grants=[grant()], require_approval=True)
    assert decided.decision is APPROVE
    assert decided.grant is None
    assert stages(decided) == [
        Stage.REGISTERED,
        Stage.POLICY,
        Stage.GRANT,
        Stage.REQUIRE_APPROVAL,
    ]


def test_require_approval_does_not_touch_a_read_only_capability() -> None:
    allowed = run("service.status", require_approval=True)
    assert allowed.decision is ALLOW
    assert Stage.REQUIRE_APPROVAL not in stages(allowed)
    logs = grant(name="logs", capability="logs.query")
    granted = run("logs.query", grants=[logs], require_approval=True)
    assert granted.decision is ALLOW
    assert granted.grant == "logs"


def test_require_approval_does_not_soften_a_deny() -> None:
    spec = mind(capabilityPolicy=[rule("service.restart", "deny")])
    assert run(spec=spec, require_approval=True).decision is DENY


# -- checks ----------------------------------------------------------------------------------


def test_a_check_that_would_need_approval_is_denied_as_not_observable() -> None:
    decided = run("logs.query", check=True)
    assert decided.decision is DENY
    assert decided.trail[-1].stage is Stage.CHECK
    assert "not observable" in decided.reason
    assert decided.target == TARGET
    assert run("logs.query").decision is APPROVE


def test_an_allowed_check_stays_allowed() -> None:
    decided = run("service.status", check=True)
    assert decided.decision is ALLOW
    assert Stage.CHECK not in stages(decided)


def test_a_granted_check_is_observable() -> None:
    logs = grant(name="logs", capability="logs.query")
    assert run("logs.query", grants=[logs], check=True).decision is ALLOW


def test_a_check_denied_by_policy_is_denied_by_policy() -> None:
    spec = mind(capabilityPolicy=[rule("service.status", "deny")])
    decided = run("service.status", spec=spec, check=True)
    assert decided.trail[-1].stage is Stage.POLICY


# -- the trail -------------------------------------------------------------------------------


def test_the_trail_records_every_stage_in_the_fixed_order() -> None:
    spec = mind(commitments=[refrain(unlessApproval=True)])
    decided = run(spec=spec, grants=[grant()], require_approval=True, check=True)
    assert stages(decided) == [
        Stage.REGISTERED,
        Stage.COMMITMENTS,
        Stage.POLICY,
        Stage.GRANT,
        Stage.REQUIRE_APPROVAL,
        Stage.CHECK,
    ]
    assert [r.decision for r in decided.trail] == [ALLOW, APPROVE, APPROVE, ALLOW, APPROVE, DENY]
    assert decided.decision is DENY
    assert decided.reason == decided.trail[-1].reason


# -- properties ------------------------------------------------------------------------------

CAPABILITIES: dict[str, dict[str, Any]] = {
    "service.status": ATLAS,
    "service.restart": ATLAS,
    "logs.query": ATLAS | {"limit": 50},
    "host.process.list": {"limit": 5},
    "host.memory.status": {},
    "browser.read": {"url": "https://example.org/page"},
}
CAPABILITY_GLOBS = ["*", "service.*", "service.restart", "service.status", "logs.query", "host.*"]
TARGETS = ["*", "prod/*", "prod/atlas", "atlas", "staging/*", "host", "example.org"]
DECISIONS = ["allow", "approve", "deny"]
OFFSETS = st.sampled_from([-3600, -1, 0, 1, 3600])

policy_rules = st.lists(
    st.builds(
        rule,
        st.sampled_from(CAPABILITY_GLOBS),
        st.sampled_from(DECISIONS),
        st.sampled_from(TARGETS),
    ),
    max_size=3,
)


@st.composite
def commitments(draw: st.DrawFn, *, mode: str | None = None, name: str = "c") -> dict[str, Any]:
    chosen = mode or draw(st.sampled_from(["do", "refrain"]))
    body: dict[str, Any] = {
        "name": name,
        "mode": chosen,
        "capability": draw(st.sampled_from(CAPABILITY_GLOBS)),
        "target": draw(st.sampled_from(TARGETS)),
        "access": draw(st.sampled_from(["any", "read", "write"])),
        "risk": draw(st.sampled_from(["any", "low", "medium", "high"])),
    }
    if chosen == "refrain":
        body["unlessApproval"] = draw(st.booleans())
    if draw(st.booleans()):
        body["expiresAt"] = NOW + timedelta(seconds=draw(OFFSETS))
    return body


@st.composite
def grant_views(draw: st.DrawFn, name: str) -> GrantView:
    over: dict[str, Any] = {
        "name": name,
        "capability": draw(st.sampled_from(list(CAPABILITIES))),
        "targetPattern": draw(st.sampled_from(TARGETS)),
        "expiresAt": NOW + timedelta(seconds=draw(OFFSETS)),
        "operationsRemaining": draw(st.integers(min_value=0, max_value=2)),
        "revoked": draw(st.booleans()),
    }
    if draw(st.booleans()):
        over["notBefore"] = NOW + timedelta(seconds=draw(OFFSETS))
    return grant(**over)


LIMITS = st.sampled_from(
    [{}, {"namespace": "prod"}, {"name": "web"}, {"limit": 10}, {"limit": 100}, {"path": "/"}]
)


@st.composite
def situations(draw: st.DrawFn) -> dict[str, Any]:
    capability = draw(st.sampled_from(list(CAPABILITIES)))
    names = [f"g{i}" for i in range(draw(st.integers(min_value=0, max_value=3)))]
    spec = {
        "commitments": [draw(commitments(name=f"c{i}")) for i in range(draw(st.integers(0, 2)))],
        "capabilityPolicy": draw(policy_rules),
        "lockedCapabilities": draw(st.lists(st.sampled_from(list(CAPABILITIES)), max_size=1)),
    }
    return {
        "capability": capability,
        "parameters": CAPABILITIES[capability],
        "spec": spec,
        "grants": [draw(grant_views(name)) for name in names],
        "limits": {name: draw(LIMITS) for name in names},
        "require_approval": draw(st.booleans()),
        "check": draw(st.booleans()),
    }


def decide(situation: Mapping[str, Any], **over: Any) -> AuthorityDecision:
    s = dict(situation) | over
    return run(
        s["capability"],
        s["parameters"],
        spec=mind(**s["spec"]),
        grants=s["grants"],
        limits=s["limits"],
        require_approval=s["require_approval"],
        check=s["check"],
    )


@settings(max_examples=400)
@given(situations(), commitments(mode="refrain", name="added"))
def test_adding_a_refrain_never_makes_the_decision_more_permissive(
    situation: dict[str, Any], added: dict[str, Any]
) -> None:
    before = decide(situation)
    spec = situation["spec"] | {"commitments": [*situation["spec"]["commitments"], added]}
    after = decide(situation, spec=spec)
    assert RANK[after.decision] <= RANK[before.decision]


@settings(max_examples=400)
@given(situations())
def test_require_approval_never_makes_the_decision_more_permissive(
    situation: dict[str, Any],
) -> None:
    without = decide(situation, require_approval=False)
    required = decide(situation, require_approval=True)
    assert RANK[required.decision] <= RANK[without.decision]
    if required.decision is ALLOW and not REGISTRY[situation["capability"]].read_only:
        raise AssertionError("a writing capability was allowed although approval is required")


@settings(max_examples=400)
@given(situations(), st.data())
def test_removing_grants_never_makes_the_decision_more_permissive(
    situation: dict[str, Any], data: st.DataObject
) -> None:
    grants = situation["grants"]
    keep = data.draw(st.lists(st.booleans(), min_size=len(grants), max_size=len(grants)))
    kept = [g for g, k in zip(grants, keep, strict=True) if k]  # a subset, in the original order
    before = decide(situation)
    after = decide(situation, grants=kept)
    assert RANK[after.decision] <= RANK[before.decision]
    none = decide(situation, grants=[])
    assert RANK[none.decision] <= RANK[after.decision]
    assert none.grant is None


@settings(max_examples=400)
@given(situations())
def test_a_grant_never_turns_a_deny_into_anything_else(situation: dict[str, Any]) -> None:
    without = decide(situation, grants=[])
    with_grants = decide(situation)
    # Only the "not observable" deny of a check depends on approval, which a grant can give.
    if without.decision is DENY and without.trail[-1].stage is not Stage.CHECK:
        assert with_grants.decision is DENY
        assert with_grants.grant is None
        assert with_grants.trail == without.trail


@settings(max_examples=400)
@given(situations())
def test_a_named_grant_is_live_covering_and_within_its_limits(situation: dict[str, Any]) -> None:
    decided = decide(situation)
    if decided.grant is None:
        return
    assert decided.decision is ALLOW
    used = next(g for g in situation["grants"] if g.name == decided.grant)
    assert used.live(NOW)
    assert used.covers(situation["capability"], decided.target)


@settings(max_examples=200)
@given(situations())
def test_the_same_inputs_give_the_same_decision(situation: dict[str, Any]) -> None:
    assert decide(situation) == decide(situation)

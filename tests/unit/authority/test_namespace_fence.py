"""The namespace fence (stage 3 of `authorize`): a mind acts only in its own namespace unless
a grant held in the target namespace names it. Each rule has a case that fails without it and
a neighbour that passes."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from pydantic import ValidationError

from minds.domain.capabilities.authority import (
    Crossing,
    Stage,
    mind_reference,
    requested_namespace,
)
from minds.domain.resources.grant import CapabilityGrantSpec
from tests.unit.authority.test_authorize import (
    ALLOW,
    APPROVE,
    DENY,
    NOW,
    grant,
    mind,
    rule,
    run,
    stages,
)

HOME = "team-a"
ELSEWHERE = {"namespace": "team-b", "name": "atlas"}
RESTARTS = mind(capabilityPolicy=[rule("service.restart", "allow")])


def crossing(
    namespace: str = "team-b", limits: dict[str, Any] | None = None, **over: Any
) -> Crossing:
    fields = {"name": "let-a-restart", "targetPattern": "atlas", "namespace": namespace} | over
    return Crossing(namespace=namespace, grant=grant(**fields), limits=limits or {})


def reach(**over: Any) -> Any:
    arguments: dict[str, Any] = {"parameters": ELSEWHERE, "spec": RESTARTS, "namespace": HOME}
    return run(**(arguments | over))


def test_a_workload_in_another_namespace_is_out_of_reach_whatever_policy_says() -> None:
    decided = reach()

    assert decided.decision is DENY
    assert stages(decided)[-1] is Stage.NAMESPACE
    assert decided.reason.startswith(
        "team-b/atlas is in namespace team-b, outside the mind's namespace team-a"
    )
    assert decided.target == "team-b/atlas"
    assert (
        run(parameters={"namespace": HOME, "name": "atlas"}, spec=RESTARTS, namespace=HOME).decision
        is ALLOW
    )


def test_the_mind_s_own_grants_never_reach_another_namespace() -> None:
    decided = reach(spec=mind(), grants=[grant(targetPattern="*")])

    assert decided.decision is DENY
    assert stages(decided)[-1] is Stage.NAMESPACE


def test_reads_and_checks_are_fenced_too() -> None:
    status = reach(capability="service.status", spec=mind())
    logs = reach(capability="logs.query", spec=mind(capabilityPolicy=[rule("*", "allow")]))
    check = reach(capability="service.status", spec=mind(), check=True)

    assert [d.decision for d in (status, logs, check)] == [DENY, DENY, DENY]


def test_targets_outside_the_cluster_s_namespaces_are_not_fenced() -> None:
    decided = run("host.disk.usage", {"path": "/"}, namespace=HOME)

    assert decided.decision is ALLOW
    assert Stage.NAMESPACE not in stages(decided)


def test_a_grant_held_in_the_target_namespace_opens_the_fence_and_is_relied_on() -> None:
    decided = reach(crossings=[crossing()])

    assert decided.decision is ALLOW
    assert decided.grant == "let-a-restart"
    assert decided.grant_namespace == "team-b"
    [opened] = [s for s in decided.trail if s.stage is Stage.NAMESPACE]
    assert opened.decision is ALLOW
    assert "held in team-b" in opened.reason


def test_a_grant_held_in_a_third_namespace_opens_nothing() -> None:
    decided = reach(crossings=[crossing(namespace="team-c", targetPattern="*")])

    assert decided.decision is DENY
    assert decided.grant is None


@pytest.mark.parametrize(
    "over",
    [
        {"capability": "service.status"},
        {"targetPattern": "other-*"},
        {"expiresAt": NOW - timedelta(seconds=1)},
        {"notBefore": NOW + timedelta(seconds=1)},
        {"operationsRemaining": 0},
        {"revoked": True},
    ],
)
def test_a_grant_that_does_not_cover_keeps_the_fence_closed(over: dict[str, Any]) -> None:
    assert reach(crossings=[crossing(**over)]).decision is DENY


def test_a_grant_whose_limits_the_parameters_exceed_keeps_the_fence_closed_and_says_why() -> None:
    decided = reach(
        capability="logs.query",
        spec=mind(capabilityPolicy=[rule("*", "allow")]),
        parameters=ELSEWHERE | {"limit": 500},
        crossings=[crossing(capability="logs.query", limits={"limit": 100})],
    )

    assert decided.decision is DENY
    assert "grant team-b/let-a-restart does not cover: limit: 500 exceeds" in decided.reason


def test_the_fence_opens_nothing_more_policy_and_commitments_still_apply() -> None:
    denied = reach(
        spec=mind(capabilityPolicy=[rule("service.restart", "deny")]), crossings=[crossing()]
    )
    asks = reach(spec=mind(), crossings=[crossing()])
    refrains = reach(
        spec=mind(
            capabilityPolicy=[rule("service.restart", "allow")],
            commitments=[{"name": "no", "mode": "refrain", "capability": "service.restart"}],
        ),
        crossings=[crossing()],
    )

    assert denied.decision is DENY
    assert asks.decision is APPROVE
    assert asks.grant == "let-a-restart"
    assert refrains.decision is DENY


def test_require_approval_keeps_the_fence_s_grant() -> None:
    decided = reach(crossings=[crossing()], require_approval=True)

    assert decided.decision is APPROVE
    assert (decided.grant_namespace, decided.grant) == ("team-b", "let-a-restart")


def test_the_fence_comes_after_parameters_and_before_commitments() -> None:
    opened = reach(crossings=[crossing()])
    malformed = reach(parameters=ELSEWHERE | {"force": True})

    assert stages(opened) == [Stage.REGISTERED, Stage.NAMESPACE, Stage.POLICY]
    assert stages(malformed)[-1] is Stage.PARAMETERS


def test_where_to_look_for_grants_is_read_from_the_raw_parameters() -> None:
    assert requested_namespace("service.restart", ELSEWHERE) == "team-b"
    assert requested_namespace("service.restart", {"namespace": 3}) is None
    assert requested_namespace("host.disk.usage", {"namespace": "team-b"}) is None
    assert requested_namespace("no.such", ELSEWHERE) is None
    assert mind_reference("team-a", "keeper") == "team-a/keeper"


GRANT_FIELDS = {
    "capability": "service.restart",
    "targetPattern": "atlas",
    "expiresAt": NOW,
    "operationCap": 1,
    "reason": "r",
}


@pytest.mark.parametrize("mind_field", ["keeper", "team-a/keeper", "team-a/keeper.v2"])
def test_a_grant_names_a_mind_by_name_or_by_namespace_and_name(mind_field: str) -> None:
    assert (
        CapabilityGrantSpec.model_validate(GRANT_FIELDS | {"mind": mind_field}).mind == mind_field
    )


@pytest.mark.parametrize("mind_field", ["team-a/", "/keeper", "a/b/keeper", "Team-A/keeper"])
def test_a_malformed_mind_reference_is_refused_by_field(mind_field: str) -> None:
    with pytest.raises(ValidationError) as refused:
        CapabilityGrantSpec.model_validate(GRANT_FIELDS | {"mind": mind_field})

    assert refused.value.errors()[0]["loc"] == ("mind",)

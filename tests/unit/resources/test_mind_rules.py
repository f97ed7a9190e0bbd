from __future__ import annotations

from datetime import UTC, datetime, timedelta

from hypothesis import given
from hypothesis import strategies as st

from minds.domain.mind_rules import ReadyReason, check_spec, ready_condition
from minds.domain.resources.common import Condition, ConditionStatus, set_condition
from minds.domain.resources.mind import MindSpec

CAPS = frozenset({"service.status", "service.restart", "logs.query", "browser.read"})
NOW = datetime(2026, 1, 1, tzinfo=UTC)


def spec(**kw: object) -> MindSpec:
    return MindSpec.model_validate(kw)


def test_known_names_and_patterns_pass() -> None:
    s = spec(
        lockedCapabilities=["logs.query"],
        capabilityPolicy=[{"capability": "service.*", "decision": "approve"}],
        commitments=[{"name": "c", "mode": "refrain", "capability": "service.restart"}],
        values=[{"name": "privacy", "avoid": ["browser.*"]}],
    )
    assert check_spec(s, CAPS) == []


def test_unknown_locked_capability_is_named() -> None:
    [p] = check_spec(spec(lockedCapabilities=["service.reboot"]), CAPS)
    assert p.field == "spec.lockedCapabilities[0]"


def test_policy_pattern_matching_nothing_is_named() -> None:
    [p] = check_spec(spec(capabilityPolicy=[{"capability": "servce.*", "decision": "deny"}]), CAPS)
    assert p.field == "spec.capabilityPolicy[0].capability"


def test_commitment_pattern_matching_nothing_is_named() -> None:
    s = spec(commitments=[{"name": "c", "mode": "refrain", "capability": "db.drop"}])
    [p] = check_spec(s, CAPS)
    assert p.field == "spec.commitments[0].capability"


def test_value_avoid_pattern_matching_nothing_is_named() -> None:
    [p] = check_spec(spec(values=[{"name": "v", "avoid": ["mail.*"]}]), CAPS)
    assert p.field == "spec.values[0].avoid[0]"


def test_ready_reasons() -> None:
    assert ready_condition(spec(), [], 1, NOW).reason == ReadyReason.ACCEPTED
    assert ready_condition(spec(active=False), [], 1, NOW).reason == ReadyReason.INACTIVE
    problems = check_spec(spec(lockedCapabilities=["x.y"]), CAPS)
    cond = ready_condition(spec(), problems, 3, NOW)
    assert cond.status == ConditionStatus.FALSE
    assert cond.reason == ReadyReason.INVALID_SPEC
    assert "spec.lockedCapabilities[0]" in cond.message
    assert cond.observed_generation == 3


def _cond(status: ConditionStatus, at: datetime, reason: str = "R") -> Condition:
    return Condition(type="Ready", status=status, reason=reason, last_transition_time=at)


def test_transition_time_kept_while_status_holds() -> None:
    old = _cond(ConditionStatus.TRUE, NOW)
    [kept] = set_condition([old], _cond(ConditionStatus.TRUE, NOW + timedelta(hours=1), "S"))
    assert kept.last_transition_time == NOW
    assert kept.reason == "S"


def test_transition_time_moves_when_status_changes() -> None:
    later = NOW + timedelta(hours=1)
    [moved] = set_condition([_cond(ConditionStatus.TRUE, NOW)], _cond(ConditionStatus.FALSE, later))
    assert moved.last_transition_time == later


@given(st.lists(st.sampled_from(["Ready", "Degraded", "Cycling"]), max_size=6))
def test_set_condition_keeps_one_per_type(types: list[str]) -> None:
    conditions: list[Condition] = []
    for t in types:
        new = Condition(type=t, status=ConditionStatus.TRUE, reason="R", last_transition_time=NOW)
        conditions = set_condition(conditions, new)
    assert sorted(c.type for c in conditions) == sorted(set(types))


def test_a_model_endpoint_the_controller_does_not_configure_is_named() -> None:
    s = spec(model={"endpoint": "elsewhere", "model": "m"})
    [p] = check_spec(s, CAPS, frozenset({"team-llm"}))
    assert p.field == "spec.model.endpoint"
    assert "'elsewhere' is not a model endpoint" in p.message
    assert "configured: team-llm" in p.message


def test_a_configured_model_endpoint_passes() -> None:
    s = spec(model={"endpoint": "team-llm", "model": "m"})
    assert check_spec(s, CAPS, frozenset({"team-llm"})) == []


def test_with_no_endpoint_configured_every_model_is_refused() -> None:
    [p] = check_spec(spec(model={"endpoint": "team-llm", "model": "m"}), CAPS)
    assert "configured: none" in p.message

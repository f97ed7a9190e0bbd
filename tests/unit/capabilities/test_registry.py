"""The capability vocabulary: exactly the seed's set, typed, described and frozen."""

from __future__ import annotations

from types import MappingProxyType
from typing import Any

import pytest
from pydantic import ValidationError

from minds.domain.capabilities import registry as registry_module
from minds.domain.capabilities.registry import (
    HOST_TARGET,
    REGISTRY,
    CapabilityRegistry,
    ObservationType,
    WorkloadKind,
    parameter_problems,
)
from minds.domain.resources.mind import PolicyDecision

SEED_CAPABILITIES = [
    "service.status",
    "service.restart",
    "logs.query",
    "host.disk.usage",
    "host.memory.status",
    "host.process.list",
    "browser.navigate",
    "browser.read",
    "browser.links",
]
WORKLOAD = {"namespace": "prod", "name": "atlas"}


def test_the_vocabulary_is_exactly_the_seeds() -> None:
    assert list(REGISTRY) == SEED_CAPABILITIES
    assert len(REGISTRY) == 9
    assert not any("command" in name or "exec" in name or "shell" in name for name in REGISTRY)


def test_nothing_can_be_registered_at_runtime() -> None:
    assert not any("register" in name for name in dir(CapabilityRegistry))
    assert not any("register" in name for name in dir(registry_module))
    assert isinstance(REGISTRY.specs, MappingProxyType)
    with pytest.raises(TypeError):
        REGISTRY.specs["shell.exec"] = REGISTRY["service.status"]  # type: ignore[index]
    with pytest.raises(AttributeError):
        REGISTRY._specs = {}  # type: ignore[misc]
    with pytest.raises(AttributeError):
        REGISTRY.extra = 1  # type: ignore[attr-defined]
    with pytest.raises(AttributeError):
        REGISTRY["service.status"].read_only = False  # type: ignore[misc]


def test_the_registry_copies_what_it_is_built_from() -> None:
    source = {"service.status": REGISTRY["service.status"]}
    built = CapabilityRegistry(source)
    source["service.restart"] = REGISTRY["service.restart"]
    assert "service.restart" not in built


@pytest.mark.parametrize(
    ("name", "read_only", "idempotent", "network", "default"),
    [
        ("service.status", True, True, False, PolicyDecision.ALLOW),
        ("service.restart", False, False, False, PolicyDecision.APPROVE),
        ("logs.query", True, True, False, PolicyDecision.APPROVE),
        ("host.disk.usage", True, True, False, PolicyDecision.ALLOW),
        ("host.memory.status", True, True, False, PolicyDecision.ALLOW),
        ("host.process.list", True, True, False, PolicyDecision.APPROVE),
        ("browser.navigate", True, True, True, PolicyDecision.APPROVE),
        ("browser.read", True, True, True, PolicyDecision.APPROVE),
        ("browser.links", True, True, True, PolicyDecision.APPROVE),
    ],
)
def test_metadata(
    name: str, read_only: bool, idempotent: bool, network: bool, default: PolicyDecision
) -> None:
    spec = REGISTRY[name]
    assert spec.name == name
    assert (spec.read_only, spec.idempotent, spec.network) == (read_only, idempotent, network)
    assert spec.default_decision is default
    assert spec.money == 0.0
    assert 0 < spec.expected_seconds <= spec.timeout_seconds
    assert spec.summary
    # Read-only capabilities report fields a check can compare; writing ones are never checks.
    assert spec.usable_as_check is read_only


def test_service_status_reports_the_state_a_restart_is_verified_by() -> None:
    fields = REGISTRY["service.status"].observation_fields
    assert fields["state"] is ObservationType.STRING
    assert fields["readyReplicas"] is ObservationType.NUMBER


@pytest.mark.parametrize(
    ("name", "parameters", "target"),
    [
        ("service.status", WORKLOAD, "prod/atlas"),
        ("service.restart", WORKLOAD | {"kind": "StatefulSet"}, "prod/atlas"),
        ("logs.query", WORKLOAD | {"sinceSeconds": 60, "filter": "error"}, "prod/atlas"),
        ("host.disk.usage", {"path": "/var"}, HOST_TARGET),
        ("host.memory.status", {}, HOST_TARGET),
        ("host.process.list", {"limit": 5}, HOST_TARGET),
        ("browser.navigate", {"url": "https://Docs.Example.org/a?b=c"}, "docs.example.org"),
        ("browser.read", {"url": "http://example.org", "maxChars": 100}, "example.org"),
        ("browser.links", {"url": "https://example.org/x", "limit": 10}, "example.org"),
    ],
)
def test_targets_are_derived_from_parameters(
    name: str, parameters: dict[str, Any], target: str
) -> None:
    spec = REGISTRY[name]
    assert parameter_problems(spec, parameters) == []
    assert spec.target_of(spec.parse(parameters)) == target


def test_the_target_parameters_are_named() -> None:
    assert REGISTRY["service.restart"].target_parameters == ("namespace", "name")
    assert REGISTRY["browser.read"].target_parameters == ("url",)
    assert REGISTRY["host.memory.status"].target_parameters == ()


def test_workloads_default_to_deployments() -> None:
    parsed = REGISTRY["service.restart"].parse(WORKLOAD).to_k8s()
    assert parsed["kind"] == WorkloadKind.DEPLOYMENT.value
    assert [k.value for k in WorkloadKind] == ["Deployment", "StatefulSet", "DaemonSet"]


@pytest.mark.parametrize(
    ("name", "parameters", "path"),
    [
        ("service.status", WORKLOAD | {"command": "sh"}, "command"),
        ("service.status", {"name": "atlas"}, "namespace"),
        ("service.restart", WORKLOAD | {"kind": "Pod"}, "kind"),
        ("service.restart", {"namespace": "Prod!", "name": "atlas"}, "namespace"),
        ("logs.query", WORKLOAD | {"limit": 1_000_000}, "limit"),
        ("logs.query", WORKLOAD | {"sinceSeconds": 0}, "sinceSeconds"),
        ("host.memory.status", {"verbose": True}, "verbose"),
        ("host.disk.usage", {"path": "relative"}, "path"),
        ("host.process.list", {"limit": 1000}, "limit"),
        ("browser.navigate", {"url": "file:///etc/passwd"}, "url"),
        ("browser.navigate", {"url": "https://"}, "url"),
        ("browser.read", {}, "url"),
    ],
)
def test_parameters_that_fail_the_schema(name: str, parameters: dict[str, Any], path: str) -> None:
    problems = parameter_problems(REGISTRY[name], parameters)
    assert [p.path for p in problems] == [path]
    with pytest.raises(ValidationError):
        REGISTRY[name].parse(parameters)


def test_unknown_parameters_are_named_as_such() -> None:
    [problem] = parameter_problems(REGISTRY["service.status"], WORKLOAD | {"command": "sh"})
    assert problem.message == "unknown parameter"


def test_logs_are_masked_unless_said_otherwise() -> None:
    assert REGISTRY["logs.query"].parse(WORKLOAD).to_k8s()["mask"] is True

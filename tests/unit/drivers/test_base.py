"""The driver contract: coverage of the registry, dispatch, field checks and bounded output."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from kubernetes import client
from pydantic import JsonValue

from minds.adapters.drivers import (
    FIELD_TEXT_LIMIT,
    BrowserDriver,
    Driver,
    DriverContractError,
    DriverResult,
    Drivers,
    HostDriver,
    KubernetesDriver,
    default_drivers,
)
from minds.adapters.drivers.base import bound_json, json_size
from minds.domain.base import Model
from minds.domain.capabilities.registry import REGISTRY


class FakeDriver:
    """Serves the given capabilities and answers with whatever result it was given."""

    def __init__(self, names: set[str], result: DriverResult, *, dry_run: bool = False) -> None:
        self.capabilities = frozenset(names)
        self.result = result
        self.dry_run = dry_run
        self.calls: list[tuple[str, Model, tuple[str, ...], bool]] = []

    def supports_dry_run(self, capability: str) -> bool:
        return self.dry_run

    def invoke(
        self,
        capability: str,
        parameters: Model,
        *,
        mind_allowed_hosts: Sequence[str] = (),
        dry_run: bool = False,
    ) -> DriverResult:
        self.calls.append((capability, parameters, tuple(mind_allowed_hosts), dry_run))
        return self.result


def status_fields(**override: Any) -> dict[str, Any]:
    fields = {
        "state": "running",
        "ready": True,
        "readyReplicas": 2,
        "desiredReplicas": 2,
        "availableReplicas": 2,
        "restarts": 0,
    }
    return {**fields, **override}


def parse(name: str, raw: dict[str, Any] | None = None) -> Model:
    return REGISTRY[name].parse(raw or {"namespace": "prod", "name": "atlas"})


def test_every_registered_capability_has_a_driver() -> None:
    drivers = default_drivers(client.ApiClient(client.Configuration()))
    assert drivers.missing() == ()
    assert drivers.capabilities == frozenset(REGISTRY)


def test_each_family_is_a_driver_and_families_do_not_overlap() -> None:
    families = [
        KubernetesDriver(client.ApiClient(client.Configuration())),
        HostDriver(),
        BrowserDriver(),
    ]
    for family in families:
        assert isinstance(family, Driver)
    names = [name for family in families for name in family.capabilities]
    assert sorted(names) == sorted(REGISTRY)


def test_only_the_restart_has_a_dry_run() -> None:
    drivers = default_drivers(client.ApiClient(client.Configuration()))
    assert [name for name in REGISTRY if drivers.supports_dry_run(name)] == ["service.restart"]


def test_a_driver_for_an_unregistered_capability_is_refused() -> None:
    with pytest.raises(ValueError, match="unregistered"):
        Drivers([FakeDriver({"shell.exec"}, DriverResult.success("x"))])


def test_two_drivers_for_one_capability_are_refused() -> None:
    with pytest.raises(ValueError, match="two drivers"):
        Drivers(
            [
                FakeDriver({"service.status"}, DriverResult.success("x")),
                FakeDriver({"service.status"}, DriverResult.success("y")),
            ]
        )


def test_invoke_passes_parameters_allow_list_and_dry_run_through() -> None:
    fake = FakeDriver({"service.restart"}, DriverResult.success("restart requested"), dry_run=True)
    drivers = Drivers([fake])
    parameters = parse("service.restart")
    result = drivers.invoke(
        "service.restart", parameters, mind_allowed_hosts=["10.0.0.1"], dry_run=True
    )
    assert result.ok
    assert fake.calls == [("service.restart", parameters, ("10.0.0.1",), True)]


def test_invoke_refuses_programming_errors() -> None:
    drivers = Drivers([FakeDriver({"service.status"}, DriverResult.success("x"))])
    with pytest.raises(LookupError):
        drivers.invoke("logs.query", parse("logs.query"))
    with pytest.raises(LookupError):
        drivers.invoke("shell.exec", parse("service.status"))
    with pytest.raises(TypeError, match="WorkloadParameters"):
        drivers.invoke("service.status", parse("host.disk.usage", {"path": "/"}))
    with pytest.raises(ValueError, match="no dry run"):
        drivers.invoke("service.status", parse("service.status"), dry_run=True)


def test_a_successful_read_must_report_exactly_the_declared_fields() -> None:
    good = DriverResult.success("ok", fields=status_fields())
    assert (
        Drivers([FakeDriver({"service.status"}, good)])
        .invoke("service.status", parse("service.status"))
        .fields
        == status_fields()
    )

    missing = DriverResult.success("ok", fields={"state": "running"})
    with pytest.raises(DriverContractError):
        Drivers([FakeDriver({"service.status"}, missing)]).invoke(
            "service.status", parse("service.status")
        )
    extra = DriverResult.success("ok", fields=status_fields(colour="green"))
    with pytest.raises(DriverContractError):
        Drivers([FakeDriver({"service.status"}, extra)]).invoke(
            "service.status", parse("service.status")
        )


@pytest.mark.parametrize(
    "field", [{"ready": 1}, {"restarts": True}, {"restarts": "3"}, {"state": 0}]
)
def test_fields_must_have_the_declared_types(field: dict[str, Any]) -> None:
    wrong = DriverResult.success("ok", fields=status_fields(**field))
    with pytest.raises(DriverContractError, match="is not a"):
        Drivers([FakeDriver({"service.status"}, wrong)]).invoke(
            "service.status", parse("service.status")
        )


def test_a_failure_may_report_some_declared_fields() -> None:
    absent = DriverResult.failure("Deployment prod/atlas not found", fields={"state": "absent"})
    result = Drivers([FakeDriver({"service.status"}, absent)]).invoke(
        "service.status", parse("service.status")
    )
    assert not result.ok
    assert result.error == "Deployment prod/atlas not found"
    assert result.summary == result.error


def test_a_writing_capability_reports_no_fields() -> None:
    with_fields = DriverResult.success("restart requested", fields={"state": "running"})
    with pytest.raises(DriverContractError):
        Drivers([FakeDriver({"service.restart"}, with_fields)]).invoke(
            "service.restart", parse("service.restart")
        )


def test_output_is_bounded_and_marked_truncated() -> None:
    big = DriverResult.success(
        "lines",
        fields={"lineCount": 3, "text": "x" * (FIELD_TEXT_LIMIT * 3)},
        output={"summary": "keep me", "lines": ["y" * 1000] * 200},
    )
    drivers = Drivers([FakeDriver({"logs.query"}, big)], output_limit=16 * 1024)
    result = drivers.invoke("logs.query", parse("logs.query"))
    assert result.truncated
    assert json_size(result.output) <= 16 * 1024
    assert isinstance(result.output, dict)
    assert result.output["summary"] == "keep me"
    assert len(result.fields["text"]) == FIELD_TEXT_LIMIT  # type: ignore[arg-type]


def test_small_output_is_untouched() -> None:
    small = DriverResult.success("x", fields={"count": 1}, output={"links": ["https://a.example/"]})
    result = Drivers([FakeDriver({"browser.links"}, small)]).invoke(
        "browser.links", parse("browser.links", {"url": "https://a.example/"})
    )
    assert result == small


JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(),
    lambda children: (
        st.lists(children, max_size=8) | st.dictionaries(st.text(max_size=10), children, max_size=8)
    ),
    max_leaves=60,
)


@settings(max_examples=200)
@given(JSON, st.integers(min_value=16, max_value=4096))
def test_bound_json_never_exceeds_the_limit(value: JsonValue, limit: int) -> None:
    bounded, cut = bound_json(value, limit)
    assert json_size(bounded) <= limit
    assert cut == (json_size(value) > limit)
    if not cut:
        assert bounded == value

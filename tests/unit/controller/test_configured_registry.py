"""The platform team's configuration of the capability registry and of the controller's
Approvals (docs/capabilities.md#prices): read once at start, and anything the controller could
not honour keeps it from starting, with one line naming the key."""

from __future__ import annotations

import json
from datetime import timedelta

import pytest
from typer.testing import CliRunner

from minds.cli.main import app
from minds.controller.settings import (
    APPROVAL_TTL_ENV,
    PRICES_ENV,
    ConfigError,
    ControllerConfig,
    approval_ttl,
    priced_registry,
)
from minds.domain.approvals import DEFAULT_TTL
from minds.domain.capabilities.registry import REGISTRY, PriceError


def test_a_price_is_set_on_its_capability_only() -> None:
    priced = REGISTRY.priced({"service.restart": 2.5, "logs.query": 0})
    assert priced["service.restart"].money == 2.5
    assert priced["logs.query"].money == 0.0
    assert all(priced[n].money == 0.0 for n in priced if n != "service.restart")
    # The vocabulary is the same; only prices differ, and the built-in registry is untouched.
    assert priced.names() == REGISTRY.names()
    assert priced["service.restart"].parameters is REGISTRY["service.restart"].parameters
    assert REGISTRY["service.restart"].money == 0.0
    # A priced copy is as closed as the vocabulary it copies.
    with pytest.raises(TypeError):
        priced.specs["shell.run"] = priced["service.restart"]  # type: ignore[index]
    with pytest.raises(AttributeError):
        priced._specs = {}


@pytest.mark.parametrize(
    ("prices", "named", "problem"),
    [
        ({"service.restat": 1}, "service.restat", "no such capability"),
        ({"service.restart": -0.5}, "service.restart", "not a price"),
        ({"service.restart": float("nan")}, "service.restart", "not a price"),
        ({"service.restart": float("inf")}, "service.restart", "not a price"),
        ({"service.restart": "2"}, "service.restart", "not a number"),
        ({"service.restart": True}, "service.restart", "not a number"),
    ],
)
def test_a_price_the_registry_cannot_take_is_refused_naming_the_capability(
    prices: dict[str, object], named: str, problem: str
) -> None:
    with pytest.raises(PriceError, match=problem) as refused:
        REGISTRY.priced(prices)  # type: ignore[arg-type]
    assert refused.value.capability == named


@pytest.mark.parametrize(
    ("raw", "line"),
    [
        ('{"service.restat": 1}', "capabilities.prices.service.restat: no such capability"),
        ('{"service.restart": -1}', "capabilities.prices.service.restart: -1 is not a price"),
        ("service.restart=1", "not JSON"),
        ('[["service.restart", 1]]', "expected an object"),
    ],
)
def test_bad_prices_name_the_variable_and_the_key(raw: str, line: str) -> None:
    with pytest.raises(ConfigError) as refused:
        priced_registry(raw)
    message = str(refused.value)
    assert message.startswith(f"{PRICES_ENV}: ")
    assert line in message
    assert "\n" not in message


def test_no_prices_is_the_built_in_registry() -> None:
    assert priced_registry("") is REGISTRY
    assert priced_registry("{}")["service.restart"].money == 0.0


@pytest.mark.parametrize(
    ("raw", "ttl"),
    [("", DEFAULT_TTL), ("60", timedelta(minutes=1)), ("604800", timedelta(days=7))],
)
def test_the_approval_ttl_within_its_bounds(raw: str, ttl: timedelta) -> None:
    assert approval_ttl(raw) == ttl


@pytest.mark.parametrize(
    ("raw", "problem"),
    [("59", "outside 60..604800"), ("604801", "outside"), ("0", "outside"), ("1h", "whole")],
)
def test_an_approval_ttl_outside_its_bounds_is_refused(raw: str, problem: str) -> None:
    with pytest.raises(ConfigError, match=problem) as refused:
        approval_ttl(raw)
    assert str(refused.value).startswith(f"{APPROVAL_TTL_ENV}: ")


def test_the_configuration_carries_both(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MINDS_DATABASE_URL", "postgresql://minds@127.0.0.1/minds")
    monkeypatch.setenv(PRICES_ENV, json.dumps({"service.restart": 2.5}))
    monkeypatch.setenv(APPROVAL_TTL_ENV, "120")
    config = ControllerConfig.from_env()
    assert config.registry["service.restart"].money == 2.5
    assert config.approval_ttl == timedelta(seconds=120)


def test_the_controller_does_not_start_with_a_bad_price(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MINDS_DATABASE_URL", "postgresql://minds@127.0.0.1/minds")
    monkeypatch.setenv(PRICES_ENV, json.dumps({"service.restart": -1}))
    result = CliRunner().invoke(app, ["controller", "run"])
    assert result.exit_code == 2
    [line] = result.output.strip().splitlines()
    assert line == (
        f"error: {PRICES_ENV}: capabilities.prices.service.restart: -1 is not a price "
        "(a finite number >= 0)"
    )

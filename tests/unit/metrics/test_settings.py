"""Where metrics are served: HOST:PORT, empty to turn serving off, anything else refused with
the flag or variable named before the controller starts."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from minds.adapters.metrics import BIND_ENV, BindAddressError, parse_bind_address
from minds.cli.main import app
from minds.controller.settings import ConfigError, ControllerConfig


@pytest.mark.parametrize(
    ("value", "parsed"),
    [
        ("0.0.0.0:9090", ("0.0.0.0", 9090)),  # noqa: S104 (the chart's default)
        ("127.0.0.1:1", ("127.0.0.1", 1)),
        ("[::]:9090", ("::", 9090)),
        ("localhost:65535", ("localhost", 65535)),
        ("", None),
        ("  ", None),
    ],
)
def test_accepted(value: str, parsed: tuple[str, int] | None) -> None:
    assert parse_bind_address(value) == parsed


@pytest.mark.parametrize("value", ["9090", ":9090", "host:", "host:http", "host:0", "h:65536"])
def test_refused(value: str) -> None:
    with pytest.raises(BindAddressError, match="HOST:PORT"):
        parse_bind_address(value)


def test_the_configuration_names_the_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MINDS_DATABASE_URL", "postgresql://minds@127.0.0.1/minds")
    monkeypatch.setenv(BIND_ENV, "nowhere")
    with pytest.raises(ConfigError, match=BIND_ENV):
        ControllerConfig.from_env()
    monkeypatch.delenv(BIND_ENV)
    assert ControllerConfig.from_env().metrics_bind_address == "0.0.0.0:9090"


def test_the_flag_is_refused_before_anything_starts(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(BIND_ENV, raising=False)
    result = CliRunner().invoke(app, ["controller", "run", "--metrics-bind-address", "9090"])
    assert result.exit_code == 2
    assert "--metrics-bind-address" in result.output
    assert "HOST:PORT" in result.output

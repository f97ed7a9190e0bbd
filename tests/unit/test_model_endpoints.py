"""The controller's model endpoint configuration: read once at start, refused with the field."""

from __future__ import annotations

from pathlib import Path

import pytest

from minds.adapters.model_endpoints import EndpointsFileError, ModelEndpoints
from minds.controller.settings import ConfigError, ControllerConfig


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "endpoints.yaml"
    path.write_text(text)
    return path


def test_no_file_means_no_endpoint() -> None:
    assert ModelEndpoints.load(None).names() == frozenset()


def test_a_file_lists_named_endpoints(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        "endpoints:\n"
        "  - {name: team-llm, url: 'https://llm.example.com/v1'}\n"
        "  - {name: local, url: 'http://127.0.0.1:8000/v1', allowedAddresses: [127.0.0.1]}\n",
    )
    endpoints = ModelEndpoints.load(path)
    assert endpoints.names() == {"team-llm", "local"}
    local = endpoints.get("local")
    assert local is not None
    assert local.allowed_addresses == ["127.0.0.1"]
    assert endpoints.get("other") is None


@pytest.mark.parametrize(
    ("text", "named"),
    [
        ("endpoints:\n  - {name: a, url: 'https://x/v1'}\n  - {name: a, url: 'https://y/v1'}\n",
         "unique: a"),
        ("endpoints:\n  - {name: a, url: 'https://user:pw@x/v1'}\n", "endpoints.0.url"),
        ("endpoints:\n  - {name: a, url: 'file:///etc/passwd'}\n", "endpoints.0.url"),
        ("endpoints:\n  - {name: Not_A_Label, url: 'https://x/v1'}\n", "endpoints.0.name"),
        ("endpoints:\n  - {name: a, url: 'https://x/v1', allowAll: true}\n", "allowAll"),
        ("endpoints: [\n", "not YAML"),
    ],
)  # fmt: skip
def test_a_bad_file_is_refused_with_the_field_named(tmp_path: Path, text: str, named: str) -> None:
    with pytest.raises(EndpointsFileError, match="MINDS_MODEL_ENDPOINTS") as raised:
        ModelEndpoints.load(write(tmp_path, text))
    assert named in str(raised.value)


def test_the_controller_does_not_start_on_a_bad_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MINDS_DATABASE_URL", "postgresql://minds@127.0.0.1/minds")
    monkeypatch.setenv("MINDS_MODEL_ENDPOINTS", str(tmp_path / "missing.yaml"))
    with pytest.raises(ConfigError, match="cannot read it"):
        ControllerConfig.from_env()
    monkeypatch.setenv(
        "MINDS_MODEL_ENDPOINTS", str(write(tmp_path, "endpoints: [{name: a, url: 'https://x/v1'}]"))
    )
    assert ControllerConfig.from_env().model_endpoints.names() == {"a"}

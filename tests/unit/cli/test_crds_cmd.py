"""`minds crds generate` writes both copies of the CRDs, and its check covers both."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from minds.cli.crds_cmd import CRD_DIRS
from minds.cli.main import app

runner = CliRunner()


@pytest.fixture
def checkout(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    result = runner.invoke(app, ["crds", "generate"])
    assert result.exit_code == 0, result.output
    return tmp_path


def test_the_default_writes_crds_and_the_charts_crds(checkout: Path) -> None:
    assert {d.as_posix() for d in CRD_DIRS} == {"crds", "charts/minds-operator/crds"}
    top = {p.name: p.read_text() for p in (checkout / "crds").glob("*.yaml")}
    chart = {p.name: p.read_text() for p in (checkout / CRD_DIRS[1]).glob("*.yaml")}
    assert top
    assert top == chart
    assert runner.invoke(app, ["crds", "generate", "--check"]).exit_code == 0


@pytest.mark.parametrize("directory", CRD_DIRS)
def test_the_check_names_a_drifted_file_in_either_copy(checkout: Path, directory: Path) -> None:
    target = next((checkout / directory).glob("*.yaml"))
    target.write_text(target.read_text() + "# edited by hand\n")
    result = runner.invoke(app, ["crds", "generate", "--check"])
    assert result.exit_code == 1
    assert f"drift: {directory / target.name} differs from the models" in result.output


def test_the_check_names_a_file_no_model_generates(checkout: Path) -> None:
    (checkout / CRD_DIRS[1] / "stray.yaml").write_text("kind: Nothing\n")
    result = runner.invoke(app, ["crds", "generate", "--check"])
    assert result.exit_code == 1
    assert "stray.yaml is not generated from any model" in result.output

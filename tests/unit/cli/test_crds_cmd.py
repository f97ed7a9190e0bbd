"""`minds crds generate` writes both copies of the CRDs, and its check covers both."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from minds.cli.crds_cmd import CHART_DIR, CRD_DIRS, PLAIN_DIR
from minds.cli.main import app

runner = CliRunner()


@pytest.fixture
def checkout(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    result = runner.invoke(app, ["crds", "generate"])
    assert result.exit_code == 0, result.output
    return tmp_path


def test_the_default_writes_crds_and_the_charts_templates(checkout: Path) -> None:
    assert {d.as_posix() for d in CRD_DIRS} == {"crds", "charts/minds-operator/templates/crds"}
    top = {p.name: p.read_text() for p in (checkout / PLAIN_DIR).glob("*.yaml")}
    chart = {p.name: p.read_text() for p in (checkout / CHART_DIR).glob("*.yaml")}
    assert top
    assert top.keys() == chart.keys()
    # The template's CRD is the plain file's, with only Helm's lines added around it.
    for name, text in chart.items():
        plain = [line for line in top[name].splitlines() if not line.startswith("#")]
        templated = [
            line
            for line in text.splitlines()
            if not line.startswith("#") and "{{" not in line and "resource-policy" not in line
            and line != "  annotations:"
        ]  # fmt: skip
        assert templated == plain, name
    assert runner.invoke(app, ["crds", "generate", "--check"]).exit_code == 0


@pytest.mark.parametrize("directory", list(CRD_DIRS))
def test_the_check_names_a_drifted_file_in_either_copy(checkout: Path, directory: Path) -> None:
    target = next((checkout / directory).glob("*.yaml"))
    target.write_text(target.read_text() + "# edited by hand\n")
    result = runner.invoke(app, ["crds", "generate", "--check"])
    assert result.exit_code == 1
    assert f"drift: {directory / target.name} differs from the models" in result.output


def test_the_check_names_a_file_no_model_generates(checkout: Path) -> None:
    (checkout / CHART_DIR / "stray.yaml").write_text("kind: Nothing\n")
    result = runner.invoke(app, ["crds", "generate", "--check"])
    assert result.exit_code == 1
    assert "stray.yaml is not generated from any model" in result.output


def test_the_plain_copy_is_plain_yaml(checkout: Path) -> None:
    """What `kubectl apply -f crds/` reads: no template syntax, no Helm policy."""
    for path in (checkout / PLAIN_DIR).glob("*.yaml"):
        crd = yaml.safe_load(path.read_text())
        assert "{{" not in path.read_text()
        assert "annotations" not in crd["metadata"]

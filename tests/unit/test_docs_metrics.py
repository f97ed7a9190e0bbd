"""docs/observability.md lists exactly the metrics the code exports, the standard collectors'
series included: it is generated from the catalogue, and `minds metrics catalogue --check`
fails the build when the two differ (tests/unit/metrics/test_controller_registry.py proves the
catalogue is what the controller's registry serves)."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from minds.cli.main import app
from minds.cli.metrics_cmd import BEGIN, END, render
from minds.devenv.install import repo_root
from minds.domain.metrics.catalogue import CATALOGUE, STANDARD

DOC = repo_root() / "docs" / "observability.md"
runner = CliRunner()


def _catalogue(*args: str) -> tuple[int, str]:
    result = runner.invoke(app, ["metrics", "catalogue", *args])
    return result.exit_code, result.output


def test_the_docs_match_the_catalogue() -> None:
    code, output = _catalogue("--check", "--doc", str(DOC))
    assert code == 0, output
    text = DOC.read_text()
    for spec in [*CATALOGUE, *STANDARD]:
        assert f"| `{spec.name}` |" in text


@pytest.mark.parametrize("name", [CATALOGUE[0].name, STANDARD[0].name])
def test_check_fails_when_a_metric_is_missing_from_the_docs(name: str, tmp_path: Path) -> None:
    doc = tmp_path / "observability.md"
    doc.write_text(DOC.read_text().replace(f"| `{name}` |", "| `renamed` |"))
    code, output = _catalogue("--check", "--doc", str(doc))
    assert code == 1
    assert "differs from the catalogue" in output


def test_write_replaces_only_what_lies_between_the_markers(tmp_path: Path) -> None:
    doc = tmp_path / "observability.md"
    doc.write_text(f"# Observability\n\n## Metrics\n\nbefore\n{BEGIN}\nstale\n{END}\n\n## Alerts\n")
    code, output = _catalogue("--write", "--doc", str(doc))
    assert code == 0, output
    assert doc.read_text() == (
        f"# Observability\n\n## Metrics\n\nbefore\n{BEGIN}\n{render()}{END}\n\n## Alerts\n"
    )
    assert _catalogue("--check", "--doc", str(doc))[0] == 0


def test_a_first_write_after_a_lone_marker_inserts_without_replacing(tmp_path: Path) -> None:
    doc = tmp_path / "observability.md"
    doc.write_text(f"## Metrics\n\n{BEGIN}\n\n## Alerts\n")
    code, output = _catalogue("--write", "--doc", str(doc))
    assert code == 0, output
    assert doc.read_text() == f"## Metrics\n\n{BEGIN}\n{render()}{END}\n\n## Alerts\n"


def test_a_document_without_the_marker_is_refused_naming_it(tmp_path: Path) -> None:
    doc = tmp_path / "observability.md"
    doc.write_text("## Metrics\n\nno marker\n")
    code, output = _catalogue("--write", "--doc", str(doc))
    assert code == 2
    assert BEGIN in output
    assert doc.read_text() == "## Metrics\n\nno marker\n"

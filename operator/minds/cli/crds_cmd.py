"""``minds crds``: the CRDs are generated from the models, never edited by hand."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import typer

from minds.adapters.kube.crds import chart_template_files, rendered_files

app = typer.Typer(help="Generate or check the CustomResourceDefinitions.", no_args_is_help=True)

PLAIN_DIR = Path("crds")
"""What ``kubectl apply --server-side -f crds/`` installs, for clusters without Helm."""
CHART_DIR = Path("charts/minds-operator/templates/crds")
"""The chart's copy: templates, so ``helm upgrade`` upgrades them (docs/upgrading.md)."""
CRD_DIRS: dict[Path, Callable[[], dict[str, str]]] = {
    PLAIN_DIR: rendered_files,
    CHART_DIR: chart_template_files,
}
"""Both are written from the models at once, so the two can never disagree."""


def _drift(out: Path, files: dict[str, str]) -> tuple[list[str], list[str]]:
    """Files of ``out`` that differ from the models, and files no model generates."""
    stale = [
        name
        for name, text in files.items()
        if not (out / name).exists() or (out / name).read_text() != text
    ]
    extra = (
        sorted(p.name for p in out.glob("*.yaml") if p.name not in files) if out.exists() else []
    )
    return stale, extra


@app.command()
def generate(
    check: bool = typer.Option(False, help="Write nothing; exit 1 if the files differ."),
) -> None:
    """Write crds/*.yaml and the chart's templates/crds/ from the pydantic models (or check
    them)."""
    drifted = False
    for directory, render in CRD_DIRS.items():
        files = render()
        stale, extra = _drift(directory, files)
        if check:
            for name in stale:
                typer.echo(f"drift: {directory / name} differs from the models", err=True)
            for name in extra:
                typer.echo(f"drift: {directory / name} is not generated from any model", err=True)
            drifted = drifted or bool(stale or extra)
            continue
        directory.mkdir(parents=True, exist_ok=True)
        for name, text in files.items():
            (directory / name).write_text(text)
        for name in extra:
            (directory / name).unlink()
        typer.echo(f"wrote {len(files)} CRDs to {directory}/")
    if not check:
        return
    if drifted:
        typer.echo("run `minds crds generate` and commit the result", err=True)
        raise typer.Exit(1)
    typer.echo(f"the CRDs match the models in {', '.join(map(str, CRD_DIRS))}")

"""``minds crds``: the CRDs are generated from the models, never edited by hand."""

from __future__ import annotations

from pathlib import Path

import typer

from minds.adapters.kube.crds import rendered_files

app = typer.Typer(help="Generate or check the CustomResourceDefinitions.", no_args_is_help=True)


@app.command()
def generate(
    out: Path = typer.Option(Path("crds"), help="Directory to write the CRD files into."),
    check: bool = typer.Option(False, help="Write nothing; exit 1 if the files differ."),
) -> None:
    """Write crds/*.yaml from the pydantic models (or check that they match)."""
    files = rendered_files()
    stale = [
        name
        for name, text in files.items()
        if not (out / name).exists() or (out / name).read_text() != text
    ]
    extra = (
        sorted(p.name for p in out.glob("*.yaml") if p.name not in files) if out.exists() else []
    )
    if check:
        for name in stale:
            typer.echo(f"drift: {out / name} differs from the models", err=True)
        for name in extra:
            typer.echo(f"drift: {out / name} is not generated from any model", err=True)
        if stale or extra:
            typer.echo("run `minds crds generate` and commit the result", err=True)
            raise typer.Exit(1)
        typer.echo(f"{len(files)} CRDs match the models")
        return
    out.mkdir(parents=True, exist_ok=True)
    for name, text in files.items():
        (out / name).write_text(text)
    for name in extra:
        (out / name).unlink()
    typer.echo(f"wrote {len(files)} CRDs to {out}/")

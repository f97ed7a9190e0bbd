"""``minds metrics``: the metric catalogue in docs/observability.md is generated from the code."""

from __future__ import annotations

from pathlib import Path

import typer

from minds.domain.metrics.catalogue import CATALOGUE, STANDARD, MetricSpec, Scope, StandardMetric

app = typer.Typer(help="The metrics the controller exports.", no_args_is_help=True)

DOC = Path("docs/observability.md")
BEGIN = "<!-- catalogue: generated -->"
END = "<!-- catalogue: end -->"
SKELETON = f"# Observability\n\n## Metrics\n\n{BEGIN}\n{END}\n"

_SCOPES = {
    Scope.STATE: (
        "State gauges: computed at each scrape from the Minds, Plans and Approvals the "
        "controller sees and from the ledger, so a restarted controller exports the same values."
    ),
    Scope.PROCESS: (
        "Process counters and histograms: counted by the running controller, from zero after a "
        "restart (use `rate()` or `increase()`)."
    ),
}
_STANDARD = (
    "Standard collectors: the Prometheus client library's process, platform and "
    "garbage-collector collectors, in the controller's own registry (the `process_` series "
    "only where `/proc` is, as in the controller's image)."
)


def _row(spec: MetricSpec | StandardMetric) -> str:
    labels = ", ".join(f"`{label}`" for label in spec.labels) or "none"
    return f"| `{spec.name}` | {spec.type.value} | {labels} | {spec.help} |"


def render() -> str:
    """The catalogue as Markdown: one table per scope, in the catalogue's order, then the
    standard collectors' series."""
    parts = [
        "<!-- Written by `minds metrics catalogue --write`; edit "
        "operator/minds/domain/metrics/catalogue.py instead. -->"
    ]
    for scope, intro in _SCOPES.items():
        parts += ["", intro, "", "| name | type | labels | meaning |", "| --- | --- | --- | --- |"]
        parts += [_row(spec) for spec in CATALOGUE if spec.scope is scope]
    parts += ["", _STANDARD, "", "| name | type | labels | meaning |", "| --- | --- | --- | --- |"]
    parts += [_row(metric) for metric in STANDARD]
    return "\n".join(parts) + "\n"


def splice(text: str, block: str) -> str:
    """``text`` with what lies between the markers replaced by ``block``. A document with only
    the first marker gets the catalogue and the closing marker right after it (nothing of the
    document is replaced: where the catalogue would end cannot be guessed)."""
    head, begin, rest = text.partition(BEGIN)
    if not begin:
        raise ValueError(f"the marker {BEGIN} is missing")
    _, end, tail = rest.partition(END)
    if not end:
        tail = rest if rest.startswith("\n") else f"\n{rest}"
    return f"{head}{BEGIN}\n{block}{END}{tail}"


@app.command()
def catalogue(
    write: bool = typer.Option(False, help=f"Write the catalogue into {DOC}."),
    check: bool = typer.Option(False, help=f"Write nothing; exit 1 if {DOC} differs."),
    doc: Path = typer.Option(DOC, help="The document holding the markers."),
) -> None:
    """Print the metric catalogue as Markdown (or write it into the docs, or check them)."""
    if not write and not check:
        typer.echo(render(), nl=False)
        return
    current = doc.read_text() if doc.exists() else SKELETON
    try:
        wanted = splice(current, render())
    except ValueError as exc:
        typer.echo(f"error: {doc}: {exc}", err=True)
        raise typer.Exit(2) from exc
    if check:
        if not doc.exists() or doc.read_text() != wanted:
            typer.echo(f"drift: {doc} differs from the catalogue", err=True)
            typer.echo("run `minds metrics catalogue --write` and commit the result", err=True)
            raise typer.Exit(1)
        typer.echo(f"{doc} matches the catalogue ({len(CATALOGUE)} metrics)")
        return
    doc.write_text(wanted)
    typer.echo(f"wrote {len(CATALOGUE)} metrics to {doc}")

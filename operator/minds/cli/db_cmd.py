"""``minds db``: the ledger's schema."""

from __future__ import annotations

import os

import typer

from minds.adapters.ledger import redact_url, schema_status
from minds.adapters.ledger import upgrade as upgrade_schema

app = typer.Typer(help="Manage the Postgres ledger schema.", no_args_is_help=True)

URL = typer.Option(
    None, "--database-url", envvar="MINDS_DATABASE_URL", help="Postgres URL of the ledger."
)


def _url(url: str | None) -> str:
    if not url:
        typer.echo("error: no database: set MINDS_DATABASE_URL or pass --database-url", err=True)
        raise typer.Exit(2)
    return url


@app.command()
def upgrade(database_url: str | None = URL) -> None:
    """Apply every migration up to the one this code needs."""
    url = _url(database_url or os.environ.get("MINDS_DATABASE_URL"))
    status = upgrade_schema(url)
    typer.echo(f"{redact_url(url)}: {status.describe()}")


@app.command()
def status(database_url: str | None = URL) -> None:
    """Say whether the schema is behind, at or ahead of this code (exit 1 unless at head)."""
    url = _url(database_url)
    st = schema_status(url)
    typer.echo(f"{redact_url(url)}: {st.describe()}")
    if not st.at_head:
        raise typer.Exit(1)

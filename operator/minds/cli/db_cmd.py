"""``minds db``: the ledger's schema, privileges and hash chains."""

from __future__ import annotations

from pathlib import Path

import typer

from minds.adapters.ledger import redact_url, schema_status
from minds.adapters.ledger import upgrade as upgrade_schema
from minds.adapters.ledger.db import DATABASE_URL_ENV, OWNER_URL_ENV, READER_URL_ENV
from minds.adapters.ledger.privileges import APP_ROLE_ENV, READER_ROLE_ENV, LedgerRoleError
from minds.adapters.ledger.verify import parse_heads, verify_chains

app = typer.Typer(help="Manage the Postgres ledger.", no_args_is_help=True)

URL = typer.Option(
    None, "--database-url", envvar=DATABASE_URL_ENV, help="Postgres URL of the ledger."
)
# What only reads (status, verify, why, timeline): a member of the reader role, else, for a
# shell set up before it, the application's URL; either way every transaction is read-only.
READER_URL = typer.Option(
    None,
    "--database-url",
    envvar=[READER_URL_ENV, DATABASE_URL_ENV],
    help=f"Postgres URL of the ledger, read only (default: {READER_URL_ENV}, else "
    f"{DATABASE_URL_ENV}).",
)
OWNER_URL = typer.Option(
    None,
    "--owner-url",
    envvar=OWNER_URL_ENV,
    help=f"Postgres URL as the ledger's owner role (default: {DATABASE_URL_ENV}).",
)
APP_ROLE = typer.Option(
    None,
    "--app-role",
    envvar=APP_ROLE_ENV,
    help="The role the controller's login belongs to (default minds_app).",
)
READER_ROLE = typer.Option(
    None,
    "--reader-role",
    envvar=READER_ROLE_ENV,
    help="The role whose members may only read the ledger (default minds_reader).",
)


def _url(url: str | None, env: str = DATABASE_URL_ENV) -> str:
    if not url:
        typer.echo(f"error: no database: set {env} or pass --database-url", err=True)
        raise typer.Exit(2)
    return url


def _reader_url(url: str | None) -> str:
    return _url(url, f"{READER_URL_ENV} (or {DATABASE_URL_ENV})")


@app.command()
def upgrade(
    owner_url: str | None = OWNER_URL,
    database_url: str | None = URL,
    app_role: str | None = APP_ROLE,
    reader_role: str | None = READER_ROLE,
) -> None:
    """Apply every migration up to the one this code needs, as the owner role, then grant the
    application role and the reader role exactly their privileges."""
    if not owner_url:
        typer.echo(
            f"{OWNER_URL_ENV} is not set: migrating as the role of {DATABASE_URL_ENV}, which "
            "must then own the ledger (the controller refuses to run as that role)",
            err=True,
        )
    url = _url(owner_url or database_url)
    try:
        status = upgrade_schema(url, app_role=app_role, reader_role=reader_role)
    except LedgerRoleError as exc:
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(2) from exc
    for note in status.notes:
        typer.echo(f"warning: {note}", err=True)
    typer.echo(f"{redact_url(url)}: {status.describe()}")


@app.command()
def status(database_url: str | None = READER_URL) -> None:
    """Say whether the schema is behind, at or ahead of this code (exit 1 unless at head)."""
    url = _reader_url(database_url)
    st = schema_status(url)
    typer.echo(f"{redact_url(url)}: {st.describe()}")
    if not st.at_head:
        raise typer.Exit(1)


@app.command()
def verify(
    database_url: str | None = READER_URL,
    heads_file: Path | None = typer.Option(
        None,
        "--heads-file",
        help="Each chain's newest hash from the last run, to check is still in its chain; "
        "rewritten with today's when the ledger is intact. Keep it where the database's "
        "owner cannot write.",
    ),
) -> None:
    """Recompute the hash chains of the append-only tables (exit 1 at the first break of any
    chain, naming table, mind and row, or if a kept head is no longer in its chain)."""
    url = _reader_url(database_url)
    try:
        anchors = parse_heads(heads_file.read_text()) if heads_file and heads_file.exists() else []
    except ValueError as exc:
        typer.echo(f"error: --heads-file {heads_file}: {exc}", err=True)
        raise typer.Exit(2) from exc
    result = verify_chains(url, anchors)
    for broken in result.breaks:
        typer.echo(f"BROKEN {broken.describe()}")
    for lost in result.lost:
        typer.echo(f"LOST {lost.line()}: no longer in its chain (history was rewritten)")
    if not result.intact:
        raise typer.Exit(1)
    if heads_file is not None:
        heads_file.write_text("".join(f"{head.line()}\n" for head in result.heads))
    checked = f", {len(anchors)} kept heads found" if anchors else ""
    typer.echo(f"ledger intact: {result.rows} rows in {result.chains} chains{checked}")

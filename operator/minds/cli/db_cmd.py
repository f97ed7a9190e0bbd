"""``minds db``: the ledger's schema, privileges and hash chains."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

import typer
from kubernetes.config import ConfigException
from sqlalchemy.pool import NullPool

from minds.adapters.kube.checkpoints import CheckpointUnavailable, read_checkpoint
from minds.adapters.ledger import redact_url, schema_status
from minds.adapters.ledger import upgrade as upgrade_schema
from minds.adapters.ledger.archive import archive_before
from minds.adapters.ledger.db import (
    DATABASE_URL_ENV,
    OWNER_URL_ENV,
    READER_URL_ENV,
    make_engine,
)
from minds.adapters.ledger.keys import (
    KEYS_DIR_ENV,
    LedgerKeyError,
    LedgerKeys,
    keys_from_env,
    load_keys,
)
from minds.adapters.ledger.migrate import SchemaError
from minds.adapters.ledger.migrate import maintain as maintain_partitions
from minds.adapters.ledger.partitions import default_rows
from minds.adapters.ledger.privileges import APP_ROLE_ENV, READER_ROLE_ENV, LedgerRoleError
from minds.adapters.ledger.verify import parse_heads, verify_chains
from minds.cli.kube import connect
from minds.cli.options import CONTEXT, KUBECONFIG
from minds.domain.ledger_seal import SealedCheckpoint

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
    engine = make_engine(url, read_only=True, poolclass=NullPool)
    try:
        with engine.connect() as connection:
            waiting = default_rows(connection)
    finally:
        engine.dispose()
    # Rows no month took: more than none means `minds db maintain` stopped running.
    typer.echo(f"rows in default partitions: {sum(waiting.values())}")


@app.command()
def archive(
    before: datetime = typer.Option(
        ...,
        "--before",
        formats=["%Y-%m-%d"],
        help="Archive every partition that ends on or before this day (UTC), then cut it.",
    ),
    out: Path = typer.Option(..., "--out", help="The directory the archives are written to."),
    owner_url: str | None = OWNER_URL,
    database_url: str | None = URL,
) -> None:
    """Write each closed partition of the chained tables to OUT (JSON Lines, gzip, in chain
    order, and a manifest sealed with the ledger's active key from MINDS_LEDGER_KEYS_DIR),
    record the cut, then detach and drop the partition; as the owner role."""
    url = _url(owner_url or database_url)
    try:
        keys = keys_from_env()
    except LedgerKeyError as exc:
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(2) from exc
    if keys is None or keys.active is None:
        typer.echo(f"error: an archive is sealed: set {KEYS_DIR_ENV}", err=True)
        raise typer.Exit(2)
    done = archive_before(url, before.replace(tzinfo=UTC), out, keys.active)
    for archived in done:
        typer.echo(
            f"archived {archived.partition}: {archived.rows} rows in {archived.chains} chains, "
            f"manifest {archived.manifest}; partition dropped"
        )
    if not done:
        typer.echo(f"nothing to archive: no partition ends on or before {before:%Y-%m-%d}")


@app.command()
def maintain(owner_url: str | None = OWNER_URL, database_url: str | None = URL) -> None:
    """Make each chained table's partitions up to three months ahead (idempotent) and report
    the rows its default partition holds, as the owner role; `minds db upgrade` runs it too."""
    url = _url(owner_url or database_url)
    try:
        done = maintain_partitions(url)
    except SchemaError as exc:
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(1) from exc
    for line in done.describe():
        typer.echo(line)
    typer.echo(f"rows in default partitions: {sum(done.default_rows.values())}")


CHECKPOINT_SOURCE = "configmap:"


def _keys(keys_dir: Path | None) -> LedgerKeys | None:
    if keys_dir is None:
        return None
    try:
        return load_keys(keys_dir)
    except LedgerKeyError as exc:
        typer.echo(f"error: --keys-dir: {exc}", err=True)
        raise typer.Exit(2) from exc


def _checkpoint(
    source: str | None, kubeconfig: str | None, context: str | None
) -> SealedCheckpoint | None:
    """A file holding the checkpoint ConfigMap's data as JSON, or ``configmap:NS/NAME``."""
    if source is None:
        return None
    try:
        if source.startswith(CHECKPOINT_SOURCE):
            namespace, _, name = source.removeprefix(CHECKPOINT_SOURCE).partition("/")
            if not namespace or not name:
                raise ValueError(f"not {CHECKPOINT_SOURCE}NAMESPACE/NAME")
            return read_checkpoint(connect(kubeconfig, context), namespace, name)
        return SealedCheckpoint.from_data(json.loads(Path(source).read_text()))
    except (OSError, ValueError, CheckpointUnavailable, ConfigException) as exc:
        typer.echo(f"error: --checkpoint {source}: {exc}", err=True)
        raise typer.Exit(2) from exc


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
    keys_dir: Path | None = typer.Option(
        None,
        "--keys-dir",
        envvar=KEYS_DIR_ENV,
        help="The ledger's keys (one file per key id), to check every seal with; without, the "
        "plain chains and the switches are checked and the seals are not.",
    ),
    checkpoint: str | None = typer.Option(
        None,
        "--checkpoint",
        help="The controller's checkpoint: a file holding its ConfigMap's data as JSON, or "
        f"{CHECKPOINT_SOURCE}NAMESPACE/NAME to read it from the cluster. Needs --keys-dir.",
    ),
    kubeconfig: str | None = KUBECONFIG,
    context: str | None = CONTEXT,
) -> None:
    """Recompute the hash chains of the append-only tables and check their seals (exit 1 at
    the first row of any chain that does not hold, naming table, mind and row, or if a kept
    head or a checkpointed head is no longer in its chain)."""
    url = _reader_url(database_url)
    try:
        anchors = parse_heads(heads_file.read_text()) if heads_file and heads_file.exists() else []
    except ValueError as exc:
        typer.echo(f"error: --heads-file {heads_file}: {exc}", err=True)
        raise typer.Exit(2) from exc
    keys = _keys(keys_dir)
    if checkpoint is not None and keys is None:
        typer.echo("error: --checkpoint needs --keys-dir: its seal is checked first", err=True)
        raise typer.Exit(2)
    kept = _checkpoint(checkpoint, kubeconfig, context)
    result = verify_chains(url, anchors, keys, kept)
    for summary in result.summaries:
        typer.echo(f"chain {summary.describe()}")
    for broken in result.breaks:
        typer.echo(f"BROKEN {broken.describe()}")
    for lost in result.lost:
        typer.echo(f"LOST {lost.line()}: no longer in its chain (history was rewritten)")
    for unverified in result.unverified:
        typer.echo(f"UNVERIFIED {unverified.describe()}")
    for problem in result.checkpoint:
        typer.echo(f"CHECKPOINT {problem}")
    if not result.intact:
        raise typer.Exit(1)
    if heads_file is not None:
        heads_file.write_text("".join(f"{head.line()}\n" for head in result.heads))
    checked = f", {len(anchors)} kept heads found" if anchors else ""
    if kept is not None:
        checked += (
            f", checkpoint {kept.checkpoint.sequence} of {kept.checkpoint.name} holds "
            f"({len(kept.checkpoint.heads)} heads)"
        )
    if result.keys is None:
        seals = f"{result.sealed} sealed rows, seals not checked (no --keys-dir)"
    else:
        seals = f"{result.sealed} sealed rows, every seal checked"
    typer.echo(f"ledger intact: {result.rows} rows in {result.chains} chains{checked}; {seals}")

"""``minds why`` and ``minds timeline``: what a mind did, and why, from the ledger."""

from __future__ import annotations

from typing import Any

import typer

from minds.adapters.kube.client import KubeResources, current_namespace
from minds.adapters.ledger import DATABASE_URL_ENV, READER_URL_ENV, Ledger
from minds.cli.db_cmd import READER_URL
from minds.cli.kube import connect
from minds.cli.options import CONTEXT, KUBECONFIG, NAMESPACE, OUTPUT, Output, emit
from minds.engine.why import Explainer, Link

DATABASE = typer.Option(
    None, "--database-url", envvar=DATABASE_URL_ENV, help="The ledger (Postgres URL)."
)


def _explainer(
    kubeconfig: str | None, context: str | None, database_url: str | None
) -> tuple[Explainer, Ledger]:
    if not database_url:
        typer.echo(
            f"error: the ledger is needed: set {READER_URL_ENV} (or {DATABASE_URL_ENV})",
            err=True,
        )
        raise typer.Exit(2)
    ledger = Ledger.from_url(database_url, read_only=True)
    return Explainer(resources=KubeResources(connect(kubeconfig, context)), ledger=ledger), ledger


def why(
    target: str = typer.Argument(..., help="KIND/NAME: plan/NAME or approval/NAME."),
    step: str | None = typer.Argument(None, help="A step key of the plan, such as P1."),
    namespace: str | None = NAMESPACE,
    output: Output = OUTPUT,
    kubeconfig: str | None = KUBECONFIG,
    context: str | None = CONTEXT,
    database_url: str | None = READER_URL,
) -> None:
    """Walk from an action back to the plan, intention, want and what started it."""
    kind, _, name = target.partition("/")
    if not name:
        typer.echo("error: name the object as KIND/NAME, e.g. plan/atlas-keeper-1a2b-r1", err=True)
        raise typer.Exit(2)
    explainer, ledger = _explainer(kubeconfig, context, database_url)
    with ledger:
        try:
            links = explainer.why(
                namespace or current_namespace(kubeconfig, context), kind, name, step
            )
        except ValueError as exc:
            typer.echo(f"error: {exc}", err=True)
            raise typer.Exit(2) from exc

    def text() -> str:
        return "\n".join(why_line(depth, link) for depth, link in enumerate(links))

    emit(output, [link.to_dict() for link in links], text)


def why_line(depth: int, link: Link) -> str:
    """One link of the answer as text, each after the first led by the arrow back."""
    return f"{'' if depth == 0 else '  <- '}{link.kind} {link.name}: {link.summary}"


def timeline(
    mind: str = typer.Argument(..., help="The Mind's name."),
    namespace: str | None = NAMESPACE,
    output: Output = OUTPUT,
    kubeconfig: str | None = KUBECONFIG,
    context: str | None = CONTEXT,
    database_url: str | None = READER_URL,
) -> None:
    """The mind's agency timeline: every event and choice, in order."""
    explainer, ledger = _explainer(kubeconfig, context, database_url)
    with ledger:
        items = explainer.timeline(namespace or current_namespace(kubeconfig, context), mind)
    emit(output, items, lambda: "\n".join(timeline_line(i) for i in items))


def timeline_line(item: dict[str, Any]) -> str:
    """One item of the timeline as text: when, what, about what, and a series' count."""
    line = f"{item['at']}  {item['what']:<28} {item['about']}"
    return line + (f": {item['summary']}" if item.get("summary") else "")


def fork(
    source: str = typer.Argument(..., help="The Mind to fork."),
    new: str = typer.Argument(..., help="The new Mind's name."),
    namespace: str | None = NAMESPACE,
    kubeconfig: str | None = KUBECONFIG,
    context: str | None = CONTEXT,
    database_url: str | None = DATABASE,
) -> None:
    """A new Mind with the source's knowledge (beliefs, wants, procedures) and none of its
    work: inherited intentions are suspended; plans, approvals and grants stay behind."""
    from datetime import UTC, datetime

    from minds.adapters.ledger.keys import LedgerKeyError, keys_from_env
    from minds.engine.fork_service import ForkService

    if not database_url:
        typer.echo(f"error: the ledger is needed: set {DATABASE_URL_ENV}", err=True)
        raise typer.Exit(2)
    try:
        # What it writes is sealed like the controller's when the keys are given.
        keys = keys_from_env()
    except LedgerKeyError as exc:
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(2) from exc
    key = keys.active if keys is not None else None
    with Ledger.from_url(database_url, key=key) as ledger:
        service = ForkService(
            resources=KubeResources(connect(kubeconfig, context)),
            ledger=ledger,
            clock=lambda: datetime.now(UTC),
        )
        try:
            forked = service.fork(namespace or current_namespace(kubeconfig, context), source, new)
        except ValueError as exc:
            typer.echo(f"error: {exc}", err=True)
            raise typer.Exit(1) from exc
    typer.echo(
        f"mind {forked.name} forked from {source}: {forked.beliefs} beliefs, "
        f"{forked.wants} wants, {forked.procedures} procedures, "
        f"{forked.intentions} intentions (suspended)"
    )


def ask(
    mind: str = typer.Argument(..., help="The Mind to ask."),
    text: str = typer.Argument(..., help="The question or request, in plain words."),
    namespace: str | None = NAMESPACE,
    kubeconfig: str | None = KUBECONFIG,
    context: str | None = CONTEXT,
) -> None:
    """Put a question or request to a mind; it becomes a want in its next cycle."""
    from kubernetes import client

    from minds.domain.ledger import idempotency_key
    from minds.domain.resources.kinds import MIND

    api = connect(kubeconfig, context)
    namespace = namespace or current_namespace(kubeconfig, context)
    name = f"ask-{idempotency_key('ask', mind, text)[:10]}"
    custom = client.CustomObjectsApi(api)
    body = KubeResources(api).get(MIND, namespace, mind)
    requests = list((body.get("spec") or {}).get("requests") or [])
    if all(r.get("name") != name for r in requests):
        requests.append({"name": name, "text": text})
    custom.patch_namespaced_custom_object(
        MIND.group,
        MIND.version,
        namespace,
        MIND.plural,
        mind,
        {
            "metadata": {"resourceVersion": body["metadata"]["resourceVersion"]},
            "spec": {"requests": requests},
        },
    )
    typer.echo(f"asked {namespace}/{mind} ({name})")

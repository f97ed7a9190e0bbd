"""``minds cancel plan``, ``minds abandon``, ``minds resume``, ``minds revoke``: correct a mind
as yourself.

Each is one ``kubectl patch`` (docs/execution.md, "Correcting a mind") with your name filled
from the identity the API server authenticates (SelfSubjectReview); the admission policies
judge it exactly as they judge the patch.
"""

from __future__ import annotations

from collections.abc import Callable

import typer
from kubernetes import client

from minds.adapters.kube.client import current_namespace
from minds.adapters.kube.corrections import append_to_mind, cancel_plan
from minds.adapters.kube.people import DecisionRefused, whoami
from minds.cli.kube import connect
from minds.cli.options import CONTEXT, KUBECONFIG, NAMESPACE

REASON = typer.Option(..., "--reason", help="Why; kept in the ledger with your name.")

cancel = typer.Typer(help="Stop something the mind is doing.", no_args_is_help=True)


def _as_me(
    kubeconfig: str | None,
    context: str | None,
    namespace: str | None,
    act: Callable[[client.ApiClient, str, str], str],
) -> None:
    """Run ``act(api, namespace, me)`` and print what it says; a refusal is one line and exit 1."""
    api = connect(kubeconfig, context)
    namespace = namespace or current_namespace(kubeconfig, context)
    try:
        typer.echo(act(api, namespace, whoami(api)))
    except DecisionRefused as exc:
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(1) from exc


@cancel.command("plan")
def cancel_plan_cmd(
    name: str,
    reason: str = REASON,
    namespace: str | None = NAMESPACE,
    kubeconfig: str | None = KUBECONFIG,
    context: str | None = CONTEXT,
) -> None:
    """Cancel a plan: it stops at a safe point and its pending Approvals are withdrawn."""

    def act(api: client.ApiClient, ns: str, me: str) -> str:
        cancel_plan(api, ns, name, me, reason)
        return f"plan {ns}/{name}: cancelled by {me}"

    _as_me(kubeconfig, context, namespace, act)


def _on_mind(
    field: str, subject: str, verb: str, doc: str, action: str | None = None
) -> Callable[..., None]:
    """A command that appends one entry naming ``subject`` to the Mind's ``spec.FIELD``."""
    extra = {"action": action} if action else {}

    def command(
        mind: str,
        name: str = typer.Argument(..., metavar=subject.upper()),
        reason: str = REASON,
        namespace: str | None = NAMESPACE,
        kubeconfig: str | None = KUBECONFIG,
        context: str | None = CONTEXT,
    ) -> None:
        def act(api: client.ApiClient, ns: str, me: str) -> str:
            entry = {subject: name, **extra, "by": me, "reason": reason}
            append_to_mind(api, ns, mind, field, entry)
            return f"mind {ns}/{mind}: {verb} {subject} {name}, asked by {me}"

        _as_me(kubeconfig, context, namespace, act)

    command.__doc__ = doc
    return command


abandon = _on_mind(
    "intentionCorrections",
    "intention",
    "abandon",
    "Abandon an intention: the mind drops it and suppresses the want it serves.",
    action="abandon",
)
resume = _on_mind(
    "intentionCorrections",
    "intention",
    "resume",
    "Resume a blocked or suspended intention.",
    action="resume",
)
revoke = _on_mind(
    "commitmentRevocations",
    "commitment",
    "revoke",
    "Revoke a revocable commitment of a mind (an irrevocable one is refused).",
)


def register(app: typer.Typer) -> None:
    """The commands, on the ``minds`` command."""
    app.add_typer(cancel, name="cancel")
    app.command("abandon")(abandon)
    app.command("resume")(resume)
    app.command("revoke")(revoke)

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

from minds.adapters.kube.client import api_client, current_namespace
from minds.adapters.kube.corrections import append_to_mind, cancel_plan
from minds.adapters.kube.people import DecisionRefused, whoami

NAMESPACE = typer.Option(None, "--namespace", "-n", help="Default: the context's namespace.")
KUBECONFIG = typer.Option(None, "--kubeconfig", envvar="KUBECONFIG", help="Kubeconfig file.")
CONTEXT = typer.Option(None, "--context", help="Kubeconfig context (who you are).")
REASON = typer.Option(..., "--reason", help="Why; kept in the ledger with your name.")

cancel = typer.Typer(help="Stop something the mind is doing.", no_args_is_help=True)


def _as_me(
    kubeconfig: str | None,
    context: str | None,
    namespace: str | None,
    act: Callable[[client.ApiClient, str, str], str],
) -> None:
    """Run ``act(api, namespace, me)`` and print what it says; a refusal is one line and exit 1."""
    api = api_client(kubeconfig, context)
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


def _correct(action: str) -> Callable[..., None]:
    def command(
        mind: str,
        intention: str,
        reason: str = REASON,
        namespace: str | None = NAMESPACE,
        kubeconfig: str | None = KUBECONFIG,
        context: str | None = CONTEXT,
    ) -> None:
        def act(api: client.ApiClient, ns: str, me: str) -> str:
            entry = {"intention": intention, "action": action, "by": me, "reason": reason}
            append_to_mind(api, ns, mind, "intentionCorrections", entry)
            return f"mind {ns}/{mind}: {action} of intention {intention} asked by {me}"

        _as_me(kubeconfig, context, namespace, act)

    command.__doc__ = {
        "abandon": "Abandon an intention: the mind drops it and suppresses the want it serves.",
        "resume": "Resume a blocked or suspended intention.",
    }[action]
    return command


abandon = _correct("abandon")
resume = _correct("resume")


def revoke(
    mind: str,
    commitment: str,
    reason: str = REASON,
    namespace: str | None = NAMESPACE,
    kubeconfig: str | None = KUBECONFIG,
    context: str | None = CONTEXT,
) -> None:
    """Revoke a revocable commitment of a mind (an irrevocable one is refused)."""

    def act(api: client.ApiClient, ns: str, me: str) -> str:
        entry = {"commitment": commitment, "by": me, "reason": reason}
        append_to_mind(api, ns, mind, "commitmentRevocations", entry)
        return f"mind {ns}/{mind}: commitment {commitment} revoked by {me}"

    _as_me(kubeconfig, context, namespace, act)


def register(app: typer.Typer) -> None:
    """The commands, on the ``minds`` command."""
    app.add_typer(cancel, name="cancel")
    app.command("abandon")(abandon)
    app.command("resume")(resume)
    app.command("revoke")(revoke)

"""``minds approve`` / ``minds deny``: decide an Approval as yourself.

Equivalent to ``kubectl patch approval NAME --type=merge -p '{"spec":{"decision":...,
"decidedBy":"<you>"}}'``, with ``decidedBy`` filled from the identity the API server
authenticates (SelfSubjectReview), so there is nothing to mistype. A refusal is answered by
``minds.cli.failures``: the server's reason in one line, exit 1.
"""

from __future__ import annotations

import typer

from minds.adapters.kube.client import current_namespace
from minds.adapters.kube.people import decide, request_release, whoami
from minds.cli.kube import connect
from minds.cli.options import CONTEXT, KUBECONFIG, NAMESPACE


def _decide(
    name: str,
    decision: str,
    namespace: str | None,
    note: str | None,
    kubeconfig: str | None,
    context: str | None,
) -> None:
    api = connect(kubeconfig, context)
    namespace = namespace or current_namespace(kubeconfig, context)
    me = whoami(api)
    decide(api, namespace, name, decision, me, note)
    typer.echo(f"approval {namespace}/{name}: {decision} by {me}")


def approve(
    name: str,
    namespace: str | None = NAMESPACE,
    note: str | None = typer.Option(None, "--note", help="Why; kept in the ledger."),
    kubeconfig: str | None = KUBECONFIG,
    context: str | None = CONTEXT,
) -> None:
    """Approve a pending Approval as yourself."""
    _decide(name, "Approved", namespace, note, kubeconfig, context)


def deny(
    name: str,
    namespace: str | None = NAMESPACE,
    note: str | None = typer.Option(None, "--note", help="Why; the mind sees it."),
    kubeconfig: str | None = KUBECONFIG,
    context: str | None = CONTEXT,
) -> None:
    """Deny a pending Approval as yourself."""
    _decide(name, "Denied", namespace, note, kubeconfig, context)


def release(
    plan: str,
    step: str,
    namespace: str | None = NAMESPACE,
    kubeconfig: str | None = KUBECONFIG,
    context: str | None = CONTEXT,
) -> None:
    """Let a blocked step run again, after you checked what it may have done."""
    api = connect(kubeconfig, context)
    namespace = namespace or current_namespace(kubeconfig, context)
    me = whoami(api)
    request_release(api, namespace, plan, step, me)
    typer.echo(f"plan {namespace}/{plan}: release of step {step} requested by {me}")

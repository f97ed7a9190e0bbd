"""``minds dev up/down`` and ``minds demo``: the local stack for trying and testing minds."""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

import typer
from rich.console import Console

from minds.adapters.ledger import Ledger
from minds.devenv import stack as devstack
from minds.devenv import story
from minds.devenv.install import repo_root
from minds.devenv.kubectl import KubectlError, kubectl, kubectl_json
from minds.devenv.process import ProcessError

app = typer.Typer(
    help="The local stack: control plane, Postgres, CRDs, controller.", no_args_is_help=True
)
console = Console()

STATE = typer.Option(None, "--state-dir", help="Where the stack keeps its state (default .dev).")


def _state(state_dir: Path | None) -> Path:
    return (state_dir or devstack.default_state_dir()).resolve()


def _up(state_dir: Path, with_controller: bool) -> devstack.Stack:
    kubeconfig = os.environ.get("KUBECONFIG")
    database_url = os.environ.get("MINDS_DATABASE_URL")
    if kubeconfig:
        console.print(f"using the cluster KUBECONFIG points at: {kubeconfig}")
    if database_url:
        console.print("using the Postgres in MINDS_DATABASE_URL")
    try:
        return devstack.up(
            state_dir,
            kubeconfig=Path(kubeconfig) if kubeconfig else None,
            database_url=database_url,
            owner_database_url=os.environ.get("MINDS_DATABASE_OWNER_URL"),
            reader_database_url=os.environ.get("MINDS_DATABASE_READER_URL"),
            with_controller=with_controller,
        )
    except Exception as exc:  # the message is the product here: say what failed and stop
        console.print(f"[red]error:[/red] {exc}")
        raise typer.Exit(2) from exc


def columns(header: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    """Plain aligned columns, like kubectl's: readable in a terminal, a log and a test."""
    table = [header, *rows]
    widths = [max(len(r[i]) for r in table) for i in range(len(header))]
    return "\n".join(
        "   ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)).rstrip()
        for row in table
    )


def _how_to_reach(stack: devstack.Stack) -> None:
    console.print("\nThe stack keeps running. To use it from your shell:")
    console.print(f"  source {stack.state_dir / 'env'}")
    console.print(f"  # or: export KUBECONFIG={stack.kubeconfig}")
    console.print(f"Controller log: {stack.state_dir / 'controller.log'}")
    console.print("Stop everything with: make down")


@app.command()
def up(
    state_dir: Path | None = STATE,
    controller: bool = typer.Option(True, help="Also start the controller."),
) -> None:
    """Start the control plane, Postgres, CRDs, RBAC and (by default) the controller."""
    stack = _up(_state(state_dir), controller)
    _how_to_reach(stack)


@app.command()
def down(state_dir: Path | None = STATE) -> None:
    """Stop the controller, Postgres and the control plane started by `up`."""
    stopped = devstack.down(_state(state_dir))
    console.print(f"stopped: {', '.join(stopped)}" if stopped else "nothing was running")


#: The demo's workload (examples/workload.yaml), the subject of the example Mind's goal.
WORKLOAD = "atlas-worker"


def demo(
    state_dir: Path | None = STATE,
    manifest: Path = typer.Option(None, help="Mind manifest (default examples/mind.yaml)."),
    timeout: int = typer.Option(90, help="Seconds to wait for the Mind to become Ready."),
    notice_timeout: int = typer.Option(
        240, help="Seconds to wait for the Mind to notice the broken workload and ask."
    ),
) -> None:
    """Start everything, deploy a workload and a Mind, break the workload, and stop where the
    Mind asks a person to approve a restart."""
    stack = _up(_state(state_dir), with_controller=True)
    manifest = manifest or repo_root() / "examples" / "mind.yaml"
    kc = stack.kubeconfig
    # The workload first: the Mind's first cycle then finds it running, not missing.
    console.rule(f"the workload: kubectl apply -f examples/workload.yaml ({WORKLOAD})")
    try:
        console.print(
            story.deploy(kc, repo_root() / "examples" / "workload.yaml", WORKLOAD, timeout)
        )
    except KubectlError as exc:
        console.print(f"[red]the workload did not roll out:[/red] {exc}")
        console.print("the story needs a cluster whose world runs: see docs/world.md")
        raise typer.Exit(1) from exc
    console.rule("kubectl apply")
    console.print(kubectl(kc, "apply", "-f", str(manifest)).stdout.strip())
    console.rule("waiting for Ready")
    try:
        out = kubectl(
            kc,
            "wait",
            "--for=condition=Ready",
            f"--timeout={timeout}s",
            "-f",
            str(manifest),
            timeout=timeout + 10,
        ).stdout.strip()
        console.print(out)
    except KubectlError as exc:
        console.print(f"[red]not Ready:[/red] {exc}")
        console.print(f"controller log: {stack.state_dir / 'controller.log'}")
        raise typer.Exit(1) from exc
    console.rule("kubectl get minds -A")
    typer.echo(kubectl(kc, "get", "minds", "-A").stdout.rstrip())
    applied = kubectl_json(kc, "get", "-f", str(manifest))
    meta = applied["metadata"]
    console.rule(f"the ledger: events of {meta['namespace']}/{meta['name']}")
    with Ledger.from_url(stack.reader_database_url, read_only=True) as ledger:
        rows = [
            (
                str(e.id),
                e.occurred_at.isoformat(timespec="seconds"),
                f"{e.namespace}/{e.mind}",
                e.type,
                f"{e.subject.kind}/{e.subject.name}",
            )
            for e in ledger.events(namespace=meta["namespace"], mind=meta["name"])
        ]
    typer.echo(columns(("ID", "OCCURRED-AT", "MIND", "TYPE", "SUBJECT"), rows))
    _break_and_ask(kc, meta["name"], notice_timeout, stack)
    _how_to_reach(stack)


def _break_and_ask(kc: Path, mind: str, notice_timeout: int, stack: devstack.Stack) -> None:
    """Break the workload's Pods, wait for the Mind to ask, and say how to answer."""
    console.rule(f"break it: kubectl label pods -l app={WORKLOAD} {story.FAULT_LABEL}=crashloop")
    typer.echo(story.break_pods(kc, WORKLOAD))
    console.rule(f"{mind} notices, plans a restart and asks a person")
    try:
        pending = story.wait_for_approval(kc, mind, timeout=notice_timeout)
    except ProcessError as exc:
        console.print(f"[red]no approval asked:[/red] {exc}")
        console.print(f"controller log: {stack.state_dir / 'controller.log'}")
        raise typer.Exit(1) from exc
    typer.echo(kubectl(kc, "get", "pods", "-l", f"app={WORKLOAD}").stdout.rstrip())
    typer.echo(kubectl(kc, "get", "plans").stdout.rstrip())
    typer.echo(kubectl(kc, "get", "approvals").stdout.rstrip())
    plugin, patch = story.approve_commands(pending.approval)
    console.rule("your turn")
    typer.echo(f"Plan {pending.plan} waits at step {pending.step} for approval {pending.approval}.")
    typer.echo("Approve the restart as a person in minds:approvers (source the env file first):")
    typer.echo(f"  {plugin}")
    typer.echo("which is, in plain kubectl:")
    typer.echo(f"  {patch}")
    typer.echo("Then watch it happen:")
    typer.echo(f"  kubectl rollout status deployment/{WORKLOAD}")
    typer.echo("  kubectl get plans")
    typer.echo(f"  kubectl minds why plan/{pending.plan} {pending.step}")

"""The ``minds`` command (also ``kubectl minds`` as a kubectl plugin)."""

from __future__ import annotations

import sys

import typer

from minds.cli import (
    approve_cmd,
    controller_cmd,
    correct_cmd,
    crds_cmd,
    db_cmd,
    dev_cmd,
    failures,
    metrics_cmd,
    plan_cmd,
    why_cmd,
)

app = typer.Typer(
    name="minds",
    help="Run and inspect minds: agents that look after infrastructure under strict authority.",
    no_args_is_help=True,
    add_completion=False,
)
app.add_typer(controller_cmd.app, name="controller")
app.add_typer(crds_cmd.app, name="crds")
app.add_typer(db_cmd.app, name="db")
app.add_typer(dev_cmd.app, name="dev")
app.add_typer(metrics_cmd.app, name="metrics")
app.add_typer(plan_cmd.app, name="plan")
app.command("demo")(dev_cmd.demo)
app.command("approve")(approve_cmd.approve)
app.command("deny")(approve_cmd.deny)
app.command("release")(approve_cmd.release)
app.command("why")(why_cmd.why)
app.command("timeline")(why_cmd.timeline)
app.command("fork")(why_cmd.fork)
app.command("ask")(why_cmd.ask)
correct_cmd.register(app)


def main() -> None:
    """The entry point of ``minds`` and ``kubectl-minds``: the commands, with every failure a
    person can cause or fix answered in one line (see ``minds.cli.failures``)."""
    try:
        app()
    except Exception as exc:  # answered by the table, or re-raised by report()
        sys.exit(failures.report(exc))


if __name__ == "__main__":  # pragma: no cover
    main()

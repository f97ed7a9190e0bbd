"""The ``minds`` command (also ``kubectl minds`` as a kubectl plugin).

A command imports only what it needs: ``kubectl minds approve`` has no use for the ledger, the
controller's handlers or the plan renderer, and importing every command's dependencies cost
about a second of CPU on each call (``approve`` alone imports in 0.4 s). ``main`` therefore
registers just the command named on the command line; anything else (no command, ``--help``,
a name that is no command) gets every command, so help and "No such command" stay whole.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from importlib import import_module

import typer
from typer._completion_classes import completion_init

HELP = "Run and inspect minds: agents that look after infrastructure under strict authority."

#: Every command, in the order help lists them: its name -> the module and attribute that
#: define it (a Typer app is a group of subcommands, a function is one command).
COMMANDS: dict[str, tuple[str, str]] = {
    "controller": ("minds.cli.controller_cmd", "app"),
    "crds": ("minds.cli.crds_cmd", "app"),
    "db": ("minds.cli.db_cmd", "app"),
    "dev": ("minds.cli.dev_cmd", "app"),
    "metrics": ("minds.cli.metrics_cmd", "app"),
    "plan": ("minds.cli.plan_cmd", "app"),
    "demo": ("minds.cli.dev_cmd", "demo"),
    "approve": ("minds.cli.approve_cmd", "approve"),
    "deny": ("minds.cli.approve_cmd", "deny"),
    "release": ("minds.cli.approve_cmd", "release"),
    "why": ("minds.cli.why_cmd", "why"),
    "timeline": ("minds.cli.why_cmd", "timeline"),
    "fork": ("minds.cli.why_cmd", "fork"),
    "ask": ("minds.cli.why_cmd", "ask"),
    "cancel": ("minds.cli.correct_cmd", "cancel"),
    "abandon": ("minds.cli.correct_cmd", "abandon"),
    "resume": ("minds.cli.correct_cmd", "resume"),
    "revoke": ("minds.cli.correct_cmd", "revoke"),
    "version": ("minds.cli.version_cmd", "version"),
    "completion": ("minds.cli.completion_cmd", "completion"),
}

#: The root options that end the command before any command runs.
VERSION_FLAG = "--version"


def build(names: Sequence[str] = tuple(COMMANDS)) -> typer.Typer:
    """The ``minds`` app with the named commands."""
    # typer's --install-completion and --show-completion guess the shell from the parent
    # process; `minds completion SHELL` is told it, as kubectl's is. The classes that answer
    # a completion request are typer's all the same (its scripts expect their replies).
    built = typer.Typer(name="minds", help=HELP, no_args_is_help=True, add_completion=False)
    completion_init()
    # A group even with one command: otherwise Typer would run that command directly and
    # take its own name for an argument.
    built.callback()(_group)
    for name in names:
        module, attribute = COMMANDS[name]
        defined = getattr(import_module(module), attribute)
        if isinstance(defined, typer.Typer):
            built.add_typer(defined, name=name)
        else:
            built.command(name)(defined)
    return built


def _print_version(value: bool) -> None:
    if value:
        from minds import __version__

        typer.echo(__version__)
        raise typer.Exit()


def _group(
    version: bool = typer.Option(
        False,
        VERSION_FLAG,
        is_eager=True,
        callback=_print_version,
        help="Print the client's version and exit (`minds version` adds the controller's).",
    ),
) -> None:
    """Run and inspect minds: agents that look after infrastructure under strict authority."""


def selected(argv: Sequence[str]) -> tuple[str, ...]:
    """The commands to register for this command line: the one it names, none for
    ``--version`` (it answers before any command could run), or all."""
    if len(argv) > 1 and argv[1] in COMMANDS:
        return (argv[1],)
    if len(argv) > 1 and argv[1] == VERSION_FLAG:
        return ()
    return tuple(COMMANDS)


def __getattr__(name: str) -> typer.Typer:
    """``minds.cli.main.app``: every command (for tests and tools that drive the app)."""
    if name == "app":
        return build()
    raise AttributeError(name)


def main() -> None:
    """The entry point of ``minds`` and ``kubectl-minds``: the commands, with every failure a
    person can cause or fix answered in one line (see ``minds.cli.failures``)."""
    try:
        build(selected(sys.argv))()
    except Exception as exc:  # answered by the table, or re-raised by report()
        from minds.cli import failures  # only on the way out: it imports every client's errors

        sys.exit(failures.report(exc))


if __name__ == "__main__":  # pragma: no cover
    main()

"""``minds completion SHELL``: the script that lets a shell complete ``minds`` commands.

The script holds no list of commands: on each TAB the shell runs the program with
``_<PROG>_COMPLETE`` set, and the program answers from its own commands and options, so the
completion can never fall behind the commands a release has.
"""

from __future__ import annotations

from enum import StrEnum

import typer

# typer's own script, as its --show-completion prints it: the replies it expects are those of
# the completion classes main.build() registers. Not re-exported by typer, hence the module.
from typer._completion_shared import get_completion_script


class Shell(StrEnum):
    BASH = "bash"
    ZSH = "zsh"
    FISH = "fish"


def complete_var(prog_name: str) -> str:
    """The variable under which ``prog_name`` answers a completion request (typer's name)."""
    return "_{}_COMPLETE".format(prog_name.replace("-", "_").upper())


def completion(
    ctx: typer.Context,
    shell: Shell = typer.Argument(..., help="bash, zsh or fish."),
) -> None:
    """Print the completion script for SHELL; docs/cli.md says where to put it."""
    # The program's own name: minds, or kubectl-minds when run by that name.
    prog_name = ctx.find_root().info_name or "minds"
    typer.echo(
        get_completion_script(
            prog_name=prog_name, complete_var=complete_var(prog_name), shell=shell.value
        )
    )

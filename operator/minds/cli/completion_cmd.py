"""``minds completion SHELL``: the script that lets a shell complete ``minds`` commands.

The script holds no list of commands: on each TAB the shell runs the program with
``_<PROG>_COMPLETE`` set, and the program answers from its own commands and options, so the
completion can never fall behind the commands a release has.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from enum import StrEnum
from typing import Any

import typer

# typer carries its own click: a completer must be made of the classes its commands are.
from typer._click.shell_completion import CompletionItem, ShellComplete

# typer's own script, as its --show-completion prints it: the replies it expects are those of
# the completion classes main.build() registers. Not re-exported by typer, hence the module.
from typer._completion_shared import get_completion_script

KUBECTL_PLUGIN = "kubectl-minds"


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


#: cobra's ShellCompDirectiveNoFileComp: kubectl's completion offers no file names after ours.
NO_FILE_COMPLETION = 4


class KubectlComplete(ShellComplete):
    """kubectl's plugin completion (kubectl 1.26 and later): kubectl runs
    ``kubectl_complete-minds`` with the words after ``kubectl minds``, the last one being the
    word under the cursor, and reads cobra's ``__complete`` reply: the candidates one per line
    (a tab, then its help), then ``:DIRECTIVE``."""

    name = "kubectl"
    source_template = ""  # kubectl holds the script; this program only answers

    def __init__(self, cli: Any, words: Sequence[str]) -> None:
        super().__init__(cli, {}, KUBECTL_PLUGIN, complete_var(KUBECTL_PLUGIN))
        self._words = list(words) or [""]

    def source_vars(self) -> dict[str, Any]:
        return {}

    def get_completion_args(self) -> tuple[list[str], str]:
        return self._words[:-1], self._words[-1]

    def format_completion(self, item: CompletionItem) -> str:
        return f"{item.value}\t{item.help}" if item.help else item.value

    def reply(self) -> str:
        args, incomplete = self.get_completion_args()
        lines = [self.format_completion(item) for item in self.get_completions(args, incomplete)]
        return "\n".join([*lines, f":{NO_FILE_COMPLETION}"])


def kubectl_complete() -> None:
    """The entry point ``kubectl_complete-minds`` (see ``KubectlComplete``). The answers come
    from the commands themselves, as for ``minds completion``."""
    from minds.cli.main import build, selected

    words = sys.argv[1:]
    command = typer.main.get_command(build(selected([KUBECTL_PLUGIN, *words[:-1]])))
    typer.echo(KubectlComplete(command, words).reply())

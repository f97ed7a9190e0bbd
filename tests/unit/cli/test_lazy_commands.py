"""A command imports what it needs, not what every other command needs."""

from __future__ import annotations

import typer
from typer.testing import CliRunner

from minds.cli.main import COMMANDS, build, selected
from tests.unit.cli.program import imported_by


def test_the_command_line_names_the_one_command_registered() -> None:
    assert selected(["minds", "approve", "x"]) == ("approve",)
    assert selected(["minds", "controller", "run"]) == ("controller",)
    # no command, help, or a name that is no command: every command, so help stays whole
    assert selected(["minds"]) == tuple(COMMANDS)
    assert selected(["minds", "--help"]) == tuple(COMMANDS)
    assert selected(["minds", "nosuch"]) == tuple(COMMANDS)


def test_every_command_builds_alone_and_answers_help_under_its_name() -> None:
    runner = CliRunner()
    for name in COMMANDS:
        result = runner.invoke(build([name]), [name, "--help"])
        assert result.exit_code == 0, (name, result.output)
        assert f"minds {name}" in result.output.replace("root ", "minds "), name


def test_help_lists_every_command() -> None:
    app = build()
    assert isinstance(app, typer.Typer)
    result = CliRunner().invoke(app, ["--help"])
    assert result.exit_code == 0
    for name in COMMANDS:
        assert name in result.output


def test_approving_does_not_import_the_ledger_or_the_controller() -> None:
    _, modules = imported_by("approve", "--help")
    assert not {"minds.adapters.ledger", "minds.controller.handlers", "kopf"} & modules

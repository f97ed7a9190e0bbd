"""One ``-o`` for every command that prints: ``text``, ``json`` or ``yaml``, from one definition,
and anything else refused before the command runs, naming the option and the values."""

from __future__ import annotations

import inspect
import json
import re
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from typing import Any

import pytest
import typer
import yaml
from typer.testing import CliRunner

from minds.cli.main import build
from minds.cli.options import OUTPUT, Output, emit
from minds.devenv.install import repo_root
from tests.fixtures.docs import sections

DOC = repo_root() / "docs" / "cli.md"


def registered(app: typer.Typer) -> Iterator[Callable[..., Any]]:
    """Every command function of an app and of the groups under it."""
    for command in app.registered_commands:
        assert command.callback is not None
        yield command.callback
    for group in app.registered_groups:
        assert group.typer_instance is not None
        yield from registered(group.typer_instance)


def printing(group: Any, path: tuple[str, ...] = ()) -> Iterator[tuple[tuple[str, ...], int]]:
    """Every command with an ``--output`` option, and how many arguments it requires.
    (typer's own copy of click builds the tree, hence no click types here.)"""
    for name, command in group.commands.items():
        if hasattr(command, "commands"):
            yield from printing(command, (*path, name))
        elif any("--output" in p.opts for p in command.params):
            required = [p for p in command.params if p.param_type_name == "argument" and p.required]
            yield (*path, name), len(required)


PRINTING = sorted(printing(typer.main.get_group(build())))


def test_these_commands_print() -> None:
    # A command that gains or loses -o shows here, and must join the one definition.
    assert [path for path, _ in PRINTING] == [
        ("plan", "show"),
        ("plan", "validate"),
        ("timeline",),
        ("version",),
        ("why",),
    ]


def test_every_output_option_is_the_one_definition() -> None:
    found = 0
    for function in registered(build()):
        for parameter in inspect.signature(function).parameters.values():
            declared = getattr(parameter.default, "param_decls", ()) or ()
            if "--output" in declared or "-o" in declared:
                assert parameter.default is OUTPUT, function.__qualname__
                found += 1
    assert found == len(PRINTING)


@pytest.mark.parametrize(("path", "required"), PRINTING, ids=[" ".join(p) for p, _ in PRINTING])
def test_an_unknown_output_is_refused_naming_the_option_and_the_values(
    path: tuple[str, ...], required: int
) -> None:
    line = [*path, *["x"] * required, "-o", "xml"]
    result = CliRunner().invoke(build(), line, env={"COLUMNS": "200"})
    assert result.exit_code == 2, result.output
    assert "'--output'" in result.stderr
    assert "'text', 'json', 'yaml'" in result.stderr
    assert result.stdout == ""
    # docs/cli.md quotes the refusal as it is.
    fences = re.findall(r"^```(\w*)\n(.*?)^```", sections(DOC)["Output"], re.M | re.S)
    [quoted] = [body.strip() for lang, body in fences if not lang]
    assert quoted in result.stderr


DATA = [{"at": datetime(2030, 1, 2, 3, 4, 5, tzinfo=UTC), "what": "plan_completed", "n": 2}]


def test_yaml_is_the_json_document(capsys: pytest.CaptureFixture[str]) -> None:
    emit(Output.JSON, DATA, lambda: "unused")
    as_json = json.loads(capsys.readouterr().out)
    emit(Output.YAML, DATA, lambda: "unused")
    as_yaml = yaml.safe_load(capsys.readouterr().out)
    assert as_yaml == as_json
    assert as_json[0]["at"] == "2030-01-02 03:04:05+00:00"


def test_text_is_for_people_and_nothing_to_tell_prints_nothing(
    capsys: pytest.CaptureFixture[str],
) -> None:
    emit(Output.TEXT, DATA, lambda: "one line")
    assert capsys.readouterr().out == "one line\n"
    emit(Output.TEXT, [], lambda: "")
    assert capsys.readouterr().out == ""

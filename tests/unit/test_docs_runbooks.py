"""The runbooks: one per alert, each saying what it means, what to check and what to do, and
every command in them a real one: a `kubectl minds` command of this project's CLI with
arguments and options it accepts, or a kubectl command whose verb and flags kubectl knows.
(tests/e2e/test_docs_runbooks.py runs them against a real control plane.)"""

from __future__ import annotations

import shlex
import subprocess

import pytest
import typer
import yaml
from typer.exceptions import TyperException

from minds.cli.main import app
from tests.fixtures.docs import sh_commands
from tests.fixtures.prometheus import REPO, RULES_FILE

RUNBOOKS = REPO / "docs" / "runbooks"
SECTIONS = ("## What it means", "## What to check", "## What to do")
#: Stand-ins for the placeholders: any well-formed name will do for parsing.
EXAMPLES = {
    "<namespace>": "team-a",
    "<mind>": "atlas-keeper",
    "<plan>": "atlas-restart",
    "<step>": "P1",
    "<approval>": "atlas-restart-p1",
    "<workload>": "atlas-worker",
}


def _alerts() -> list[str]:
    groups = yaml.safe_load(RULES_FILE.read_text())["groups"]
    return [r["alert"] for g in groups for r in g["rules"] if "alert" in r]


def _commands() -> list[tuple[str, str]]:
    return [
        (page.stem, c) for page in sorted(RUNBOOKS.glob("Minds*.md")) for c in sh_commands(page)
    ]


def substituted(command: str) -> list[str]:
    for placeholder, value in EXAMPLES.items():
        command = command.replace(placeholder, value)
    assert "<" not in command, f"unknown placeholder in {command!r}"
    return shlex.split(command)


def test_every_alert_has_a_runbook_and_every_runbook_an_alert() -> None:
    assert sorted(p.stem for p in RUNBOOKS.glob("Minds*.md")) == sorted(_alerts())


@pytest.mark.parametrize("alert", _alerts())
def test_every_runbook_says_what_it_means_what_to_check_and_what_to_do(alert: str) -> None:
    page = (RUNBOOKS / f"{alert}.md").read_text()
    assert page.startswith(f"# {alert}\n")
    positions = [page.find(section) for section in SECTIONS]
    assert -1 not in positions, f"{alert}: missing one of {SECTIONS}"
    assert positions == sorted(positions), f"{alert}: sections out of order"
    assert sh_commands(RUNBOOKS / f"{alert}.md"), f"{alert}: no command to type"


def _resolve(args: list[str]) -> None:
    """Parse ``args`` as `kubectl minds` would, down to the leaf command, without running it:
    an unknown command, a missing argument or an unknown option raises the CLI's usage error."""
    command = typer.main.get_command(app)
    ctx = command.make_context("kubectl-minds", list(args))
    # Groups resolve a subcommand; a leaf command's make_context has already checked its args.
    while hasattr(command, "resolve_command"):
        name, sub, rest = command.resolve_command(ctx, [*ctx._protected_args, *ctx.args])
        assert sub is not None
        assert name is not None
        command = sub
        ctx = command.make_context(name, rest, parent=ctx)


@pytest.mark.parametrize(("alert", "command"), _commands())
def test_every_runbook_command_is_a_real_command(alert: str, command: str) -> None:
    args = substituted(command)
    assert args[0] == "kubectl", f"{alert}: {command!r} is not a kubectl command"
    if args[1] == "minds":
        _resolve(args[2:])
        return
    proc = subprocess.run(
        [*args, "--help"], capture_output=True, text=True, timeout=60, check=False
    )
    assert proc.returncode == 0, f"{alert}: {command}\n{proc.stderr}"


@pytest.mark.parametrize(
    "command",
    [
        "kubectl minds approve",
        "kubectl minds approve x --bogus",
        "kubectl minds frobnicate x",
    ],
)
def test_a_wrong_minds_command_is_refused(command: str) -> None:
    with pytest.raises(TyperException):
        _resolve(shlex.split(command)[2:])


def test_a_wrong_kubectl_command_is_refused() -> None:
    proc = subprocess.run(
        ["kubectl", "get", "plans", "--bogus", "--help"],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert proc.returncode != 0


def test_runbooks_index_lists_every_alert_with_its_severity() -> None:
    index = (RUNBOOKS / "README.md").read_text()
    groups = yaml.safe_load(RULES_FILE.read_text())["groups"]
    for rule in (r for g in groups for r in g["rules"] if "alert" in r):
        name = rule["alert"]
        assert f"| {name} | {rule['labels']['severity']} | [{name}.md]({name}.md) |" in index


def test_every_runbook_states_its_alerts_severity() -> None:
    groups = yaml.safe_load(RULES_FILE.read_text())["groups"]
    for rule in (r for g in groups for r in g["rules"] if "alert" in r):
        stated = (RUNBOOKS / f"{rule['alert']}.md").read_text().splitlines()[2]
        assert stated.startswith(f"Severity **{rule['labels']['severity']}**:"), rule["alert"]


def test_placeholders_are_only_the_documented_ones() -> None:
    for page in RUNBOOKS.glob("Minds*.md"):
        for command in sh_commands(page):
            substituted(command)

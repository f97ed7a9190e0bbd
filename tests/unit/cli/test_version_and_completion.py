"""``minds --version``, ``minds version`` as far as it goes without a cluster, and the shell
completion scripts, run by a real bash and answered by the real program."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from minds import __version__
from minds.cli.main import COMMANDS, build, selected
from minds.cli.version_cmd import build_info_version
from minds.devenv.install import repo_root
from minds.devenv.ports import free_port
from tests.fixtures.docs import sh_commands
from tests.unit.cli.program import BIN, imported_by, minds, write_kubeconfig

DOC = repo_root() / "docs" / "cli.md"


# --- the client's version ------------------------------------------------------------------


def test_dash_dash_version_prints_the_packages_version() -> None:
    done = minds("--version")
    assert done.returncode == 0, done.stderr
    assert done.stdout == f"{__version__}\n"


def test_dash_dash_version_registers_no_command() -> None:
    # It answers before a command could run: importing every command would cost a second.
    assert selected(["minds", "--version"]) == ()
    printed, modules = imported_by("--version")
    assert printed == __version__
    assert not {m for m in modules if m.endswith("_cmd")}


@pytest.mark.parametrize(
    ("output", "read"),
    [("json", json.loads), ("yaml", yaml.safe_load)],
)
def test_version_client_asks_no_cluster(output: str, read: object) -> None:
    runner = CliRunner()
    text = runner.invoke(build(["version"]), ["version", "--client"], env={"KUBECONFIG": "/nx"})
    assert (text.exit_code, text.stdout) == (0, f"Client Version: {__version__}\n")
    data = runner.invoke(build(["version"]), ["version", "--client", "-o", output])
    assert data.exit_code == 0
    assert callable(read)
    assert read(data.stdout) == {"clientVersion": __version__}


def test_the_controllers_version_is_its_build_info() -> None:
    exposition = (
        "# HELP minds_ledger_up 1 when the last ledger query succeeded, else 0.\n"
        "# TYPE minds_ledger_up gauge\n"
        "minds_ledger_up 1.0\n"
        "# HELP minds_build_info The controller's version; always 1.\n"
        "# TYPE minds_build_info gauge\n"
        'minds_build_info{version="9.8.7"} 1.0\n'
    )
    assert build_info_version(exposition) == "9.8.7"
    assert build_info_version("# TYPE up gauge\nup 1.0\n") is None


def test_without_a_cluster_the_client_version_is_printed_then_why_not(tmp_path: Path) -> None:
    missing = tmp_path / "no-such-kubeconfig"
    done = minds("version", env={"KUBECONFIG": str(missing)})
    assert done.returncode == 2
    assert done.stdout == f"Client Version: {__version__}\n"
    assert done.stderr == (
        f"error: the controller's version: no cluster to talk to: the kubeconfig {missing} "
        "(named by KUBECONFIG) does not exist\n"
    )
    as_json = minds("version", "-o", "json", env={"KUBECONFIG": str(missing)})
    assert as_json.returncode == 2
    assert json.loads(as_json.stdout) == {"clientVersion": __version__}


def test_an_unreachable_api_server_is_named_after_the_client_version(tmp_path: Path) -> None:
    closed = free_port()  # nothing listens there: the connection is refused at once
    kubeconfig = write_kubeconfig(tmp_path / "kubeconfig", f"https://127.0.0.1:{closed}")
    done = minds("version", env={"KUBECONFIG": str(kubeconfig)})
    assert done.returncode == 2
    assert done.stdout == f"Client Version: {__version__}\n"
    assert done.stderr.startswith(
        f"error: the controller's version: cannot reach the API server at "
        f"https://127.0.0.1:{closed}: "
    )


# --- completion ----------------------------------------------------------------------------


def bash_completes(*words: str) -> list[str]:
    """What bash offers after ``words`` (the last one being completed), with the script that
    ``minds completion bash`` prints loaded by docs/cli.md's command, as written."""
    load, _ = sh_commands(DOC, section="Shell completion")
    script = (
        f"{load}\n"
        f"COMP_WORDS=({' '.join(repr(w) for w in words)})\n"
        f"COMP_CWORD={len(words) - 1}\n"
        "_minds_completion minds\n"
        'printf "%s\\n" "${COMPREPLY[@]}"\n'
    )
    return in_bash(script).split()


def in_bash(script: str) -> str:
    """What ``script`` prints, run by bash with the program's directory first on PATH."""
    done = subprocess.run(
        ["bash", "-c", script],
        env={**os.environ, "PATH": f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}"},
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    return done.stdout


def test_the_bash_script_names_the_program_and_its_completion_variable() -> None:
    script = minds("completion", "bash").stdout
    assert "complete -o default -F _minds_completion minds" in script
    assert "_MINDS_COMPLETE=complete_bash" in script


def test_bash_completes_every_command_then_subcommands_then_output_values() -> None:
    assert set(bash_completes("minds", "")) == set(COMMANDS)
    assert bash_completes("minds", "pl") == ["plan"]
    assert set(bash_completes("minds", "plan", "")) == {"validate", "show"}
    assert bash_completes("minds", "why", "plan/p", "-o", "") == ["text", "json", "yaml"]


@pytest.mark.parametrize(
    ("shell", "registers", "request_env"),
    [
        (
            "zsh",
            "compdef _minds_completion minds",
            {"_MINDS_COMPLETE": "complete_zsh", "_TYPER_COMPLETE_ARGS": "minds pla"},
        ),
        (
            "fish",
            "complete --command minds",
            {
                "_MINDS_COMPLETE": "complete_fish",
                "_TYPER_COMPLETE_ARGS": "minds pla",
                "_TYPER_COMPLETE_FISH_ACTION": "get-args",
            },
        ),
    ],
)
def test_zsh_and_fish_scripts_ask_the_program_which_answers(
    shell: str, registers: str, request_env: dict[str, str]
) -> None:
    # No zsh or fish here: the script's registration, then the request it sends, answered.
    script = minds("completion", shell)
    assert script.returncode == 0
    assert registers in script.stdout
    assert f"_MINDS_COMPLETE=complete_{shell}" in script.stdout
    answer = minds(env=request_env)
    assert answer.returncode == 0, answer.stderr
    assert "plan" in answer.stdout


def kubectl_asks(words: str) -> list[str]:
    """What the real kubectl hears from ``kubectl_complete-minds`` for docs/cli.md's request,
    with ``words`` after ``kubectl __complete minds`` instead of the doc's."""
    _, asks = sh_commands(DOC, section="Shell completion")
    assert asks.startswith("kubectl __complete minds ")
    return in_bash(f"kubectl __complete minds {words}").splitlines()


def test_kubectl_completes_the_plugins_words_from_the_program() -> None:
    _, asks = sh_commands(DOC, section="Shell completion")
    assert kubectl_asks(asks.removeprefix("kubectl __complete minds ")) == [
        "text",
        "json",
        "yaml",
        ":4",
    ]
    commands = kubectl_asks('""')
    assert commands[-1] == ":4"  # no file names after ours
    assert {line.split("\t")[0] for line in commands[:-1]} == set(COMMANDS)
    assert kubectl_asks("plan sh") == ["show\tShow a plan's dependency graph, each...", ":4"]


def test_an_unknown_shell_is_refused_naming_the_shells() -> None:
    done = minds("completion", "tcsh")
    assert done.returncode == 2
    assert "'bash', 'zsh', 'fish'" in done.stderr

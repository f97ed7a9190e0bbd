"""``source .dev/env`` gives a shell the cluster, the ledger and the ``kubectl minds`` plugin."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from minds.devenv.stack import Stack


def stack(tmp_path: Path) -> Stack:
    return Stack(
        state_dir=tmp_path,
        kubeconfig=tmp_path / "kubeconfig",
        controller_kubeconfig=tmp_path / "controller.kubeconfig",
        database_url="postgresql+psycopg://app@127.0.0.1:1/minds",
        owner_database_url="postgresql+psycopg://owner@127.0.0.1:1/minds",
        own_cluster=True,
        own_postgres=True,
        reader_database_url="postgresql+psycopg://viewer@127.0.0.1:1/minds",
    )


def sourced(env_file: Path, command: str) -> subprocess.CompletedProcess[str]:
    """``command`` in a fresh shell whose PATH knows nothing of this environment's bin."""
    bare = os.pathsep.join(
        p
        for p in os.environ.get("PATH", "").split(os.pathsep)
        if Path(p) != Path(sys.executable).parent
    )
    return subprocess.run(
        ["bash", "-c", f"source {env_file} && {command}"],
        env={"PATH": bare, "HOME": str(env_file.parent)},
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def test_the_env_file_puts_the_plugin_on_path(tmp_path: Path) -> None:
    env_file = tmp_path / "env"
    env_file.write_text(stack(tmp_path).env_lines())
    empty = tmp_path / "empty"
    empty.write_text("")
    assert sourced(empty, "command -v kubectl-minds").returncode != 0, "a bare shell has no plugin"
    found = sourced(env_file, "command -v kubectl-minds && echo $KUBECONFIG")
    assert found.returncode == 0, found.stderr
    where, kubeconfig = found.stdout.split()
    assert Path(where) == Path(sys.executable).parent / "kubectl-minds"
    assert kubeconfig == str(tmp_path / "kubeconfig")


@pytest.mark.skipif(shutil.which("kubectl") is None, reason="kubectl is not installed")
def test_kubectl_finds_the_plugin_after_sourcing(tmp_path: Path) -> None:
    env_file = tmp_path / "env"
    env_file.write_text(stack(tmp_path).env_lines())
    listed = sourced(env_file, "kubectl minds --help")
    assert listed.returncode == 0, listed.stderr
    assert "why" in listed.stdout
    assert "timeline" in listed.stdout


def test_the_env_file_points_the_reading_commands_at_the_reader(tmp_path: Path) -> None:
    env_file = tmp_path / "env"
    env_file.write_text(stack(tmp_path).env_lines())
    found = sourced(env_file, "echo $MINDS_DATABASE_READER_URL $MINDS_DATABASE_URL")
    assert found.returncode == 0, found.stderr
    assert found.stdout.split() == [
        "postgresql+psycopg://viewer@127.0.0.1:1/minds",
        "postgresql+psycopg://app@127.0.0.1:1/minds",
    ]

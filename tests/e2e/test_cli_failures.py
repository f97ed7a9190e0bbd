"""Every ``kubectl minds`` command answers a missing object, a refused request and an
unreachable API server with one line on stderr and a non-zero exit, never a traceback or a raw
API response. Run as a person runs them: ``kubectl minds ...``, the plugin found on PATH.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.fixtures.cluster import REPO, Cluster, with_namespace

pytestmark = pytest.mark.minutes(1)

BIN = Path(sys.executable).parent

#: Each command, naming an object that is not there.
MISSING: dict[str, tuple[str, ...]] = {
    "approve": ("approve", "no-such-approval"),
    "deny": ("deny", "no-such-approval", "--note", "no"),
    "release": ("release", "no-such-plan", "P1"),
    "why plan": ("why", "plan/no-such-plan"),
    "why approval": ("why", "approval/no-such-approval"),
    "why step": ("why", "plan/no-such-plan", "P1"),
    "timeline": ("timeline", "no-such-mind"),
    "fork": ("fork", "no-such-mind", "its-fork"),
    "ask": ("ask", "no-such-mind", "why is atlas down?"),
    "plan show": ("plan", "show", "no-such-plan"),
}


def kubectl_minds(
    *args: str, kubeconfig: Path, database_url: str, context: str | None = None
) -> subprocess.CompletedProcess[str]:
    kubectl = shutil.which("kubectl")
    assert kubectl is not None, "kubectl is not on PATH"
    argv = [kubectl, "minds", *args]
    if context:
        argv += ["--context", context]
    return subprocess.run(
        argv,
        env={
            **os.environ,
            # kubectl finds plugins on PATH: the one this environment installed.
            "PATH": f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}",
            "KUBECONFIG": str(kubeconfig),
            "MINDS_DATABASE_URL": database_url,
            "COLUMNS": "200",
        },
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def one_clear_line(proc: subprocess.CompletedProcess[str]) -> str:
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr
    line = lines[0]
    assert line.startswith("error: "), line
    assert "Traceback" not in proc.stderr
    assert "HTTP response" not in line, line
    assert "{" not in line, line
    assert proc.stdout == ""
    return line


@pytest.mark.parametrize("args", MISSING.values(), ids=MISSING.keys())
def test_a_missing_object_is_one_line_and_exit_1(
    cluster: Cluster, namespace: str, e2e_database_url: str, args: tuple[str, ...]
) -> None:
    proc = kubectl_minds(
        *args, "-n", namespace, kubeconfig=cluster.kubeconfig, database_url=e2e_database_url
    )
    assert proc.returncode == 1, proc.stderr
    line = one_clear_line(proc)
    assert "not found" in line
    assert f"{namespace}/no-such-" in line


@pytest.mark.parametrize("args", MISSING.values(), ids=MISSING.keys())
def test_an_unreachable_api_server_is_one_line_and_exit_2(
    tmp_path: Path, e2e_database_url: str, args: tuple[str, ...]
) -> None:
    closed = tmp_path / "kubeconfig"
    closed.write_text(
        "apiVersion: v1\nkind: Config\ncurrent-context: gone\n"
        "clusters: [{name: gone, cluster: {server: 'https://127.0.0.1:9'}}]\n"
        "users: [{name: someone, user: {token: t}}]\n"
        "contexts: [{name: gone, context: {cluster: gone, user: someone, namespace: x}}]\n"
    )
    proc = kubectl_minds(*args, kubeconfig=closed, database_url=e2e_database_url)
    assert proc.returncode == 2, proc.stderr
    line = one_clear_line(proc)
    assert "cannot reach the API server at https://127.0.0.1:9" in line


def test_a_refused_request_is_one_line_and_exit_1(
    cluster: Cluster, namespace: str, e2e_database_url: str
) -> None:
    cluster.kubectl(
        "apply",
        "-n",
        namespace,
        "-f",
        "-",
        input_=with_namespace(REPO / "examples/mind.yaml", namespace),
    )
    proc = kubectl_minds(
        "ask",
        "atlas-keeper",
        "why is atlas down?",
        "-n",
        namespace,
        kubeconfig=cluster.kubeconfig,
        database_url=e2e_database_url,
        context="viewer",
    )
    assert proc.returncode == 1, proc.stderr
    line = one_clear_line(proc)
    assert line.startswith("error: refused: ")
    assert "forbidden" in line

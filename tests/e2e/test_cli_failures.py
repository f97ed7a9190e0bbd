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

from minds.devenv.ports import free_port
from tests.fixtures.cluster import REPO, Cluster, with_namespace
from tests.unit.cli.program import CLUSTER_ENV, write_kubeconfig

pytestmark = pytest.mark.minutes(1)

BIN = Path(sys.executable).parent
NO_CLUSTER = "error: no cluster to talk to: "

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
    *args: str,
    kubeconfig: Path | str | None,
    database_url: str,
    context: str | None = None,
    env: dict[str, str] | None = None,
) -> subprocess.CompletedProcess[str]:
    """``kubectl minds ARGS`` with ``kubeconfig`` as KUBECONFIG (None: unset) and ``env``
    the only other say on where the cluster is."""
    kubectl = shutil.which("kubectl")
    assert kubectl is not None, "kubectl is not on PATH"
    argv = [kubectl, "minds", *args]
    if context:
        argv += ["--context", context]
    where = {"KUBECONFIG": str(kubeconfig)} if kubeconfig is not None else {}
    return subprocess.run(
        argv,
        env={
            **{k: v for k, v in os.environ.items() if k not in CLUSTER_ENV},
            # kubectl finds plugins on PATH: the one this environment installed.
            "PATH": f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}",
            **where,
            "MINDS_DATABASE_URL": database_url,
            "COLUMNS": "200",
            **(env or {}),
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
    port = free_port()  # a local port nothing listens on: the connection is refused at once
    closed = write_kubeconfig(tmp_path / "kubeconfig", f"https://127.0.0.1:{port}")
    proc = kubectl_minds(*args, kubeconfig=closed, database_url=e2e_database_url)
    assert proc.returncode == 2, proc.stderr
    line = one_clear_line(proc)
    assert line.startswith(f"error: cannot reach the API server at https://127.0.0.1:{port}: ")


@pytest.mark.parametrize("args", MISSING.values(), ids=MISSING.keys())
def test_a_missing_kubeconfig_is_named_with_what_named_it_exit_2(
    tmp_path: Path, e2e_database_url: str, args: tuple[str, ...]
) -> None:
    missing = tmp_path / "kubeconfig"
    proc = kubectl_minds(*args, kubeconfig=missing, database_url=e2e_database_url)
    assert proc.returncode == 2, proc.stderr
    line = one_clear_line(proc)
    assert line == f"{NO_CLUSTER}the kubeconfig {missing} (named by KUBECONFIG) does not exist"


@pytest.mark.parametrize("args", MISSING.values(), ids=MISSING.keys())
def test_no_kubeconfig_outside_a_pod_is_said_exit_2(
    tmp_path: Path, e2e_database_url: str, args: tuple[str, ...]
) -> None:
    proc = kubectl_minds(
        *args, kubeconfig=None, database_url=e2e_database_url, env={"HOME": str(tmp_path)}
    )
    assert proc.returncode == 2, proc.stderr
    line = one_clear_line(proc)
    assert line == (
        f"{NO_CLUSTER}no kubeconfig: KUBECONFIG is not set, ~/.kube/config does not exist, "
        "and this is not a Pod in a cluster"
    )


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

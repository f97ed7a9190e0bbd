"""Where the cluster is, and what a command says when it cannot tell: a missing kubeconfig is
named with what named it, no kubeconfig at all outside a Pod is said as such, a broken one
gives its own reason, and an unreachable API server is named by its address. Real files and
a real closed port; ``minds approve`` stands for every command (tests/e2e/test_cli_failures.py
runs each)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from minds.devenv.ports import free_port
from tests.unit.cli.program import minds, write_kubeconfig

NOT_A_POD = "and this is not a Pod in a cluster"


def said(*args: str, env: dict[str, str]) -> str:
    done = minds("approve", "some-approval", *args, env=env)
    assert done.returncode == 2, done.stderr
    assert done.stdout == ""
    [line] = done.stderr.splitlines()
    return line


def test_a_missing_file_named_by_kubeconfig(tmp_path: Path) -> None:
    missing = tmp_path / "kubeconfig"
    line = said(env={"KUBECONFIG": str(missing)})
    assert line == (
        f"error: no cluster to talk to: the kubeconfig {missing} (named by KUBECONFIG) "
        "does not exist"
    )


def test_a_missing_file_named_by_the_flag(tmp_path: Path) -> None:
    missing = tmp_path / "kubeconfig"
    line = said("--kubeconfig", str(missing), env={})
    assert line.endswith(f"the kubeconfig {missing} (named by --kubeconfig) does not exist")


def test_a_list_of_missing_files(tmp_path: Path) -> None:
    a, b = tmp_path / "a", tmp_path / "b"
    line = said(env={"KUBECONFIG": f"{a}{os.pathsep}{b}"})
    assert line.endswith(f"none of the kubeconfigs {a}, {b} (named by KUBECONFIG) exists")


def test_no_kubeconfig_at_all_outside_a_pod(tmp_path: Path) -> None:
    line = said(env={"HOME": str(tmp_path)})  # no ~/.kube/config there
    assert line == (
        "error: no cluster to talk to: no kubeconfig: KUBECONFIG is not set, ~/.kube/config "
        f"does not exist, {NOT_A_POD}"
    )


def test_in_a_pod_the_service_accounts_own_reason(tmp_path: Path) -> None:
    # A Pod's variables but no ServiceAccount token mounted: that is what is wrong.
    pod = {"HOME": str(tmp_path), "KUBERNETES_SERVICE_HOST": "10.0.0.1"}
    line = said(env={**pod, "KUBERNETES_SERVICE_PORT": "443"})
    assert NOT_A_POD not in line
    assert line == "error: no cluster to talk to: Service token file does not exist."


def test_a_context_the_kubeconfig_lacks(tmp_path: Path) -> None:
    kubeconfig = write_kubeconfig(tmp_path / "kubeconfig", "https://127.0.0.1:6443")
    line = said("--context", "nosuch", env={"KUBECONFIG": str(kubeconfig)})
    assert line.startswith(f"error: no cluster to talk to: the kubeconfig {kubeconfig}: ")
    assert "nosuch" in line


@pytest.mark.parametrize(
    ("content", "says", "ending"),
    [
        ("clusters: [\n", " is not YAML: ", "(line 2, column 1)"),
        ("", ": ", "file is empty"),
    ],
    ids=["not YAML", "empty"],
)
def test_a_kubeconfig_that_does_not_load(
    tmp_path: Path, content: str, says: str, ending: str
) -> None:
    broken = tmp_path / "kubeconfig"
    broken.write_text(content)
    line = said(env={"KUBECONFIG": str(broken)})
    assert line.startswith(f"error: no cluster to talk to: the kubeconfig {broken}{says}")
    assert line.endswith(ending)


def test_a_kubeconfig_that_cannot_be_read(tmp_path: Path) -> None:
    # A directory where the file should be: unreadable whoever runs the test (root reads a
    # file of mode 000).
    line = said(env={"KUBECONFIG": str(tmp_path)})
    assert (
        line
        == f"error: no cluster to talk to: the kubeconfig {tmp_path} cannot be read: Is a directory"
    )


def test_an_unreachable_api_server_by_its_address(tmp_path: Path) -> None:
    closed = free_port()
    kubeconfig = write_kubeconfig(tmp_path / "kubeconfig", f"https://127.0.0.1:{closed}")
    # The missing first file of the list is skipped, as kubectl skips it.
    listed = f"{tmp_path / 'missing'}{os.pathsep}{kubeconfig}"
    line = said(env={"KUBECONFIG": listed})
    assert line.startswith(f"error: cannot reach the API server at https://127.0.0.1:{closed}: ")
    assert "refused" in line.lower()

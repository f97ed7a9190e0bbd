"""Every command in docs/install.md, run as written, in order, against a fresh local control
plane (the chart's cluster-scoped objects must not meet the session's kubectl-installed ones).

One change to what a reader types: ``helm install`` and ``helm upgrade`` get ``--no-hooks``,
because this control plane has no kubelet to run the migration Job and Helm would wait for it
forever. The Job's command is run in tests/e2e/test_chart_install.py with the environment the
Job gives it, and its rendering is checked in tests/unit/chart/; on the real node
(tests/node/test_chart.py, root only) the same commands run with their hooks.
"""

from __future__ import annotations

import os
import re
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from minds.devenv.install import repo_root
from minds.devenv.kubectl import kubectl
from tests.fixtures.docs import can_i_rows, run_documented, sh_commands
from tests.fixtures.helm import Helm, fresh_control_plane
from tests.fixtures.postgres import LedgerDatabase

REPO = repo_root()
DOC = REPO / "docs" / "install.md"
#: Its build command is checked against the image test's build in tests/unit/test_docs_install.py.
IMAGE = "The image"
#: `helm test` runs a Pod, which needs a kubelet: tests/node/test_chart.py runs it on the real
#: node, and tests/unit/chart/test_chart_helm_test.py runs its check against a real server.
CHECK = "Checking an install"
SECURITY_DOC = REPO / "docs" / "security.md"
_TEXT = re.compile(r"^```text\n(.*?)^```", re.MULTILINE | re.DOTALL)


@pytest.fixture
def fresh_cluster(tmp_path: Path) -> Iterator[Path]:
    with fresh_control_plane(tmp_path) as kubeconfig:
        yield kubeconfig


def test_every_command_in_the_install_doc_works(
    fresh_cluster: Path, helm: Helm, e2e_ledger_database: LedgerDatabase
) -> None:
    team = f"team-{uuid.uuid4().hex[:6]}"
    kubectl(fresh_cluster, "create", "namespace", team)
    commands = [
        f"{c} --no-hooks" if c.startswith(("helm install", "helm upgrade")) else c
        for c in sh_commands(DOC, skip=(IMAGE, CHECK))
    ]
    assert any(c.startswith("helm install") for c in commands)
    path = os.pathsep.join([str(helm.binary.parent), os.environ["PATH"]])
    outputs = run_documented(
        commands,
        {
            "<namespace>": team,
            "<controller-url>": e2e_ledger_database.app_url,
            "<owner-url>": e2e_ledger_database.owner_url,
        },
        {"KUBECONFIG": str(fresh_cluster), "PATH": path},
        REPO,
    )
    [listing] = [out for c, out in outputs.items() if c.startswith("kubectl auth can-i --list")]
    assert can_i_rows(listing) == can_i_rows(_TEXT.findall(SECURITY_DOC.read_text())[0])
    [shown] = [out for c, out in outputs.items() if c.startswith("kubectl get deployment")]
    assert "minds-controller" in shown
    # After the uninstall (the doc's last commands): the CRD is still there, the release is not.
    assert "minds.minds.dev" in outputs[commands[-1]]
    gone = helm.run("status", "minds", "-n", "minds-system", kubeconfig=fresh_cluster, check=False)
    assert gone.returncode != 0

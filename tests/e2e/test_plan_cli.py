"""Plans against the real control plane: the commands docs/planning.md gives an operator, run as
written (into a fresh namespace), and what `minds plan show` makes of what the API server holds.

No controller is started here. If one is running in the session it may judge the plans and
write their status first; the assertions hold either way, because they rest on the spec, or on a
status this test writes itself after any judgement the controller would make.
"""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
from pathlib import Path

import yaml

from minds.devenv.kubectl import kubectl
from tests.fixtures.cluster import REPO, Cluster, with_namespace

#: The commands of docs/planning.md that need a cluster, in the doc's order. Each is run by
#: `test_the_docs_commands` with `-n NAMESPACE` added; tests/unit/test_docs_planning.py checks
#: that these and the ones it runs itself are exactly the doc's commands.
DOC_COMMANDS = (
    "kubectl apply -f examples/mind.yaml",
    "kubectl apply -f examples/plan.yaml",
    "kubectl get plans",
    "kubectl describe plan restart-atlas-worker",
    "minds plan show restart-atlas-worker",
    "minds plan show restart-atlas-worker --dot > plan.dot",
    "minds plan show restart-atlas-worker -o json",
)
NAME = "restart-atlas-worker"
EXAMPLE = REPO / "examples" / "plan.yaml"


def minds(*args: str, kubeconfig: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "minds.cli.main", *args],
        env={**os.environ, "KUBECONFIG": str(kubeconfig), "COLUMNS": "200"},
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def run_doc_command(
    cluster: Cluster, namespace: str, command: str, workdir: Path
) -> subprocess.CompletedProcess[str]:
    """Run a doc command in `namespace`; a `> FILE` redirect writes into `workdir`."""
    argv = shlex.split(command, comments=True)
    target = None
    if ">" in argv:
        at = argv.index(">")
        target = workdir / argv[at + 1]
        argv = argv[:at]
    argv = [str(REPO / a) if a.startswith("examples/") else a for a in argv]
    if argv[0] == "kubectl":
        proc = cluster.kubectl(*argv[1:], "-n", namespace, check=False)
    else:
        assert argv[0] == "minds"
        proc = minds(*argv[1:], "-n", namespace, kubeconfig=cluster.kubeconfig)
    if target is not None:
        target.write_text(proc.stdout)
    return proc


def test_the_docs_commands(cluster: Cluster, namespace: str, tmp_path: Path) -> None:
    out = {}
    for command in DOC_COMMANDS:
        proc = run_doc_command(cluster, namespace, command, tmp_path)
        assert proc.returncode == 0, f"{command}: {proc.stderr}"
        out[command] = proc.stdout

    assert NAME in out["kubectl get plans"]
    assert "authored" in out["kubectl get plans"]
    assert f"Name:         {NAME}" in out["kubectl describe plan restart-atlas-worker"]

    shown = out["minds plan show restart-atlas-worker"]
    assert shown.startswith(f"Plan {namespace}/{NAME}: Bring atlas-worker back to running normally")
    # What the spec says is drawn whatever the status (none yet, or a controller's judgement).
    for line in (
        "mind atlas-keeper · origin operator · strategy authored · revision 1",
        "└── D1 [",
        "    │ service.status on default/atlas-worker, up to 3 attempts",
        "    └── P1 [",
        "        │ service.restart on default/atlas-worker, approval required",
        "        │ expects: atlas-worker is running normally within 60 s",
        "        └── V1 [",
        "              verifies P1's expectation: atlas-worker is running normally within 60 s",
    ):
        assert line in shown, line

    dot = (tmp_path / "plan.dot").read_text()
    assert dot.startswith(f'digraph "{NAME}" {{')
    assert '"D1" -> "P1";' in dot
    assert '"P1" -> "V1" [label="verifies"];' in dot

    body = json.loads(out["minds plan show restart-atlas-worker -o json"])
    assert body["metadata"]["namespace"] == namespace
    assert body["spec"]["origin"] == "operator"
    assert [s["key"] for s in body["spec"]["steps"]] == ["D1", "P1", "V1"]


def test_show_draws_the_status_the_api_server_holds(cluster: Cluster, namespace: str) -> None:
    from tests.unit.test_docs_planning import SHOWN_STATUS, get_plans_block, shown_block

    cluster.kubectl("apply", "-f", str(EXAMPLE), "-n", namespace)
    # Written after any judgement a running controller makes on create; a controller never
    # re-judges a plan that has left `validated`, so this is the status `show` reads. Only the
    # controller writes a Plan's status (status-policy.yaml): written with its token.
    kubectl(
        cluster.controller_kubeconfig,
        "patch", "plan", NAME, "-n", namespace, "--subresource=status", "--type=merge",
        "-p", json.dumps({"status": SHOWN_STATUS}),
    )  # fmt: skip
    shown = minds("plan", "show", NAME, "-n", namespace, kubeconfig=cluster.kubeconfig)
    assert shown.returncode == 0, shown.stderr
    block, name, doc_namespace = shown_block()
    expected = block.body.replace(f"Plan {doc_namespace}/{name}:", f"Plan {namespace}/{name}:", 1)
    assert shown.stdout.rstrip("\n") == expected

    table = cluster.kubectl("get", "plans", "-n", namespace).stdout.splitlines()
    documented = get_plans_block().body.splitlines()
    # Same columns and values; only the age differs.
    assert table[0].split() == documented[0].split()
    assert table[1].split()[:-1] == documented[1].split()[:-1]


def test_an_invalid_plan_is_stored_and_shown_with_its_cycle(
    cluster: Cluster, namespace: str
) -> None:
    invalid = REPO / "examples" / "plan-invalid.yaml"
    # The graph rules are the controller's, not the schema's: the API server stores the plan.
    cluster.kubectl("apply", "-f", str(invalid), "-n", namespace)
    name = yaml.safe_load(invalid.read_text())["metadata"]["name"]
    shown = minds("plan", "show", name, "-n", namespace, kubeconfig=cluster.kubeconfig)
    assert shown.returncode == 0, shown.stderr
    assert "cannot be ordered: on a dependency cycle; after V1" in shown.stdout
    assert "cannot be ordered: on a dependency cycle; after P1" in shown.stdout
    dot = minds("plan", "show", name, "-n", namespace, "--dot", kubeconfig=cluster.kubeconfig)
    assert '"V1" -> "P1" [color=red];' in dot.stdout


def test_a_plan_cannot_claim_approval_or_progress(cluster: Cluster, namespace: str) -> None:
    document = yaml.safe_load(EXAMPLE.read_text())
    document["spec"]["steps"][1]["approved"] = True
    claiming = yaml.safe_dump(document)
    refused = cluster.kubectl("apply", "-f", "-", "-n", namespace, input_=claiming, check=False)
    assert refused.returncode != 0
    assert "unknown field" in refused.stderr
    assert "approved" in refused.stderr

    document = yaml.safe_load(with_namespace(EXAMPLE, namespace))
    document["status"] = {"phase": "completed", "steps": [{"key": "P1", "status": "completed"}]}
    cluster.kubectl("create", "-f", "-", input_=yaml.safe_dump(document))
    stored = cluster.api.get("plan", NAME, namespace)
    # The status subresource drops status from a create: only the controller writes it.
    assert stored.get("status", {}).get("phase") != "completed"
    shown = minds("plan", "show", NAME, "-n", namespace, kubeconfig=cluster.kubeconfig)
    assert "P1 [completed]" not in shown.stdout


def test_show_of_a_missing_plan_exits_1(cluster: Cluster, namespace: str) -> None:
    shown = minds("plan", "show", "no-such-plan", "-n", namespace, kubeconfig=cluster.kubeconfig)
    assert shown.returncode == 1
    assert f"Plan {namespace}/no-such-plan not found" in shown.stderr

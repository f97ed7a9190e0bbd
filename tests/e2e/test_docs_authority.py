"""Every command in docs/approvals.md and docs/capabilities.md, run as written against the
real control plane, admission policy and controller, in the order a reader would."""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from minds.adapters.ledger import Ledger
from minds.domain.resources.approval import Explanation
from minds.engine.capability_service import CapabilityService, Invocation, Origin
from tests.fixtures.cluster import REPO, Cluster, with_namespace
from tests.fixtures.docs import kubeconfig_in, sh_commands
from tests.fixtures.waiting import eventually

pytestmark = pytest.mark.usefixtures("session_controller")

APPROVALS_DOC = REPO / "docs" / "approvals.md"
CAPABILITIES_DOC = REPO / "docs" / "capabilities.md"
#: Commands a person runs as themselves (an approver); the rest run as the cluster admin.
AS_APPROVER = ("kubectl auth whoami", "kubectl patch approval", "kubectl minds")


def restart_request(capabilities: CapabilityService, namespace: str, step: str) -> str:
    outcome = capabilities.invoke(
        Invocation(
            namespace=namespace,
            capability="service.restart",
            parameters={"namespace": namespace, "name": "atlas-worker"},
            origin=Origin(
                mind="atlas-keeper",
                intention="keep-atlas-running",
                plan="docs",
                plan_uid=f"{namespace}-docs",
                step=step,
            ),
            explanation=Explanation(what="restart atlas-worker", why="it stopped serving"),
            batch_key="keep-atlas-running",
        )
    )
    assert outcome.approval is not None, outcome.reason
    return outcome.approval


def test_every_documented_command_works(
    cluster: Cluster,
    namespace: str,
    tmp_path: Path,
    e2e_ledger: Ledger,
    capability_service: CapabilityService,
) -> None:
    cluster.kubectl(
        "apply", "-f", "-", input_=with_namespace(REPO / "examples" / "mind.yaml", namespace)
    )
    cluster.kubectl("create", "deployment", "atlas-worker", "--image=busybox", "-n", namespace)
    first, second, third = (
        restart_request(capability_service, namespace, s) for s in ("P1", "P2", "P3")
    )
    substitutions = {
        "kubectl describe approval": first,
        "kubectl patch approval": first,
        "kubectl minds deny": second,
        "kubectl minds approve": third,
    }
    configs = {
        ctx: kubeconfig_in(cluster.kubeconfig, namespace, ctx, tmp_path / f"{ctx}.kubeconfig")
        for ctx in ("admin", "approver")
    }
    path = f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"
    outputs: dict[str, str] = {}
    documented = sh_commands(APPROVALS_DOC) + sh_commands(CAPABILITIES_DOC)
    for command in documented:
        line = command.replace("<your username>", "approver")
        for prefix, name in substitutions.items():
            if line.startswith(prefix):
                line = line.replace("<approval>", name)
        assert "<" not in line, f"unsubstituted placeholder in {command!r}"
        context = "approver" if line.startswith(AS_APPROVER) else "admin"
        proc = subprocess.run(
            shlex.split(line),
            cwd=REPO,
            capture_output=True,
            text=True,
            timeout=120,
            env={**os.environ, "PATH": path, "KUBECONFIG": str(configs[context])},
            check=False,
        )
        assert proc.returncode == 0, f"{command}\n{proc.stdout}\n{proc.stderr}"
        outputs[command] = proc.stdout
    try:
        assert "approver" in outputs["kubectl auth whoami"]
        assert first in outputs["kubectl get approvals -l minds.dev/mind=atlas-keeper"]
        assert "restart atlas-worker" in outputs["kubectl describe approval <approval>"]

        def phase(name: str) -> str:
            obj = json.loads(
                cluster.kubectl("get", "approval", name, "-n", namespace, "-o", "json").stdout
            )
            return str(obj.get("status", {}).get("phase"))

        eventually(lambda: phase(first) == "Executed", what="patched approval executed")
        eventually(lambda: phase(second) == "Denied", what="minds deny")
        eventually(lambda: phase(third) == "Executed", what="minds approve")
        [denied] = e2e_ledger.events(namespace=namespace, type="approval_denied")
        assert denied.payload["decidedBy"] == "approver"
        assert denied.payload["note"] == "not during the release freeze"

        def grant_phase() -> str:
            obj = json.loads(
                cluster.kubectl(
                    "get", "capabilitygrant", "atlas-logs", "-n", namespace, "-o", "json"
                ).stdout
            )
            return str(obj.get("status", {}).get("phase"))

        eventually(lambda: grant_phase() == "Revoked", what="grant revoked")
    finally:
        cluster.kubectl("delete", "clusterrolebinding", "alice-approves", "bob-views", check=False)

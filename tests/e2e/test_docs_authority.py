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
from tests.e2e.executor_support import (
    approval_phase,
    example_mind,
    plan_body,
    restart_request,
)
from tests.fixtures.cluster import REPO, Cluster
from tests.fixtures.docs import kubeconfig_in, sh_commands
from tests.fixtures.waiting import eventually

pytestmark = [pytest.mark.minutes(1), pytest.mark.usefixtures("session_controller")]

APPROVALS_DOC = REPO / "docs" / "approvals.md"
CAPABILITIES_DOC = REPO / "docs" / "capabilities.md"
#: Commands a person runs as themselves (an approver); the rest run as the cluster admin.
AS_APPROVER = ("kubectl auth whoami", "kubectl patch approval", "kubectl minds")


PLAN = "docs"


def test_every_documented_command_works(
    cluster: Cluster,
    namespace: str,
    tmp_path: Path,
    e2e_ledger: Ledger,
) -> None:
    example_mind(cluster, namespace)
    first, second, third = (
        restart_request(cluster, namespace, plan, "atlas-keeper")
        for plan in (PLAN, f"{PLAN}-2", f"{PLAN}-3")
    )
    uid = plan_body(cluster, namespace, PLAN)["metadata"]["uid"]
    substitutions = {
        "kubectl describe approval": ("<approval>", first),
        "kubectl get approval ": ("<approval>", first),
        "kubectl patch approval": ("<approval>", first),
        # After it was approved above: its action runs, and the wait returns.
        "kubectl wait --for=condition=Executed": ("<approval>", first),
        "kubectl minds deny": ("<approval>", second),
        "kubectl minds approve": ("<approval>", third),
        "kubectl get plan": ("<plan>", PLAN),
        "kubectl get approvals -l minds.dev/plan-uid": ("<plan uid>", uid),
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
        for prefix, (placeholder, value) in substitutions.items():
            if line.startswith(prefix):
                line = line.replace(placeholder, value)
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
        waited = "kubectl wait --for=condition=Executed approval/<approval> --timeout=600s"
        assert "condition met" in outputs[waited]
        named = json.loads(outputs["kubectl get mind atlas-keeper -o jsonpath='{.spec.approvers}'"])
        assert named["users"] == ["alice"]
        copied = outputs["kubectl get approval <approval> -o jsonpath='{.spec.approvers}'"]
        assert json.loads(copied) == {"groups": ["minds:approvers"], "users": []}
        assert outputs["kubectl get plan <plan> -o jsonpath='{.metadata.uid}'"] == uid
        by_plan = outputs["kubectl get approvals -l minds.dev/plan-uid=<plan uid>"]
        assert first in by_plan
        assert second not in by_plan

        def phase(name: str) -> str:
            return approval_phase(cluster, namespace, name)

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

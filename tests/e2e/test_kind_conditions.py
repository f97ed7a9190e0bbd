"""Plans tell their state as conditions, like a Job, so `kubectl wait` works: the commands of
docs/execution.md's "Waiting for a plan" run as written, for a plan that completes and one that
fails; `kubectl describe plan` tells the plan's own story. Real API server, Postgres and the
session's controller."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.e2e.executor_support import (
    apply,
    mind,
    operator_plan,
    read_step,
    run_as,
    user_kubeconfig,
    wait_phase,
)
from tests.fixtures.cluster import REPO, Cluster
from tests.fixtures.docs import sh_commands
from tests.fixtures.waiting import eventually

pytestmark = [pytest.mark.usefixtures("session_controller")]

EXECUTION_DOC = REPO / "docs" / "execution.md"
SECTION = "Waiting for a plan: its conditions"
WAIT = {"key": "W1", "title": "wait a moment", "kind": "wait", "waitSeconds": 1}


def conditions(cluster: Cluster, namespace: str, plan: str) -> dict[str, tuple[str, str]]:
    status = cluster.api.get("plan", plan, namespace).get("status") or {}
    return {c["type"]: (c["status"], c["reason"]) for c in status.get("conditions") or []}


def documented(cluster: Cluster, namespace: str, plan: str, tmp_path: Path) -> list[Any]:
    admin = user_kubeconfig(cluster, namespace, "admin", tmp_path / "admin.kubeconfig")
    return [
        run_as(admin, command.replace("<plan>", plan))
        for command in sh_commands(EXECUTION_DOC, section=SECTION)
    ]


def test_kubectl_wait_for_a_plan_to_complete_works_as_written(
    cluster: Cluster, namespace: str, tmp_path: Path
) -> None:
    mind(cluster, namespace)
    apply(cluster, operator_plan(namespace, "through", [WAIT]))
    waited, failed = documented(cluster, namespace, "through", tmp_path)
    assert waited.returncode == 0, waited.stderr
    assert "condition met" in waited.stdout
    assert failed.returncode == 0, failed.stderr
    assert failed.stdout.strip() == "False"
    assert conditions(cluster, namespace, "through") == {
        "Validated": ("True", "Valid"),
        "Progressing": ("False", "Completed"),
        "Complete": ("True", "Completed"),
        "Failed": ("False", "Completed"),
    }
    # The plan's own story: valid, then completed (its conclusion follows the phase).
    described = eventually(
        lambda: (
            (d := cluster.kubectl("describe", "plan", "through", "-n", namespace).stdout)
            and "Completed" in d.split("Events:")[-1]
            and d
        ),
        what="the plan's Completed Event",
    )
    events = described.split("Events:")[-1]
    assert "Validated" in events
    assert "is valid and will run" in events


def test_a_plan_that_fails_is_failed_not_complete(
    cluster: Cluster, namespace: str, tmp_path: Path
) -> None:
    """Policy denies the step: the plan fails, and `kubectl wait` for Complete would not
    return; the documented read of Failed says True."""
    mind(
        cluster, namespace, capabilityPolicy=[{"capability": "service.status", "decision": "deny"}]
    )
    apply(cluster, operator_plan(namespace, "refused", [read_step("R1", namespace)]))
    wait_phase(cluster, namespace, "refused", "failed")
    shown = conditions(cluster, namespace, "refused")
    assert shown["Complete"][0] == "False"
    assert shown["Failed"] == ("True", "StepFailed")
    assert shown["Progressing"] == ("False", "StepFailed")
    admin = user_kubeconfig(cluster, namespace, "admin", tmp_path / "admin.kubeconfig")
    _, read = sh_commands(EXECUTION_DOC, section=SECTION)
    assert run_as(admin, read.replace("<plan>", "refused")).stdout.strip() == "True"

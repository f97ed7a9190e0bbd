"""Plans applied with kubectl are validated by the controller like any other plan."""

from __future__ import annotations

import json
from typing import Any

import pytest

from minds.adapters.ledger import Ledger
from tests.fixtures.cluster import Cluster
from tests.fixtures.waiting import eventually

pytestmark = pytest.mark.usefixtures("session_controller")


def mind(namespace: str, **spec: Any) -> str:
    return json.dumps(
        {
            "apiVersion": "minds.dev/v1alpha1",
            "kind": "Mind",
            "metadata": {"name": "keeper", "namespace": namespace},
            "spec": spec,
        }
    )


def plan(namespace: str, name: str, steps: list[dict[str, Any]], mind_name: str = "keeper") -> str:
    return json.dumps(
        {
            "apiVersion": "minds.dev/v1alpha1",
            "kind": "Plan",
            "metadata": {"name": name, "namespace": namespace},
            "spec": {
                "objective": "look at atlas-worker",
                "origin": "operator",
                "strategy": "authored",
                "mind": mind_name,
                "author": "admin",
                "steps": steps,
            },
        }
    )


def status_step(key: str, namespace: str, depends_on: list[str] | None = None) -> dict[str, Any]:
    return {
        "key": key,
        "title": f"status of atlas-worker ({key})",
        "kind": "capability",
        "capability": "service.status",
        "parameters": {"namespace": namespace, "name": "atlas-worker"},
        "dependsOn": depends_on or [],
    }


def phase(cluster: Cluster, namespace: str, name: str) -> dict[str, Any]:
    def probe() -> dict[str, Any] | None:
        obj = cluster.api.get("plan", name, namespace)
        return obj.get("status") if obj.get("status", {}).get("phase") else None

    return eventually(probe, timeout=60, what=f"plan {name} admitted")


def test_valid_operator_plan_is_validated(
    cluster: Cluster, namespace: str, e2e_ledger: Ledger
) -> None:
    # An inactive mind: admission still validates, the executor runs nothing, so the phase
    # stays where admission put it.
    cluster.kubectl("apply", "-f", "-", input_=mind(namespace, active=False))
    cluster.kubectl(
        "apply", "-f", "-", input_=plan(namespace, "look", [status_step("P1", namespace)])
    )
    status = phase(cluster, namespace, "look")
    assert status["phase"] == "validated"
    assert status["progress"] == "0/1"
    assert [s["status"] for s in status["steps"]] == ["pending"]
    # The ledger row follows the status write: wait for it rather than race it.
    [event] = eventually(
        lambda: e2e_ledger.events(namespace=namespace, type="plan_validated"),
        what="plan_validated in the ledger",
    )
    assert event.subject.name == "look"
    table = cluster.kubectl("get", "plans", "-n", namespace).stdout
    assert "validated" in table
    assert "authored" in table


def test_cyclic_plan_stays_a_draft_with_the_cycle_named(
    cluster: Cluster, namespace: str, e2e_ledger: Ledger
) -> None:
    cluster.kubectl("apply", "-f", "-", input_=mind(namespace))
    steps = [
        status_step("P1", namespace, ["P2"]),
        status_step("P2", namespace, ["P1"]),
    ]
    cluster.kubectl("apply", "-f", "-", input_=plan(namespace, "loop", steps))
    status = phase(cluster, namespace, "loop")
    assert status["phase"] == "draft"
    [cycle] = [e for e in status["validation"]["errors"] if e["code"] == "dependency_cycle"]
    assert set(cycle["steps"]) == {"P1", "P2"}
    eventually(
        lambda: e2e_ledger.events(namespace=namespace, type="plan_drafted"),
        what="plan_drafted in the ledger",
    )
    events = cluster.kubectl(
        "get", "events", "-n", namespace, "--field-selector", "involvedObject.name=loop"
    ).stdout
    assert "InvalidPlan" in events


def test_locked_capability_and_unknown_mind_are_errors(cluster: Cluster, namespace: str) -> None:
    cluster.kubectl(
        "apply", "-f", "-", input_=mind(namespace, lockedCapabilities=["service.status"])
    )
    cluster.kubectl(
        "apply", "-f", "-", input_=plan(namespace, "locked", [status_step("P1", namespace)])
    )
    locked = phase(cluster, namespace, "locked")
    assert locked["phase"] == "draft"
    assert any(e["code"] == "locked_capability" for e in locked["validation"]["errors"])

    cluster.kubectl(
        "apply",
        "-f",
        "-",
        input_=plan(namespace, "orphan", [status_step("P1", namespace)], mind_name="nobody"),
    )
    orphan = phase(cluster, namespace, "orphan")
    assert orphan["phase"] == "draft"
    assert orphan["validation"]["errors"][0]["code"] == "unknown_mind"


def test_malformed_plan_refused_by_the_api_server(cluster: Cluster, namespace: str) -> None:
    bad = json.loads(plan(namespace, "bad", [status_step("P1", namespace)]))
    bad["spec"]["steps"][0]["kind"] = "shell"
    proc = cluster.kubectl("apply", "-f", "-", input_=json.dumps(bad), check=False)
    assert proc.returncode != 0
    assert "spec.steps[0].kind" in proc.stderr

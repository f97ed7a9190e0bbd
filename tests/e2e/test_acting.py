"""One owner of acting, against the real control plane, admission policy, Postgres and
controller processes.

Only a Plan's executor carries out what a person approved, under its claim on the step and
with the step's origin key; an Approval belongs to one Plan by uid; a Plan deleted or
re-created withdraws what it asked; and no interleaving of handlers, timers, daemons or
controllers makes an approved action run twice or leaves its outcome unknown.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from minds.adapters.ledger import Ledger
from minds.devenv.controller import stop_controller
from minds.engine.capability_service import CapabilityService
from minds.engine.invocations import Invocation, Origin, OutcomeKind
from tests.e2e.executor_support import (
    apply,
    deployment,
    executions_by_step,
    grant_request,
    mind,
    operator_plan,
    plan_body,
    plan_names,
    wait_phase,
    wait_step,
    workload,
)
from tests.e2e.test_approvals import WHY, decide, restarted_at
from tests.e2e.test_executor_crash import LEASE_WAIT, UNKNOWN
from tests.fixtures.cluster import Cluster, ControllerFactory
from tests.fixtures.waiting import eventually

pytestmark = pytest.mark.minutes(3)

MIND = "keeper"


def restart(namespace: str, workload_name: str = "atlas-worker") -> dict[str, Any]:
    return {
        "key": "P1",
        "title": f"restart {workload_name}",
        "kind": "capability",
        "capability": "service.restart",
        "parameters": workload(namespace, workload_name),
    }


def pause() -> dict[str, Any]:
    """A step after the restart that keeps the plan open (and its Approvals followed)."""
    return {
        "key": "W1",
        "title": "let it settle",
        "kind": "wait",
        "waitSeconds": 600,
        "dependsOn": ["P1"],
    }


def setup(cluster: Cluster, namespace: str, *workloads: str) -> None:
    mind(
        cluster,
        namespace,
        MIND,
        capabilityPolicy=[{"capability": "service.restart", "decision": "approve"}],
    )
    for name in workloads or ("atlas-worker",):
        deployment(cluster, namespace, name)


def approval(cluster: Cluster, namespace: str, name: str) -> dict[str, Any]:
    return cluster.api.get("approval", name, namespace)


def phase(cluster: Cluster, namespace: str, name: str, *wanted: str) -> dict[str, Any]:
    def probe() -> dict[str, Any] | None:
        found = approval(cluster, namespace, name)
        return found if (found.get("status") or {}).get("phase") in wanted else None

    return eventually(probe, timeout=60, what=f"approval {name} in {wanted}")


def restarts(ledger: Ledger, namespace: str) -> dict[tuple[str, str], list[Any]]:
    return executions_by_step(ledger, namespace, "service.restart")


@pytest.mark.usefixtures("session_controller")
def test_a_deleted_plan_withdraws_its_approval_and_a_later_decision_does_nothing(
    cluster: Cluster, namespace: str, e2e_ledger: Ledger
) -> None:
    setup(cluster, namespace)
    apply(cluster, operator_plan(namespace, "heal", [restart(namespace)], mind_name=MIND))
    name = wait_step(cluster, namespace, "heal", "P1", "awaiting_approval")["approvalRef"]

    cluster.kubectl("delete", "plan", "heal", "-n", namespace)
    withdrawn = phase(cluster, namespace, name, "Withdrawn")
    assert withdrawn["status"]["message"] == "its plan heal was deleted"
    late = decide(cluster, namespace, name, "Approved", "approver")
    assert late.returncode != 0
    assert "is Withdrawn and can no longer be decided" in late.stderr

    assert restarted_at(cluster, namespace) is None
    assert e2e_ledger.executions(namespace=namespace) == []
    [event] = e2e_ledger.events(namespace=namespace, type="approval_withdrawn")
    assert event.subject.uid == withdrawn["metadata"]["uid"]


@pytest.mark.usefixtures("alone")
def test_a_plan_recreated_under_the_same_name_asks_anew(
    cluster: Cluster,
    namespace: str,
    e2e_ledger: Ledger,
    controller_factory: ControllerFactory,
) -> None:
    """The worst case: a person approves while the controller is down, and meanwhile the plan
    is deleted and applied again under the same name. The old decision must not act for the
    new plan, nor for the old one, which is gone."""
    first = controller_factory("first")
    setup(cluster, namespace)
    manifest = operator_plan(namespace, "heal", [restart(namespace)], mind_name=MIND)
    apply(cluster, manifest)
    old = wait_step(cluster, namespace, "heal", "P1", "awaiting_approval")["approvalRef"]
    old_uid = plan_body(cluster, namespace, "heal")["metadata"]["uid"]
    assert approval(cluster, namespace, old)["metadata"]["ownerReferences"][0]["uid"] == old_uid
    stop_controller(first)

    assert decide(cluster, namespace, old, "Approved", "approver").returncode == 0
    # Plans carry no finalizer, so a deletion completes with the controller down.
    cluster.kubectl("delete", "plan", "heal", "-n", namespace, "--wait=false")
    eventually(lambda: "heal" not in plan_names(cluster, namespace), what="the old plan gone")
    apply(cluster, manifest)
    new_uid = plan_body(cluster, namespace, "heal")["metadata"]["uid"]
    assert new_uid != old_uid

    controller_factory("second")
    new = wait_step(cluster, namespace, "heal", "P1", "awaiting_approval")["approvalRef"]
    assert new != old
    withdrawn = phase(cluster, namespace, old, "Withdrawn")
    assert "a new plan has the same name" in withdrawn["status"]["message"]
    # The ledger names the decision that was not acted on, and who made it.
    [event] = e2e_ledger.events(namespace=namespace, type="approval_withdrawn")
    assert event.payload["decidedBy"] == "approver"
    assert restarted_at(cluster, namespace) is None
    assert e2e_ledger.executions(namespace=namespace) == []

    assert decide(cluster, namespace, new, "Approved", "approver").returncode == 0
    wait_phase(cluster, namespace, "heal", "completed")
    [row] = restarts(e2e_ledger, namespace)[(new_uid, "P1")]
    assert row.authority["approval"] == new
    assert len(e2e_ledger.executions(namespace=namespace)) == 1


@pytest.mark.usefixtures("session_controller")
def test_an_approval_deleted_and_recreated_never_executes_twice(
    cluster: Cluster, namespace: str, e2e_ledger: Ledger, capability_service: CapabilityService
) -> None:
    setup(cluster, namespace)
    apply(cluster, operator_plan(namespace, "heal", [restart(namespace), pause()], mind_name=MIND))
    name = wait_step(cluster, namespace, "heal", "P1", "awaiting_approval")["approvalRef"]
    assert decide(cluster, namespace, name, "Approved", "approver").returncode == 0
    first = phase(cluster, namespace, name, "Executed")
    wait_step(cluster, namespace, "heal", "P1", "completed")
    once = restarted_at(cluster, namespace)
    assert once is not None

    # Someone deletes the Approval and creates it again from what they saved (undecided, as
    # admission demands), then approves it again: another object, another uid.
    saved = {
        "apiVersion": first["apiVersion"],
        "kind": first["kind"],
        "metadata": {
            k: first["metadata"][k] for k in ("name", "namespace", "labels", "ownerReferences")
        },
        "spec": {
            k: v for k, v in first["spec"].items() if k not in ("decision", "decidedBy", "note")
        },
    }
    cluster.kubectl("delete", "approval", name, "-n", namespace)
    apply(cluster, saved)
    again = phase(cluster, namespace, name, "Pending")
    assert again["metadata"]["uid"] != first["metadata"]["uid"]
    assert decide(cluster, namespace, name, "Approved", "approver").returncode == 0
    phase(cluster, namespace, name, "Approved")

    # Even carried out explicitly, the decision on the new object finds the step's row.
    uid = plan_body(cluster, namespace, "heal")["metadata"]["uid"]
    replayed = capability_service.execute_approved(
        Invocation(
            namespace=namespace,
            capability="service.restart",
            parameters=workload(namespace),
            origin=Origin(mind=MIND, plan="heal", plan_uid=uid, step="P1"),
            explanation=WHY,
        ),
        name,
        again["metadata"]["uid"],
        "approver",
    )
    assert replayed.kind is OutcomeKind.EXECUTED
    [row] = restarts(e2e_ledger, namespace)[(uid, "P1")]
    assert replayed.execution_id == row.id
    assert len(e2e_ledger.executions(namespace=namespace)) == 1
    assert restarted_at(cluster, namespace) == once


@pytest.mark.usefixtures("session_controller")
def test_decisions_racing_handlers_timers_and_two_controllers_act_once(
    cluster: Cluster,
    namespace: str,
    e2e_ledger: Ledger,
    controller_factory: ControllerFactory,
    tmp_path: Path,
) -> None:
    """Two controllers, each with its update handler, Approval timer and plan daemons, see
    every decision. Each approved restart runs once, with its real outcome in the ledger, and
    the Approval's status names that very execution."""
    controller_factory("second")
    names = [f"atlas-{i}" for i in range(4)]
    setup(cluster, namespace, *names)
    for i, workload_name in enumerate(names):
        apply(
            cluster,
            operator_plan(
                namespace, f"heal-{i}", [restart(namespace, workload_name)], mind_name=MIND
            ),
        )
    asked = {
        f"heal-{i}": wait_step(cluster, namespace, f"heal-{i}", "P1", "awaiting_approval")[
            "approvalRef"
        ]
        for i in range(len(names))
    }
    for name in asked.values():
        assert decide(cluster, namespace, name, "Approved", "approver").returncode == 0

    ran = {}
    for plan, name in asked.items():
        done = phase(cluster, namespace, name, "Executed")
        wait_phase(cluster, namespace, plan, "completed")
        uid = plan_body(cluster, namespace, plan)["metadata"]["uid"]
        [row] = restarts(e2e_ledger, namespace)[(uid, "P1")]
        found = e2e_ledger.execution(row.origin_key)
        assert found is not None
        assert found[1] is not None, "an approved action ran with its outcome unknown"
        assert found[1].status.value == "executed"
        assert done["status"]["execution"] == str(row.id)
        assert done["status"]["message"].startswith("executed: restart requested")
        assert wait_step(cluster, namespace, plan, "P1", "completed")["executionRef"] == str(row.id)
        ran[plan] = row.id
    assert len(e2e_ledger.executions(namespace=namespace)) == len(names)
    executed = e2e_ledger.events(namespace=namespace, type="approval_executed")
    assert sorted(e.payload["execution"] for e in executed) == sorted(str(i) for i in ran.values())
    assert not [e for e in executed if "unknown" in str(e.payload["outcome"])]


def grants(cluster: Cluster, namespace: str) -> list[dict[str, Any]]:
    listed = cluster.kubectl("get", "capabilitygrants", "-n", namespace, "-o", "json").stdout
    return list(json.loads(listed)["items"])


@pytest.mark.usefixtures("session_controller")
def test_an_approved_grant_request_is_granted_by_the_executor_for_a_live_plan_only(
    cluster: Cluster, namespace: str, e2e_ledger: Ledger
) -> None:
    setup(cluster, namespace)
    apply(
        cluster, operator_plan(namespace, "ask", [grant_request("R1", namespace)], mind_name=MIND)
    )
    apply(
        cluster, operator_plan(namespace, "gone", [grant_request("R1", namespace)], mind_name=MIND)
    )
    asked = wait_step(cluster, namespace, "ask", "R1", "awaiting_grant")["approvalRef"]
    orphan = wait_step(cluster, namespace, "gone", "R1", "awaiting_grant")["approvalRef"]

    cluster.kubectl("delete", "plan", "gone", "-n", namespace)
    phase(cluster, namespace, orphan, "Withdrawn")
    assert decide(cluster, namespace, asked, "Approved", "approver").returncode == 0
    done = phase(cluster, namespace, asked, "Executed")
    assert done["status"]["message"] == f"executed: grant {asked} created"
    completed = wait_step(cluster, namespace, "ask", "R1", "completed")
    assert completed["grantRef"] == asked

    [grant] = grants(cluster, namespace)
    assert grant["metadata"]["name"] == asked
    assert (grant["spec"]["grantedBy"], grant["spec"]["approval"]) == ("approver", asked)
    assert grant["spec"]["targetPattern"] == f"{namespace}/atlas-worker"
    assert e2e_ledger.events(namespace=namespace, type="approval_executed")


@pytest.mark.usefixtures("alone")
def test_an_approved_action_interrupted_by_a_crash_is_resolved_from_the_ledger(
    cluster: Cluster,
    namespace: str,
    e2e_ledger: Ledger,
    controller_factory: ControllerFactory,
) -> None:
    """The executor acts on approvals as on anything else: write-ahead row first. A crash after
    it blocks the step (the restart may have happened; nobody is asked again, nothing is
    repeated); a crash before it leaves the step to wait on its Approval and act once."""
    setup(cluster, namespace, "atlas-worker", "atlas-batch")
    for plan, workload_name in (("after", "atlas-worker"), ("before", "atlas-batch")):
        apply(
            cluster,
            operator_plan(namespace, plan, [restart(namespace, workload_name)], mind_name=MIND),
        )
    asking = controller_factory("asking")
    asked = {
        plan: wait_step(cluster, namespace, plan, "P1", "awaiting_approval")["approvalRef"]
        for plan in ("after", "before")
    }
    stop_controller(asking)
    uids = {plan: plan_body(cluster, namespace, plan)["metadata"]["uid"] for plan in asked}

    for plan, failpoint in (("after", "after-write-ahead"), ("before", "before-write-ahead")):
        crashing = controller_factory(
            failpoint, extra_env={"MINDS_FAILPOINTS": f"{failpoint}:service.restart"}
        )
        assert decide(cluster, namespace, asked[plan], "Approved", "approver").returncode == 0
        eventually(lambda h=crashing: not h.alive(), timeout=60, what=f"{failpoint} crash")
        assert wait_step(cluster, namespace, plan, "P1", "executing")["approvalRef"] == asked[plan]
    [written] = restarts(e2e_ledger, namespace)[(uids["after"], "P1")]
    assert e2e_ledger.execution(written.origin_key) == (written, None)
    assert (uids["before"], "P1") not in restarts(e2e_ledger, namespace)

    controller_factory("normal")
    # Nothing was written before that crash: the step waits on its Approval again and acts.
    wait_step(cluster, namespace, "before", "P1", "completed", timeout=LEASE_WAIT)
    [once] = restarts(e2e_ledger, namespace)[(uids["before"], "P1")]
    assert once.authority["approval"] == asked["before"]
    phase(cluster, namespace, asked["before"], "Executed")

    blocked = wait_step(cluster, namespace, "after", "P1", "blocked", timeout=LEASE_WAIT)
    assert blocked["reason"] == UNKNOWN
    assert restarts(e2e_ledger, namespace)[(uids["after"], "P1")] == [written]
    # Nobody was asked twice.
    listed = cluster.api.list("approvals", namespace)
    assert sorted(a["metadata"]["name"] for a in listed["items"]) == sorted(asked.values())

"""Crash safety against the real control plane: controllers that die mid-action, on purpose.

The failpoints (``MINDS_FAILPOINTS``) make a controller SIGKILL itself right before or right
after the write-ahead row of a ``service.restart``: exactly the windows the recovery rules are
for. The tests run in the world (docs/world.md): restarts roll out for real and what the verify
and monitor steps observe is what the real controllers report; nobody writes a status. The
world's controller is paused for these tests, so the controllers started here are the only
ones acting, and brought back afterwards exactly as it was.
"""

from __future__ import annotations

import signal
from datetime import datetime, timedelta
from pathlib import Path

import pytest

from minds.adapters.ledger import Ledger
from minds.devenv import process
from minds.devenv.controller import ControllerHandle
from minds.domain.intentions import IntentionStatus
from tests.e2e.executor_support import (
    apply,
    assert_no_tracebacks,
    deployment,
    executions_by_step,
    intention_of,
    intention_status,
    mind,
    operator_plan,
    plan_body,
    plan_status,
    run_as,
    running_check,
    step,
    steps_of,
    user_kubeconfig,
    wait_phase,
    wait_step,
    workload,
)
from tests.e2e.world_support import rollout_status
from tests.fixtures.cluster import Cluster, ControllerFactory
from tests.fixtures.waiting import eventually

pytestmark = pytest.mark.minutes(2)

#: An expired lease is the capability's timeout (60 s for service.restart) plus 30 s.
LEASE_WAIT = 60 + 30 + 60

UNKNOWN = "outcome unknown; not repeating a non-idempotent action without verification"


def restart_then_verify(namespace: str, name: str) -> list[dict]:
    return [
        {
            "key": "P1",
            "title": f"restart {name}",
            "kind": "capability",
            "capability": "service.restart",
            "parameters": workload(namespace, name),
            "expectation": {
                "description": f"{name} runs normally after a restart",
                "check": {**running_check(namespace), "parameters": workload(namespace, name)},
                "confidence": 0.8,
                "windowSeconds": 60,
            },
        },
        {
            "key": "V1",
            "title": f"verify {name} runs",
            "kind": "verify",
            "verifies": "P1",
            "dependsOn": ["P1"],
            "intervalSeconds": 1,
        },
    ]


def crashing(factory: ControllerFactory, failpoint: str) -> ControllerHandle:
    return factory(failpoint, extra_env={"MINDS_FAILPOINTS": f"{failpoint}:service.restart"})


def died(handle: ControllerHandle) -> None:
    eventually(lambda: not handle.alive(), timeout=60, what="the controller killed itself")


@pytest.mark.usefixtures("alone_in_world")
def test_interrupted_restarts_are_resolved_from_the_ledger(
    world: Cluster,
    world_namespace: str,
    e2e_ledger: Ledger,
    world_controller_factory: ControllerFactory,
    tmp_path: Path,
) -> None:
    """After the write-ahead row: the outcome is unknown, the step blocks until a person
    releases it, then runs once more. Before it: the action never started and simply runs."""
    cluster, namespace, controller_factory = world, world_namespace, world_controller_factory
    mind(
        cluster,
        namespace,
        capabilityPolicy=[{"capability": "service.restart", "decision": "allow"}],
    )
    deployment(cluster, namespace, "atlas-worker")
    deployment(cluster, namespace, "atlas-batch")
    for name in ("atlas-worker", "atlas-batch"):
        cluster.kubectl("rollout", "status", f"deployment/{name}", "-n", namespace, "--timeout=90s")

    after = crashing(controller_factory, "after-write-ahead")
    apply(
        cluster, operator_plan(namespace, "after", restart_then_verify(namespace, "atlas-worker"))
    )
    died(after)
    after_uid = plan_body(cluster, namespace, "after")["metadata"]["uid"]
    [written] = executions_by_step(e2e_ledger, namespace, "service.restart")[(after_uid, "P1")]
    assert e2e_ledger.execution(written.origin_key) == (written, None)  # no outcome
    assert step(cluster, namespace, "after", "P1")["status"] == "executing"

    before = crashing(controller_factory, "before-write-ahead")
    apply(
        cluster, operator_plan(namespace, "before", restart_then_verify(namespace, "atlas-batch"))
    )
    died(before)
    before_uid = plan_body(cluster, namespace, "before")["metadata"]["uid"]
    assert step(cluster, namespace, "before", "P1")["status"] == "executing"
    assert (before_uid, "P1") not in executions_by_step(e2e_ledger, namespace, "service.restart")

    normal = controller_factory("normal")
    # Nothing was written before the crash: the restart runs, as the same attempt, once.
    wait_step(cluster, namespace, "before", "P1", "completed", timeout=LEASE_WAIT)
    [once] = executions_by_step(e2e_ledger, namespace, "service.restart")[(before_uid, "P1")]
    assert once.origin.attempt == 1

    blocked = wait_step(cluster, namespace, "after", "P1", "blocked", timeout=LEASE_WAIT)
    assert blocked["reason"] == UNKNOWN
    status = plan_status(cluster, namespace, "after")
    assert status["phase"] == "blocked"
    assert steps_of(status)["V1"] == "pending"  # waits for the release, not cancelled
    assert status["waitingOn"] == f"P1: blocked ({UNKNOWN})"
    intention = intention_of(e2e_ledger, cluster, namespace, "after")
    unverified = intention_status(e2e_ledger, intention.id, IntentionStatus.OUTCOME_UNVERIFIED)
    assert unverified.reason == UNKNOWN
    assert "StepBlocked" in cluster.kubectl("describe", "plan", "after", "-n", namespace).stdout

    # A person checked the workload and lets the step run again.
    approver = user_kubeconfig(cluster, namespace, "approver", tmp_path / "approver.kubeconfig")
    released = run_as(approver, "kubectl minds release after P1")
    assert released.returncode == 0, released.stderr
    wait_step(cluster, namespace, "after", "P1", "completed")
    # The second restart rolls out; the verify step observes it running.
    done = wait_phase(cluster, namespace, "after", "completed")
    assert steps_of(done) == {"P1": "completed", "V1": "completed"}
    intention_status(e2e_ledger, intention.id, IntentionStatus.FULFILLED)
    [released_event] = e2e_ledger.events(namespace=namespace, type="plan_step_released")
    assert released_event.payload["by"] == "approver"

    rows = executions_by_step(e2e_ledger, namespace, "service.restart")[(after_uid, "P1")]
    assert [r.origin.attempt for r in rows] == [1, 2]
    outcomes = [e2e_ledger.execution(r.origin_key)[1] for r in rows]  # type: ignore[index]
    assert outcomes[0] is None
    assert outcomes[1] is not None
    assert outcomes[1].status.value == "executed"
    assert normal.alive()
    assert_no_tracebacks(normal.log())


@pytest.mark.usefixtures("alone_in_world")
def test_a_wait_and_a_monitor_survive_a_controller_restart(
    world: Cluster,
    world_namespace: str,
    e2e_ledger: Ledger,
    world_controller_factory: ControllerFactory,
) -> None:
    cluster, namespace, controller_factory = world, world_namespace, world_controller_factory
    mind(cluster, namespace)
    deployment(cluster, namespace)
    rollout_status(cluster, namespace)
    steps = [
        {"key": "W1", "title": "wait for the rollout", "kind": "wait", "waitSeconds": 20},
        {
            "key": "M1",
            "title": "monitor atlas-worker until stable",
            "kind": "monitor",
            "check": running_check(namespace),
            "stableSeconds": 15,
            "deadlineSeconds": 120,
            "intervalSeconds": 3,
        },
        {
            "key": "S1",
            "title": "summarise",
            "kind": "internal",
            "internalAction": "summarise_findings",
            "dependsOn": ["W1", "M1"],
        },
    ]
    first = controller_factory("first")
    apply(cluster, operator_plan(namespace, "patient", steps))

    def both_waiting() -> dict | None:
        seen = {s["key"]: s for s in plan_status(cluster, namespace, "patient").get("steps", [])}
        w1, m1 = seen.get("W1", {}), seen.get("M1", {})
        ready = w1.get("status") == "waiting" and m1.get("status") == "waiting"
        return seen if ready and m1.get("holdsSince") else None

    seen = eventually(both_waiting, timeout=60, what="the wait and the monitor waiting")
    process.stop(first.pid_file, sig=signal.SIGKILL)
    killed_at = datetime.now().astimezone()
    wait_until = datetime.fromisoformat(seen["W1"]["nextRunAt"])
    holds_since = datetime.fromisoformat(seen["M1"]["holdsSince"])
    assert wait_until > killed_at  # killed mid-wait
    assert killed_at - holds_since < timedelta(seconds=15)  # and before the monitor was stable

    second = controller_factory("second")
    done = wait_phase(cluster, namespace, "patient", "completed", timeout=120)
    final = {s["key"]: s for s in done["steps"]}
    # the wait kept its start and ended at the persisted time, not 20 s after the restart
    assert final["W1"]["startedAt"] == seen["W1"]["startedAt"]
    assert datetime.fromisoformat(final["W1"]["finishedAt"]) >= wait_until
    # the monitor kept counting from when the check first held before the restart
    assert datetime.fromisoformat(final["M1"]["holdsSince"]) == holds_since
    assert datetime.fromisoformat(final["M1"]["finishedAt"]) >= holds_since + timedelta(seconds=15)
    assert final["W1"]["attempts"] == 1
    assert len(executions_by_step(e2e_ledger, namespace)) >= 1
    assert_no_tracebacks(second.log())

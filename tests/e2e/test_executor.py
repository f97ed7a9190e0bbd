"""The executor against the real control plane, Postgres and the controller process."""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from minds.adapters.ledger import Ledger
from minds.devenv.controller import ControllerHandle
from minds.devenv.kubectl import kubectl
from minds.domain.beliefs import PredictionRecord
from minds.domain.intentions import IntentionStatus
from tests.e2e.executor_support import (
    apply,
    assert_no_tracebacks,
    deployment,
    executions_by_step,
    form_intention,
    grant_request,
    intention_of,
    intention_status,
    kube_events,
    mind,
    operator_plan,
    plan_body,
    plan_names,
    plan_status,
    planning_service,
    read_step,
    run_as,
    running_check,
    step,
    steps_of,
    user_kubeconfig,
    wait_phase,
    wait_step,
    workload,
)
from tests.e2e.world_support import (
    FAULT,
    all_pods,
    break_pods,
    crash_looping,
    ready,
    rollout_status,
    wait_status,
)
from tests.e2e.world_support import deployment as faulty_deployment
from tests.fixtures.cluster import REPO, Cluster, ControllerFactory
from tests.fixtures.docs import sh_commands
from tests.fixtures.waiting import eventually

pytestmark = [
    pytest.mark.minutes(2),
    pytest.mark.usefixtures("session_controller", "controller_without_errors"),
]


@pytest.fixture
def world_controller_without_errors(world_controller: ControllerHandle) -> Iterator[None]:
    """The same for the controller in the world, for the tests whose subject is what an
    action does to a workload: there the restart is real, and so is the healing or not."""
    before = len(world_controller.log())
    yield
    assert_no_tracebacks(world_controller.log()[before:])


def restart_then_verify(namespace: str, window: int = 30) -> list[dict]:
    return [
        {
            "key": "P1",
            "title": "restart atlas-worker",
            "kind": "capability",
            "capability": "service.restart",
            "parameters": workload(namespace),
            "expectation": {
                "description": "atlas-worker runs normally after a restart",
                "check": running_check(namespace),
                "confidence": 0.8,
                "windowSeconds": window,
            },
        },
        {
            "key": "V1",
            "title": "verify atlas-worker runs",
            "kind": "verify",
            "verifies": "P1",
            "dependsOn": ["P1"],
            "intervalSeconds": 1,
        },
    ]


def resolved_prediction(ledger: Ledger, namespace: str) -> PredictionRecord:
    """The one prediction of the scenario, once resolved. A step's status is written before
    its ledger effects (one journal per transition is still to come), so the resolution may
    land a moment after the plan shows the step's end."""
    [prediction] = eventually(
        lambda: [p for p in ledger.predictions(namespace, "keeper") if p.status.value != "open"],
        what="the prediction resolved",
    )
    return prediction


@pytest.mark.usefixtures("world_controller_without_errors")
def test_restart_with_approval_is_verified_and_remembered(
    world: Cluster, world_namespace: str, e2e_ledger: Ledger
) -> None:
    """In the world: the workload's Pods crash-loop, the approved restart replaces them for
    real, and the verify step observes the healthy rollout (no test writes any status)."""
    cluster, namespace = world, world_namespace
    mind(
        cluster,
        namespace,
        capabilityPolicy=[{"capability": "service.restart", "decision": "approve"}],
    )
    deployment(cluster, namespace)
    rollout_status(cluster, namespace)
    broken = {p["metadata"]["uid"] for p in break_pods(cluster, namespace)}
    apply(cluster, operator_plan(namespace, "heal", restart_then_verify(namespace)))

    waiting = wait_step(cluster, namespace, "heal", "P1", "awaiting_approval")
    approval = waiting["approvalRef"]
    status = plan_status(cluster, namespace, "heal")
    assert status["phase"] == "awaiting_approval"
    assert approval in status["waitingOn"]
    cluster.kubectl(
        "patch",
        "approval",
        approval,
        "-n",
        namespace,
        "--type=merge",
        "-p",
        json.dumps({"spec": {"decision": "Approved", "decidedBy": "approver"}}),
        context="approver",
    )
    wait_step(cluster, namespace, "heal", "P1", "completed")
    # The restart itself heals: new Pods from the template, which carries no fault.
    done = wait_phase(cluster, namespace, "heal", "completed")
    assert done["progress"] == "2/2"
    healed = all_pods(cluster, namespace, ready, count=1)
    assert not broken & {p["metadata"]["uid"] for p in healed}

    [restart] = e2e_ledger.executions(namespace=namespace, capability="service.restart")
    assert restart.authority["approval"] == approval
    prediction = resolved_prediction(e2e_ledger, namespace)
    assert prediction.status.value == "confirmed"
    [memory] = eventually(
        lambda: e2e_ledger.procedures(namespace, "keeper"), what="procedural memory"
    )
    assert "service.restart" in memory.text
    assert "confirmed by observation" in memory.text
    types = {e.type for e in e2e_ledger.events(namespace=namespace)}
    assert {
        "plan_step_started",
        "policy_decision",
        "tool_requested",
        "tool_executed",
        "plan_step_completed",
        "prediction_resolved",
        "plan_completed",
    } <= types


def restart_step(namespace: str, **over: Any) -> dict[str, Any]:
    return {
        "key": "P1",
        "title": "restart atlas-worker",
        "kind": "capability",
        "capability": "service.restart",
        "parameters": workload(namespace),
        **over,
    }


@pytest.mark.usefixtures("world_controller_without_errors")
def test_restart_that_does_not_heal_is_refuted_and_escalated_not_repeated(
    world: Cluster, world_namespace: str, e2e_ledger: Ledger
) -> None:
    """A planner-made plan (direct: restart, then verify within the seed's 60 s window). In the
    world, the workload's Pod template carries a crash loop, so the real restart brings up a
    Pod that crashes too; the workload stays degraded, the prediction is refuted, the belief
    behind it weakened, and the replan diagnoses and tells the operator instead of restarting
    again."""
    cluster, namespace = world, world_namespace
    mind(
        cluster,
        namespace,
        capabilityPolicy=[
            {"capability": "service.restart", "decision": "allow"},
            {"capability": "logs.query", "decision": "deny"},
        ],
    )
    cluster.kubectl(
        "apply",
        "-f",
        "-",
        input_=faulty_deployment(namespace, replicas=1, labels={FAULT: "crashloop"}),
    )
    all_pods(cluster, namespace, crash_looping, count=1)
    wait_status(cluster, namespace, lambda s: s.get("replicas") == 1, "one replica, not ready")
    intention = form_intention(e2e_ledger, namespace)
    planned = planning_service(cluster).plan(intention)
    first = planned.plan_name
    assert first is not None, planned.result.reason
    assert plan_body(cluster, namespace, first)["spec"]["strategy"] == "direct"

    wait_step(cluster, namespace, first, "P1", "completed")
    [belief] = eventually(lambda: e2e_ledger.beliefs(namespace, "keeper"), what="belief")
    before = belief.confidence
    old = wait_phase(cluster, namespace, first, "superseded", timeout=150)
    assert steps_of(old)["V1"] == "failed"
    assert "expectation failed" in step(cluster, namespace, first, "V1")["reason"]

    prediction = resolved_prediction(e2e_ledger, namespace)
    assert prediction.status.value == "refuted"
    [error] = e2e_ledger.events(namespace=namespace, type="prediction_error")
    assert error.payload["step"] == "P1"
    weakened = e2e_ledger.belief(belief.id)
    assert weakened is not None
    assert weakened.confidence < before
    assert weakened.evidence_against == 1

    second = next(n for n in plan_names(cluster, namespace) if n != first)
    assert old["reason"] == f"superseded by {second}"
    new = plan_body(cluster, namespace, second)["spec"]
    assert new["strategy"] == "diagnose_then_escalate"
    assert new["supersedes"] == first
    assert new["revision"] == 2
    assert new["origin"] == "replan"
    # The decision is recorded after the successor it chose is made: wait for its row.
    [reconsidered] = eventually(
        lambda: [
            e
            for e in e2e_ledger.events(namespace=namespace, type="plan_reconsidered")
            if e.subject.name == first
        ],
        what="the failed plan's reconsideration",
    )
    assert "expectation failed" in reconsidered.payload["reason"]
    [replanned] = eventually(
        lambda: e2e_ledger.events(namespace=namespace, type="plan_replanned"),
        what="the replan",
    )
    assert (replanned.payload["from"], replanned.payload["to"]) == (first, second)

    done = wait_phase(cluster, namespace, second, "completed", timeout=90)
    assert "N1" in steps_of(done)
    # no step of the escalation restarts anything, and logs were not read (policy denies)
    assert all(s.get("capability") != "service.restart" for s in new["steps"])
    assert all(s.get("capability") != "logs.query" for s in new["steps"])
    assert len(e2e_ledger.executions(namespace=namespace, capability="service.restart")) == 1
    # The restart was real: it rolled out a second ReplicaSet, whose Pod crashes too (and
    # never becoming available, it keeps the old one: maxUnavailable is 0 for one replica).
    sets = cluster.api.list("replicasets", namespace)
    assert len(sets["items"]) == 2
    all_pods(cluster, namespace, crash_looping, count=2)
    escalated = intention_status(e2e_ledger, intention.id, IntentionStatus.BLOCKED)
    assert escalated.reason is not None
    assert "escalated" in escalated.reason
    assert escalated.replans == 1
    assert escalated.failed_strategies == ["direct"]
    assert "Escalated" in kube_events(cluster, namespace, second)


def test_an_outcome_that_cannot_be_observed_expires_unverified(
    cluster: Cluster, namespace: str, e2e_ledger: Ledger
) -> None:
    mind(
        cluster,
        namespace,
        capabilityPolicy=[
            {"capability": "service.restart", "decision": "allow"},
            {"capability": "service.status", "decision": "deny"},
        ],
    )
    deployment(cluster, namespace)
    apply(cluster, operator_plan(namespace, "blind", restart_then_verify(namespace)))

    failed = wait_phase(cluster, namespace, "blind", "failed")
    assert steps_of(failed) == {"P1": "completed", "V1": "failed"}
    verify_step = step(cluster, namespace, "blind", "V1")
    assert verify_step["reason"].startswith("outcome unverified")
    prediction = resolved_prediction(e2e_ledger, namespace)
    assert prediction.status.value == "expired"  # unknown is not refuted
    assert not e2e_ledger.events(namespace=namespace, type="prediction_error")
    [belief] = e2e_ledger.beliefs(namespace, "keeper")
    assert belief.evidence_against == 0
    # the check asked nobody: no Approval was raised for the observation
    approvals = cluster.api.list("approvals", namespace)
    assert approvals["items"] == []


@pytest.mark.usefixtures("world_controller_without_errors")
def test_a_precondition_already_true_skips_the_action_and_fulfils_the_intention(
    world: Cluster, world_namespace: str, e2e_ledger: Ledger
) -> None:
    """In the world: the workload rolled out and runs, so the restart guarded by "not running"
    is skipped."""
    cluster, namespace = world, world_namespace
    mind(cluster, namespace)
    deployment(cluster, namespace)
    rollout_status(cluster, namespace)
    guarded = restart_step(
        namespace,
        precondition={
            "description": "atlas-worker is not running normally",
            "check": {**running_check(namespace), "comparison": "not_equals"},
            "fulfilsIntentionOnSkip": True,
        },
    )
    apply(cluster, operator_plan(namespace, "guarded", [guarded]))

    done = wait_phase(cluster, namespace, "guarded", "completed")
    assert steps_of(done) == {"P1": "skipped"}
    p1 = step(cluster, namespace, "guarded", "P1")
    assert p1["attempts"] == 0
    assert "precondition does not hold" in p1["reason"]
    assert not e2e_ledger.executions(namespace=namespace, capability="service.restart")
    assert len(e2e_ledger.executions(namespace=namespace, capability="service.status")) == 1
    intention = intention_of(e2e_ledger, cluster, namespace, "guarded")
    fulfilled = intention_status(e2e_ledger, intention.id, IntentionStatus.FULFILLED)
    assert fulfilled.reason == "the world already is as intended; nothing to do"
    eventually(
        lambda: e2e_ledger.events(namespace=namespace, type="plan_completed"),
        what="plan_completed",
    )
    assert not e2e_ledger.procedures(namespace, "keeper")  # nothing was done to remember


def test_an_exhausted_budget_blocks_the_step_the_plan_and_suspends_the_intention(
    cluster: Cluster, namespace: str, e2e_ledger: Ledger
) -> None:
    mind(cluster, namespace)
    deployment(cluster, namespace)
    steps = [read_step("D1", namespace), read_step("D2", namespace, "D1")]
    apply(cluster, operator_plan(namespace, "thrifty", steps, budget={"invocations": 1}))

    blocked = wait_phase(cluster, namespace, "thrifty", "blocked")
    assert steps_of(blocked) == {"D1": "completed", "D2": "blocked"}
    assert blocked["actual"]["invocations"] == 1
    assert blocked["waitingOn"].startswith("D2: blocked (budget exhausted")
    assert len(e2e_ledger.executions(namespace=namespace)) == 1
    intention = intention_of(e2e_ledger, cluster, namespace, "thrifty")
    suspended = intention_status(e2e_ledger, intention.id, IntentionStatus.SUSPENDED)
    assert suspended.reason is not None
    assert "budget exhausted" in suspended.reason
    listed = cluster.kubectl("get", "plans", "-n", namespace).stdout
    assert "blocked" in listed
    assert "D2: blocked (budget exhausted" in listed
    described = cluster.kubectl("describe", "plan", "thrifty", "-n", namespace).stdout
    assert "StepBlocked" in described
    # Events are for what a person reads: a completed step is in the status and the ledger.
    assert "step_completed" not in described


def test_the_sixth_open_request_waits_ten_minutes(
    cluster: Cluster, namespace: str, e2e_ledger: Ledger
) -> None:
    mind(cluster, namespace, attention={"maxOpenRequests": 5})
    keys = [f"R{i}" for i in range(1, 7)]
    apply(cluster, operator_plan(namespace, "asks", [grant_request(k, namespace) for k in keys]))

    sixth = wait_step(cluster, namespace, "asks", "R6", "waiting")
    asked = datetime.now(UTC)
    status = plan_status(cluster, namespace, "asks")
    assert steps_of(status) == {**{k: "awaiting_grant" for k in keys[:5]}, "R6": "waiting"}
    next_run = datetime.fromisoformat(sixth["nextRunAt"])
    assert timedelta(minutes=9) < next_run - asked <= timedelta(minutes=10)
    assert "attention cap" in sixth["reason"]
    assert status["phase"] == "awaiting_approval"
    approvals = cluster.api.list("approvals", namespace)["items"]
    assert len(approvals) == 5
    assert {a["spec"]["kind"] for a in approvals} == {"grant"}
    # what a person sees: the plan waits on a person, and for which request
    listed = cluster.kubectl("get", "plans", "-n", namespace).stdout
    r1 = step(cluster, namespace, "asks", "R1")["approvalRef"]
    assert "awaiting_approval" in listed
    assert "0/6" in listed
    assert f"R1: grant request {r1}" in listed


def test_the_replan_limit_abandons_the_intention(
    cluster: Cluster, namespace: str, e2e_ledger: Ledger
) -> None:
    """The intention is formed with its three replans already used (as if three plans had
    failed before), so the next failure ends it instead of planning again."""
    mind(
        cluster,
        namespace,
        capabilityPolicy=[{"capability": "service.restart", "decision": "allow"}],
    )
    intention = form_intention(e2e_ledger, namespace, workload_name="ghost", replans=3)
    planned = planning_service(cluster).plan(intention)
    assert planned.plan_name is not None, planned.result.reason

    failed = wait_phase(cluster, namespace, planned.plan_name, "failed")
    assert steps_of(failed)["P1"] == "failed"
    closed = wait_step(cluster, namespace, planned.plan_name, "V1", "cancelled")
    assert closed["reason"] == "cancelled: the plan failed"
    abandoned = intention_status(e2e_ledger, intention.id, IntentionStatus.ABANDONED)
    assert abandoned.reason is not None
    assert abandoned.reason.startswith("replan limit (3) reached")
    assert plan_names(cluster, namespace) == [planned.plan_name]
    assert not e2e_ledger.events(namespace=namespace, type="plan_replanned")


def test_dream_plans_and_plans_of_inactive_minds_never_run(
    cluster: Cluster, namespace: str, e2e_ledger: Ledger
) -> None:
    mind(cluster, namespace)
    mind(cluster, namespace, "sleeper", active=False)
    deployment(cluster, namespace)
    reads = [read_step("D1", namespace), read_step("D2", namespace, "D1")]
    apply(cluster, operator_plan(namespace, "dreamt", reads, origin="dream"))
    apply(cluster, operator_plan(namespace, "asleep", reads, mind_name="sleeper"))
    # The controller saw both (admission wrote their status; a dream may be kept a draft) ...
    dreamt = wait_phase(cluster, namespace, "dreamt", "validated", "draft")
    asleep = wait_phase(cluster, namespace, "asleep", "validated")
    # ... and a plan applied after them in the same namespace runs to its end meanwhile.
    apply(cluster, operator_plan(namespace, "awake", [read_step("D1", namespace)]))
    wait_phase(cluster, namespace, "awake", "completed")

    for name, seen in (("dreamt", dreamt), ("asleep", asleep)):
        now = plan_status(cluster, namespace, name)
        assert now["phase"] == seen["phase"], name
        assert steps_of(now) == steps_of(seen) == {"D1": "pending", "D2": "pending"}, name
    awake_uid = plan_body(cluster, namespace, "awake")["metadata"]["uid"]
    ran = executions_by_step(e2e_ledger, namespace)
    assert set(ran) == {(awake_uid, "D1")}
    assert not e2e_ledger.events(namespace=namespace, type="plan_step_started", mind="sleeper")


def test_two_controllers_execute_every_step_exactly_once(
    cluster: Cluster,
    namespace: str,
    e2e_ledger: Ledger,
    controller_factory: ControllerFactory,
) -> None:
    second = controller_factory("second")
    mind(cluster, namespace)
    deployment(cluster, namespace)
    reads = [read_step(f"D{i}", namespace) for i in range(1, 9)]
    last = {
        "key": "S1",
        "title": "summarise",
        "kind": "internal",
        "internalAction": "summarise_findings",
        "dependsOn": [r["key"] for r in reads],
    }
    for name in ("twice-a", "twice-b"):
        apply(cluster, operator_plan(namespace, name, [*reads, last]))
    for name in ("twice-a", "twice-b"):
        done = wait_phase(cluster, namespace, name, "completed")
        assert done["progress"] == "9/9"
        assert done["actual"]["invocations"] == 8
    assert second.alive()

    ran = executions_by_step(e2e_ledger, namespace)
    assert len(ran) == 16
    for (uid, key), rows in ran.items():
        assert [r.origin.attempt for r in rows] == [1], (uid, key)
    started = e2e_ledger.events(namespace=namespace, type="plan_step_started")
    assert len(started) == 18


def test_a_failed_plan_withdraws_what_it_still_asks_a_person(
    cluster: Cluster, namespace: str, e2e_ledger: Ledger
) -> None:
    mind(
        cluster,
        namespace,
        capabilityPolicy=[
            {"capability": "service.restart", "decision": "approve"},
            {"capability": "logs.query", "decision": "deny"},
        ],
    )
    deployment(cluster, namespace)
    logs = {
        "key": "D1",
        "title": "read the logs of atlas-worker",
        "kind": "capability",
        "capability": "logs.query",
        "parameters": workload(namespace),
    }
    apply(cluster, operator_plan(namespace, "split", [restart_step(namespace), logs]))

    failed = wait_phase(cluster, namespace, "split", "failed")
    assert steps_of(failed)["D1"] == "failed"
    p1 = wait_step(cluster, namespace, "split", "P1", "cancelled")
    approval = p1["approvalRef"]

    def phase() -> str:
        obj = cluster.api.get("approval", approval, namespace)
        return str(obj.get("status", {}).get("phase"))

    eventually(lambda: phase() == "Withdrawn", what="the open Approval withdrawn")
    assert not e2e_ledger.executions(namespace=namespace, capability="service.restart")
    intention = intention_of(e2e_ledger, cluster, namespace, "split")
    intention_status(e2e_ledger, intention.id, IntentionStatus.ABANDONED)


EXECUTION_DOC = REPO / "docs" / "execution.md"
#: Commands a person runs as themselves (an approver); the rest run as the cluster admin.
AS_APPROVER = ("kubectl minds", "kubectl annotate")


def guarded_restart(namespace: str) -> list[dict[str, Any]]:
    """Restart, only while the workload is not running normally, then verify it runs."""
    steps = restart_then_verify(namespace)
    steps[0]["precondition"] = {
        "description": "atlas-worker is not running normally",
        "check": {**running_check(namespace), "comparison": "not_equals"},
    }
    return steps


def test_every_command_in_the_execution_doc_works(
    cluster: Cluster, namespace: str, tmp_path: Path, e2e_ledger: Ledger
) -> None:
    """docs/execution.md, run as written: one plan waits for an approval, two are blocked
    because their precondition cannot be observed (policy denies service.status) until the
    operator allows it and releases them, one with each documented way."""
    mind(
        cluster,
        namespace,
        capabilityPolicy=[
            {"capability": "service.restart", "decision": "approve"},
            {"capability": "service.status", "decision": "deny"},
        ],
    )
    deployment(cluster, namespace)
    for name in ("heal", "heal-b"):
        apply(cluster, operator_plan(namespace, name, guarded_restart(namespace)))
    apply(cluster, operator_plan(namespace, "ask", restart_then_verify(namespace)))
    for name in ("heal", "heal-b"):
        blocked = wait_step(cluster, namespace, name, "P1", "blocked")
        assert blocked["reason"].startswith("precondition not observable")
    asked = wait_step(cluster, namespace, "ask", "P1", "awaiting_approval")["approvalRef"]
    # The operator makes the precondition observable before releasing.
    cluster.kubectl(
        "patch",
        "mind",
        "keeper",
        "-n",
        namespace,
        "--type=merge",
        "-p",
        json.dumps(
            {
                "spec": {
                    "capabilityPolicy": [{"capability": "service.restart", "decision": "approve"}]
                }
            }
        ),
    )

    configs = {
        ctx: user_kubeconfig(cluster, namespace, ctx, tmp_path / f"{ctx}.kubeconfig")
        for ctx in ("admin", "approver", "viewer")
    }
    outputs: dict[str, str] = {}
    # Their own tests run the sections on scaling out, on correcting a mind and on waiting.
    skip = ("Scaling out", "Correcting a mind", "Waiting for a plan: its conditions")
    for command in sh_commands(EXECUTION_DOC, skip=skip):
        plan = "heal-b" if command.startswith("kubectl annotate") else "heal"
        line = (
            command.replace("<plan>", plan)
            .replace("<step>", "P1")
            .replace("<approval>", asked)
            .replace("<your username>", "approver")
            .replace("<mind>", "keeper")
        )
        assert "<" not in line, f"unsubstituted placeholder in {command!r}"
        context = "approver" if line.startswith(AS_APPROVER) else "admin"
        proc = run_as(configs[context], line)
        assert proc.returncode == 0, f"{command}\n{proc.stdout}\n{proc.stderr}"
        outputs[command] = proc.stdout

    listed = outputs["kubectl get plans"]
    assert "blocked" in listed
    assert "P1: blocked (precondition not observable" in listed
    assert f"P1: approval {asked}" in listed
    assert "StepBlocked" in outputs["kubectl describe plan <plan>"]
    assert "P1" in outputs["minds plan show <plan>"]
    assert asked in outputs["kubectl get approvals"]
    kept = cluster.api.get("mind", "keeper", namespace)
    assert kept["spec"]["planTtlSecondsAfterFinished"] == 30 * 24 * 3600
    # Released, the steps look again, see the workload degraded and ask to restart it; unless
    # the approved plan's restart came first: verified, it covers them (one writing action per
    # target); still rolling out, the workload is not degraded but progressing, and a restart
    # in the middle of a rollout is no remedy.
    for name in ("heal", "heal-b"):
        again = wait_step(cluster, namespace, name, "P1", "awaiting_approval", "skipped")
        if again["status"] == "skipped":
            rolling = again["reason"].startswith("precondition does not hold") and (
                "is progressing" in again["observation"]["summary"]
            )
            assert again["reason"].startswith("covered: service.restart") or rolling, again
        else:
            assert again["attempts"] == 2
    released = e2e_ledger.events(namespace=namespace, type="plan_step_released")
    assert sorted(e.payload["by"] for e in released) == ["approver", "approver"]
    assert "Released" in kube_events(cluster, namespace, "heal-b")
    wait_step(cluster, namespace, "ask", "P1", "completed")  # the approved one acted

    # The release annotation must name the person who writes it, and is all they may change.
    approver = configs["approver"]
    forged = run_as(approver, "kubectl annotate plan ask minds.dev/release=P1:alice")
    assert forged.returncode != 0
    assert 'set it to "P1:approver"' in forged.stderr
    edit = run_as(
        approver, """kubectl patch plan ask --type=merge -p '{"spec":{"objective":"x"}}'"""
    )
    assert edit.returncode != 0
    assert "a changed plan is a new revision" in edit.stderr
    relabel = run_as(approver, "kubectl label plan ask team=checkout")
    assert relabel.returncode != 0
    assert "only set the minds.dev/release annotation" in relabel.stderr
    viewer = run_as(configs["viewer"], "kubectl minds release ask P1")
    assert viewer.returncode != 0
    assert "forbidden" in viewer.stderr


def test_many_open_plans_do_not_starve_the_controller(
    cluster: Cluster, namespace: str, e2e_ledger: Ledger
) -> None:
    """Each open plan has a daemon that sleeps between ticks; sleeping must not hold one of
    the controller's few worker threads, or a dozen waiting plans would stop everything."""
    mind(
        cluster,
        namespace,
        capabilityPolicy=[{"capability": "service.restart", "decision": "approve"}],
    )
    deployment(cluster, namespace)
    waiting = [f"waits-{i}" for i in range(12)]
    for name in waiting:
        apply(cluster, operator_plan(namespace, name, [restart_step(namespace)]))
    for name in waiting:
        wait_step(cluster, namespace, name, "P1", "awaiting_approval", timeout=60)
    apply(cluster, operator_plan(namespace, "meanwhile", [read_step("D1", namespace)]))
    wait_phase(cluster, namespace, "meanwhile", "completed", timeout=30)


def test_a_request_raised_just_before_a_crash_resumes_its_wait(
    cluster: Cluster, namespace: str, e2e_ledger: Ledger
) -> None:
    """A controller that raised an Approval (for an action, or a grant request) and stopped
    before recording it leaves the step executing under a lease. The next controller finds
    the Approval by the step's origin and waits for it again: nobody is asked twice."""
    mind(
        cluster,
        namespace,
        capabilityPolicy=[{"capability": "service.restart", "decision": "approve"}],
    )
    deployment(cluster, namespace)
    apply(
        cluster,
        operator_plan(
            namespace, "asked", [restart_step(namespace), grant_request("R1", namespace)]
        ),
    )
    raised = {
        key: wait_step(cluster, namespace, "asked", key, status)["approvalRef"]
        for key, status in (("P1", "awaiting_approval"), ("R1", "awaiting_grant"))
    }
    # What the status would say had the controller stopped right after raising them.
    body = plan_body(cluster, namespace, "asked")
    expired = (datetime.now(UTC) - timedelta(seconds=1)).isoformat()
    steps = []
    for s in body["status"]["steps"]:
        s = {k: v for k, v in s.items() if k not in ("approvalRef", "reason")}
        steps.append(
            {**s, "status": "executing", "lease": {"holder": "gone", "expiresAt": expired}}
        )
    patch = {"metadata": {"resourceVersion": body["metadata"]["resourceVersion"]}}
    patch["status"] = {"phase": "executing", "steps": steps}
    # Only the controller writes a Plan's status (status-policy.yaml): write as the controller.
    kubectl(
        cluster.controller_kubeconfig,
        "patch",
        "plan",
        "asked",
        "-n",
        namespace,
        "--subresource=status",
        "--type=merge",
        "-p",
        json.dumps(patch),
    )

    for key, status in (("P1", "awaiting_approval"), ("R1", "awaiting_grant")):
        again = wait_step(cluster, namespace, "asked", key, status, timeout=60)
        assert again["approvalRef"] == raised[key]
        assert again["attempts"] == 1
    approvals = cluster.api.list("approvals", namespace)["items"]
    assert sorted(a["metadata"]["name"] for a in approvals) == sorted(raised.values())

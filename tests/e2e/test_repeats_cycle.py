"""Nothing repeats by itself, against the real control plane: the mind's own cycle, over several
cycles, after a refuted restart, beside an operator's Plan, and with a due commitment."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from minds.adapters.ledger import Ledger
from tests.e2e.executor_support import (
    apply,
    cycles_pass,
    deployment,
    mind,
    operator_plan,
    set_health,
    wait_phase,
    wait_step,
    workload,
)
from tests.e2e.world_support import FAULT, all_pods, crash_looping, rollout_status, wait_status
from tests.e2e.world_support import deployment as world_deployment
from tests.fixtures.cluster import Cluster
from tests.fixtures.waiting import eventually

pytestmark = [pytest.mark.minutes(7), pytest.mark.usefixtures("session_controller")]

ALLOW_RESTART = [
    {"capability": "service.restart", "decision": "allow"},
    {"capability": "logs.query", "decision": "deny"},
]
GOAL = [{"name": "atlas-running", "subject": {"name": "atlas-worker"}, "priority": 0.8}]


def plans_of(cluster: Cluster, namespace: str) -> list[dict[str, Any]]:
    items = cluster.api.list("plans", namespace)
    return list(items["items"])


def story(ledger: Ledger, namespace: str, plans: list[dict[str, Any]]) -> str:
    """What a failure shows: each Plan (who made it, when, its phase) and the mind's choices."""
    lines = [
        f"plan {p['metadata']['name']} created {p['metadata']['creationTimestamp']} "
        f"labels {p['metadata'].get('labels')} phase {(p.get('status') or {}).get('phase')}"
        for p in plans
    ]
    lines += [
        f"{d.decided_at.isoformat()} {d.kind} {d.outcome} {d.subjects} {d.data.get('reason')}"
        for d in ledger.decisions(namespace=namespace)
    ]
    return "\n".join(lines)


def restarts(ledger: Ledger, namespace: str) -> int:
    return len(ledger.executions(namespace=namespace, capability="service.restart"))


@pytest.mark.usefixtures("world_controller")
def test_a_refuted_restart_escalates_once_and_is_not_repeated(
    world: Cluster, world_namespace: str, e2e_ledger: Ledger
) -> None:
    """The mind restarts a crash-looping workload on its own; the restart brings up a Pod that
    crashes too, the prediction is refuted, the replan escalates to a person, and over the
    cycles that follow the mind neither restarts again nor escalates a second time."""
    cluster, namespace = world, world_namespace
    crashing = json.loads(world_deployment(namespace, replicas=1, labels={FAULT: "crashloop"}))
    # A rollout that never becomes available is reported degraded once past its deadline.
    crashing["spec"]["progressDeadlineSeconds"] = 15
    cluster.kubectl("apply", "-f", "-", input_=json.dumps(crashing))
    all_pods(cluster, namespace, crash_looping, count=1)
    wait_status(
        cluster,
        namespace,
        lambda s: any(
            c.get("reason") == "ProgressDeadlineExceeded" for c in s.get("conditions", [])
        ),
        "past its progress deadline",
    )
    mind(
        cluster,
        namespace,
        cycleIntervalSeconds=5,
        goals=GOAL,
        capabilityPolicy=ALLOW_RESTART,
        budget={"invocations": 100},
    )
    [first] = eventually(lambda: plans_of(cluster, namespace), timeout=90, what="a plan")
    assert first["spec"]["strategy"] == "direct"
    escalation = eventually(
        lambda: [
            p
            for p in plans_of(cluster, namespace)
            if p["spec"]["strategy"] == "diagnose_then_escalate"
        ],
        timeout=240,
        what="the escalation",
    )[0]
    wait_phase(cluster, namespace, escalation["metadata"]["name"], "completed", timeout=120)
    intention = e2e_ledger.intention(first["spec"]["intention"])
    assert intention is not None
    eventually(
        lambda: e2e_ledger.intention(intention.id).status.value == "blocked",  # type: ignore[union-attr]
        what="the intention waits for a person",
    )

    cycles_pass(cluster, namespace, 4)
    assert restarts(e2e_ledger, namespace) == 1
    strategies = sorted(p["spec"]["strategy"] for p in plans_of(cluster, namespace))
    assert strategies == ["diagnose_then_escalate", "direct"]
    # The wants it still has are held by the waiting intention, not formed again.
    refusals = e2e_ledger.decisions(namespace=namespace, mind="keeper", kind="formation")
    assert any(d.outcome == "duplicate" for d in refusals)


def test_an_operator_plan_on_the_workload_covers_the_minds_want(
    cluster: Cluster, namespace: str, e2e_ledger: Ledger
) -> None:
    """A person's Plan to restart atlas-worker waits for approval; the mind, seeing the workload
    degraded, does not plan a restart of its own: its want is `covered` by the open Plan."""
    deployment(cluster, namespace)
    set_health(cluster, namespace, healthy=True)
    mind(
        cluster,
        namespace,
        cycleIntervalSeconds=5,
        goals=GOAL,
        capabilityPolicy=[{"capability": "service.restart", "decision": "approve"}],
        budget={"invocations": 100},
    )
    restart = {
        "key": "P1",
        "title": "restart atlas-worker",
        "kind": "capability",
        "capability": "service.restart",
        "parameters": workload(namespace),
    }
    apply(cluster, operator_plan(namespace, "by-hand", [restart]))
    wait_step(cluster, namespace, "by-hand", "P1", "awaiting_approval")
    set_health(cluster, namespace, healthy=False)

    covered = eventually(
        lambda: [
            d
            for d in e2e_ledger.decisions(namespace=namespace, mind="keeper", kind="formation")
            if d.outcome == "covered"
        ],
        timeout=60,
        what="the want covered by the operator's plan",
    )
    assert "by-hand" in json.dumps(covered[0].data)
    cycles_pass(cluster, namespace, 3)
    assert [p["metadata"]["name"] for p in plans_of(cluster, namespace)] == ["by-hand"]
    assert restarts(e2e_ledger, namespace) == 0


def committed_to_restart(
    cluster: Cluster, namespace: str, *, since: timedelta, **commitment: Any
) -> datetime:
    """atlas-worker rolled out in the world, and a keeper that cycles every 5 s with a
    `do service.restart` commitment on it (``fresh-start``) due ``since`` ago; its due time."""
    cluster.kubectl("apply", "-f", "-", input_=world_deployment(namespace, replicas=1))
    rollout_status(cluster, namespace)
    due = (datetime.now(UTC) - since).replace(microsecond=0)
    mind(
        cluster,
        namespace,
        cycleIntervalSeconds=5,
        capabilityPolicy=ALLOW_RESTART,
        budget={"invocations": 100},
        commitments=[
            {
                "name": "fresh-start",
                "mode": "do",
                "capability": "service.restart",
                "target": f"{namespace}/atlas-worker",
                "due": due.isoformat().replace("+00:00", "Z"),
                **commitment,
            }
        ],
    )
    return due


@pytest.mark.usefixtures("world_controller")
def test_a_due_commitment_acts_once(
    world: Cluster, world_namespace: str, e2e_ledger: Ledger
) -> None:
    """A `do service.restart` commitment that is due: the mind restarts the workload, the
    restart is verified, the commitment is fulfilled, and the cycles after do nothing more."""
    cluster, namespace = world, world_namespace
    committed_to_restart(cluster, namespace, since=timedelta(minutes=1))
    [plan] = eventually(lambda: plans_of(cluster, namespace), timeout=90, what="a plan")
    wait_phase(cluster, namespace, plan["metadata"]["name"], "completed", timeout=180)
    eventually(
        lambda: e2e_ledger.commitment_states(namespace, "keeper").get("fresh-start") == "fulfilled",
        timeout=60,
        what="the commitment fulfilled",
    )
    cycles_pass(cluster, namespace, 4)
    assert restarts(e2e_ledger, namespace) == 1
    plans = plans_of(cluster, namespace)
    assert len(plans) == 1, story(e2e_ledger, namespace, plans)
    [want] = [w for w in e2e_ledger.wants(namespace, "keeper") if w["origin"] == "due_commitment"]
    assert want["status"] == "satisfied"


#: The recurring commitment's period: long enough for a restart and its verification to end
#: inside the period they started in on a loaded machine, short enough for a test.
PERIOD = timedelta(seconds=120)
RESTART = "service.restart"


def last_cycle(cluster: Cluster, namespace: str, name: str = "keeper") -> datetime | None:
    obj = cluster.api.get("mind", name, namespace)
    at = (obj.get("status") or {}).get("lastCycleAt")
    return datetime.fromisoformat(str(at).replace("Z", "+00:00")) if at else None


@pytest.mark.usefixtures("world_controller")
def test_a_recurring_commitment_acts_once_in_each_period(
    world: Cluster, world_namespace: str, e2e_ledger: Ledger
) -> None:
    """A `do service.restart` commitment every two minutes: the mind restarts the workload in
    the first period and again in the second, once each. The second restart is not taken as
    covered by the first (formed after it), and the first fulfilment does not keep the second
    period's want satisfied."""
    cluster, namespace = world, world_namespace
    due = committed_to_restart(
        cluster, namespace, since=timedelta(seconds=2), everySeconds=int(PERIOD.total_seconds())
    )

    def period_of(at: datetime) -> int:
        return (at - due) // PERIOD

    def restarted_in() -> list[int]:
        return sorted(
            period_of(e.started_at)
            for e in e2e_ledger.executions(namespace=namespace, capability=RESTART)
        )

    def fulfilled_twice() -> bool:
        states = e2e_ledger.decisions(namespace=namespace, mind="keeper", kind="commitment_state")
        kept = [d for d in states if d.outcome == "fulfilled" and "intention" in d.subjects]
        return len(kept) >= 2

    # Two periods and the time a plan takes to end: the second fulfilment is recorded.
    eventually(fulfilled_twice, timeout=2 * PERIOD.total_seconds() + 180, what="two fulfilments")
    # The second period is over: whatever the mind did in it, it has done.
    eventually(
        lambda: (at := last_cycle(cluster, namespace)) is not None and at >= due + 2 * PERIOD,
        timeout=2 * PERIOD.total_seconds() + 60,
        what="a cycle after the second period",
    )
    assert restarted_in()[:2] == [0, 1]
    assert restarted_in().count(1) == 1
    plans = sorted(plans_of(cluster, namespace), key=lambda p: p["metadata"]["creationTimestamp"])
    for plan in plans[:2]:
        assert plan["status"]["phase"] == "completed"
        [key] = [s["key"] for s in plan["spec"]["steps"] if s.get("capability") == RESTART]
        [restart] = [s for s in plan["status"]["steps"] if s["key"] == key]
        assert restart["status"] == "completed", restart  # acted, not skipped as covered


def test_one_question_forms_one_investigation(
    cluster: Cluster, namespace: str, e2e_ledger: Ledger
) -> None:
    """A question about a workload is looked into once: its investigation completes, the want
    is satisfied, and the cycles after form no other."""
    deployment(cluster, namespace)
    set_health(cluster, namespace, healthy=True)
    mind(
        cluster,
        namespace,
        cycleIntervalSeconds=5,
        capabilityPolicy=ALLOW_RESTART,
        budget={"invocations": 100},
        requests=[
            {
                "name": "queue",
                "text": "is atlas-worker keeping up with the queue?",
                "subject": {"name": "atlas-worker"},
            }
        ],
    )
    [plan] = eventually(lambda: plans_of(cluster, namespace), timeout=90, what="a plan")
    wait_phase(cluster, namespace, plan["metadata"]["name"], "completed", timeout=120)
    eventually(
        lambda: [
            w
            for w in e2e_ledger.wants(namespace, "keeper")
            if w["origin"] == "request" and w["status"] == "satisfied"
        ],
        timeout=60,
        what="the question's want satisfied",
    )
    cycles_pass(cluster, namespace, 4)
    assert len(plans_of(cluster, namespace)) == 1
    formed = [
        d
        for d in e2e_ledger.decisions(namespace=namespace, mind="keeper", kind="formation")
        if d.outcome == "formed"
    ]
    assert len(formed) == 1

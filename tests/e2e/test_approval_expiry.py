"""Expiry is absolute and fails closed: an approval counts only when the controller saw it
before ``expiresAt``, whatever happened to the controller meanwhile (running, paused with
SIGSTOP, restarted). Real API server, Postgres and controller processes.

A plan step asks with the executor's own origin (so its executor, and nothing else, follows
the Approval), but with a short expiry: the test raises that very Approval first, while no
controller runs, and the executor adopts it when it gets to the step.

The mind's side: a controller configured with a one-minute expiry (the chart's
``approvals.ttlSeconds``), a mind that plans a restart on its own and asks for it, and nobody
answering. The step fails as an expired approval, the intention blocks, and over the cycles
that follow nobody is asked again.
"""

from __future__ import annotations

import os
import signal
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from minds.adapters.ledger import Ledger
from minds.controller.settings import APPROVAL_TTL_ENV
from minds.devenv.controller import ControllerHandle
from minds.domain.intentions import IntentionStatus
from minds.domain.resources.approval import Explanation
from minds.domain.resources.common import parse_timestamp
from minds.engine.capability_service import CapabilityService
from minds.engine.invocations import Invocation, Origin
from tests.e2e.approval_support import (
    MIND,
    PLAN,
    approval,
    decide,
    lifecycle,
    phase,
    plan_uid,
    restarted_at,
    setup_mind,
    shown,
)
from tests.e2e.executor_support import (
    apply,
    asking_keeper,
    assert_no_tracebacks,
    cycles_pass,
    deployment,
    intention_status,
    operator_plan,
    plan_body,
    plan_names,
    set_health,
    wait_phase,
    wait_step,
    why,
    workload,
)
from tests.fixtures.cluster import Cluster, ControllerFactory
from tests.fixtures.waiting import eventually

pytestmark = [pytest.mark.minutes(5), pytest.mark.usefixtures("alone")]


def short_request(
    cluster: Cluster, namespace: str, capability_service: CapabilityService, ttl: timedelta
) -> tuple[str, datetime]:
    """With no controller running: the Plan, and its step's Approval expiring after ``ttl``.
    Returns its name and expiry."""
    setup_mind(cluster, namespace)
    restart = {
        "key": "P1",
        "title": "restart atlas-worker",
        "kind": "capability",
        "capability": "service.restart",
        "parameters": workload(namespace),
    }
    apply(cluster, operator_plan(namespace, PLAN, [restart], mind_name=MIND))
    outcome = capability_service.invoke(
        Invocation(
            namespace=namespace,
            capability="service.restart",
            parameters=workload(namespace),
            origin=Origin(mind=MIND, plan=PLAN, plan_uid=plan_uid(cluster, namespace), step="P1"),
            explanation=Explanation(what="restart atlas-worker", why="it stopped serving"),
            approval_ttl=ttl,
        )
    )
    assert outcome.approval is not None, outcome
    body = cluster.kubectl(
        "get", "approval", outcome.approval, "-n", namespace, "-o", "jsonpath={.spec.expiresAt}"
    ).stdout
    expires = parse_timestamp(body)
    assert expires is not None
    return outcome.approval, expires


def past(moment: datetime) -> None:
    """Wait until the wall clock is past ``moment`` (the condition the test is about)."""
    eventually(
        lambda: datetime.now(UTC) > moment,
        timeout=max(5.0, (moment - datetime.now(UTC)).total_seconds() + 5),
        what=f"the clock past {moment.isoformat()}",
    )


def refused_as_late(
    cluster: Cluster, namespace: str, name: str, e2e_ledger: Ledger, *, seen: bool = True
) -> None:
    """Expired, nothing ran, and (``seen``) the ledger says the decision came too late."""
    expired = phase(cluster, namespace, name, "Expired", timeout=90)
    uid = expired["metadata"]["uid"]
    failed = wait_step(cluster, namespace, PLAN, "P1", "failed")
    assert "expired" in failed["reason"]
    events = lifecycle(e2e_ledger, uid)
    assert "approval_approved" not in events
    if seen:
        eventually(
            lambda: "approval_decision_late" in lifecycle(e2e_ledger, uid),
            what="the late decision recorded",
        )
        # The expiry may be recorded first (the timer fired before the delayed watch event
        # with the decision was read); the status then says what to do once the late
        # decision is recorded too.
        eventually(
            lambda: (
                "approve a fresh request"
                in str(approval(cluster, namespace, name)["status"].get("message"))
            ),
            what="the status telling the person to approve a fresh request",
        )
        [late] = e2e_ledger.events(subject_uid=uid, type="approval_decision_late")
        assert late.payload["decidedBy"] == "approver"
    assert e2e_ledger.executions(namespace=namespace) == []
    assert restarted_at(cluster, namespace) is None


@pytest.fixture
def stopped() -> Iterator[list[ControllerHandle]]:
    """Controllers a test SIGSTOPs; each gets SIGCONT back whatever happens."""
    handles: list[ControllerHandle] = []
    yield handles
    for handle in handles:
        os.kill(handle.pid, signal.SIGCONT)


def test_a_decision_in_time_acts(
    cluster: Cluster,
    namespace: str,
    e2e_ledger: Ledger,
    capability_service: CapabilityService,
    controller_factory: ControllerFactory,
) -> None:
    name, expires = short_request(cluster, namespace, capability_service, timedelta(minutes=3))
    assert decide(cluster, namespace, name, "Approved", "approver").returncode == 0
    controller_factory("in-time")
    done = phase(cluster, namespace, name, "Executed", timeout=90)
    [approved] = e2e_ledger.events(subject_uid=done["metadata"]["uid"], type="approval_approved")
    assert approved.occurred_at < expires
    assert len(e2e_ledger.executions(namespace=namespace)) == 1


def test_a_decision_after_expiry_with_the_controller_running_is_refused(
    cluster: Cluster,
    namespace: str,
    e2e_ledger: Ledger,
    capability_service: CapabilityService,
    controller_factory: ControllerFactory,
) -> None:
    name, expires = short_request(cluster, namespace, capability_service, timedelta(seconds=40))
    controller_factory("running")
    wait_step(cluster, namespace, PLAN, "P1", "awaiting_approval")
    past(expires + timedelta(seconds=1))
    late = decide(cluster, namespace, name, "Approved", "approver")
    # The controller recorded the expiry at expiresAt, so admission usually refuses; if its
    # status write had not landed yet, the decision gets in and the controller refuses it.
    if late.returncode != 0:
        assert "is Expired and can no longer be decided" in late.stderr
    refused_as_late(cluster, namespace, name, e2e_ledger, seen=late.returncode == 0)


def test_a_decision_made_while_the_controller_is_stopped_is_refused(
    cluster: Cluster,
    namespace: str,
    e2e_ledger: Ledger,
    capability_service: CapabilityService,
    controller_factory: ControllerFactory,
    stopped: list[ControllerHandle],
) -> None:
    name, expires = short_request(cluster, namespace, capability_service, timedelta(seconds=45))
    controller = controller_factory("paused")
    wait_step(cluster, namespace, PLAN, "P1", "awaiting_approval")
    assert shown(cluster, namespace, name) == "Pending"
    os.kill(controller.pid, signal.SIGSTOP)
    stopped.append(controller)
    # Decided in time, as far as the person can tell; but nobody saw it before the deadline.
    assert decide(cluster, namespace, name, "Approved", "approver").returncode == 0
    assert datetime.now(UTC) < expires
    past(expires + timedelta(seconds=1))
    os.kill(controller.pid, signal.SIGCONT)
    refused_as_late(cluster, namespace, name, e2e_ledger)


def test_a_decision_first_seen_by_a_controller_started_after_expiry_is_refused(
    cluster: Cluster,
    namespace: str,
    e2e_ledger: Ledger,
    capability_service: CapabilityService,
    controller_factory: ControllerFactory,
) -> None:
    name, expires = short_request(cluster, namespace, capability_service, timedelta(seconds=8))
    assert decide(cluster, namespace, name, "Approved", "approver").returncode == 0
    past(expires + timedelta(seconds=1))
    controller_factory("restarted")
    refused_as_late(cluster, namespace, name, e2e_ledger)


def approvals_in(cluster: Cluster, namespace: str) -> list[str]:
    listed = cluster.kubectl("get", "approvals", "-n", namespace, "-o", "name").stdout
    return listed.split()


def waiting_step(cluster: Cluster, namespace: str, plan: str) -> dict[str, Any]:
    """The step of ``plan`` that waits for a person."""

    def probe() -> dict[str, Any] | None:
        steps = (plan_body(cluster, namespace, plan).get("status") or {}).get("steps", [])
        return next((s for s in steps if s.get("status") == "awaiting_approval"), None)

    return eventually(probe, timeout=120, what=f"a step of {plan} awaiting approval")


def test_the_minds_expired_request_blocks_its_intention_and_nobody_is_asked_again(
    cluster: Cluster,
    namespace: str,
    e2e_ledger: Ledger,
    e2e_database_url: str,
    controller_factory: ControllerFactory,
) -> None:
    controller = controller_factory("short-ttl", extra_env={APPROVAL_TTL_ENV: "60"})
    deployment(cluster, namespace)
    set_health(cluster, namespace, healthy=False)
    asking_keeper(cluster, namespace, MIND)
    [plan] = eventually(lambda: plan_names(cluster, namespace), timeout=120, what="the plan")
    waiting = waiting_step(cluster, namespace, plan)
    name = str(waiting["approvalRef"])
    asked = approval(cluster, namespace, name)
    created = parse_timestamp(asked["metadata"]["creationTimestamp"])
    expires = parse_timestamp(asked["spec"]["expiresAt"])
    assert created is not None
    assert expires is not None
    assert timedelta(seconds=55) <= expires - created <= timedelta(seconds=65)

    # Nobody answers.
    phase(cluster, namespace, name, "Expired", timeout=120)
    failed = wait_step(cluster, namespace, plan, waiting["key"], "failed")
    assert "approval expired" in failed["reason"]
    wait_phase(cluster, namespace, plan, "failed")
    intention = str(plan_body(cluster, namespace, plan)["spec"]["intention"])
    blocked = intention_status(e2e_ledger, intention, IntentionStatus.BLOCKED)
    assert blocked.reason is not None
    assert "approval expired" in blocked.reason
    verdicts = eventually(
        lambda: e2e_ledger.decisions(
            namespace=namespace, kind="reconsideration", subject=("intention", intention)
        ),
        what="the reconsideration",
    )
    assert [(d.data["inputs"]["trigger"], d.outcome) for d in verdicts] == [
        ("expired_approval", "block")
    ]

    cycles_pass(cluster, namespace, 4)
    # Still one request, one plan, no restart: the want is held by the blocked intention.
    assert approvals_in(cluster, namespace) == [f"approval.minds.dev/{name}"]
    assert plan_names(cluster, namespace) == [plan]
    assert not e2e_ledger.executions(namespace=namespace, capability="service.restart")
    assert e2e_ledger.intention(intention).status is IntentionStatus.BLOCKED  # type: ignore[union-attr]
    told = why(cluster, namespace, plan, e2e_database_url)
    assert "reconsideration: block" in told
    assert "approval expired" in told
    assert_no_tracebacks(controller.log())

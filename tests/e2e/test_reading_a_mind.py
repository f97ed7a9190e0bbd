"""A restart that did not heal, read as a person reads it: ``kubectl describe mind`` names the
escalation (NeedsAttention) beside Ready, the Mind's Events tell what it did, every Event
reason is CamelCase, and ``kubectl minds why`` on the new revision tells the failed one and
the prediction the world refuted. In the world: the restart is real, and so is the crash loop
that survives it."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from minds.adapters.kube.client import COMPONENT
from minds.adapters.ledger import Ledger
from minds.devenv.controller import ControllerHandle
from minds.domain.intentions import IntentionStatus
from minds.domain.story import is_reason
from tests.e2e.executor_support import (
    assert_no_tracebacks,
    form_intention,
    intention_status,
    mind,
    plan_names,
    planning_service,
    wait_phase,
)
from tests.e2e.test_cli_failures import kubectl_minds
from tests.e2e.world_support import FAULT, all_pods, crash_looping, wait_status
from tests.e2e.world_support import deployment as faulty_deployment
from tests.fixtures.cluster import REPO, Cluster
from tests.fixtures.docs import kubeconfig_in, run_documented
from tests.fixtures.waiting import eventually

pytestmark = pytest.mark.minutes(1)

#: docs/reading.md's commands, in its order; run as written against this story.
DOC_COMMANDS = (
    "kubectl get minds",
    "kubectl describe mind <mind>",
    "kubectl get events --field-selector involvedObject.kind=Mind,involvedObject.name=<mind>",
    "kubectl get approvals,capabilitygrants",
    "kubectl explain mind.spec.caution",
    "kubectl minds why plan/<plan>",
    "kubectl minds timeline <mind>",
    "kubectl wait --for=condition=Ready mind/<mind> --timeout=120s",
)


@pytest.fixture
def controller(world_controller: ControllerHandle) -> Iterator[ControllerHandle]:
    before = len(world_controller.log())
    yield world_controller
    assert_no_tracebacks(world_controller.log()[before:])


def mind_body(cluster: Cluster, namespace: str) -> dict[str, Any]:
    return cluster.api.get("mind", "keeper", namespace)


def condition(body: dict[str, Any], type_: str) -> dict[str, Any] | None:
    conditions = (body.get("status") or {}).get("conditions") or []
    return next((c for c in conditions if c["type"] == type_), None)


def our_events(cluster: Cluster, namespace: str) -> list[dict[str, Any]]:
    listed = cluster.api.list("events", namespace)
    return [
        e
        for e in listed["items"]
        if COMPONENT in (e.get("reportingComponent"), (e.get("source") or {}).get("component"))
    ]


def test_a_restart_that_did_not_heal_tells_its_story(
    world: Cluster,
    world_namespace: str,
    e2e_ledger: Ledger,
    e2e_database_url: str,
    controller: ControllerHandle,
    tmp_path: Path,
) -> None:
    cluster, namespace = world, world_namespace
    mind(
        cluster,
        namespace,
        cycleIntervalSeconds=5,
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
    first = planning_service(cluster).plan(intention).plan_name
    assert first is not None
    wait_phase(cluster, namespace, first, "superseded", timeout=150)
    second = next(n for n in plan_names(cluster, namespace) if n != first)
    wait_phase(cluster, namespace, second, "completed", timeout=90)
    intention_status(e2e_ledger, intention.id, IntentionStatus.BLOCKED)

    # The Mind is Ready (its spec is fine) and says what needs a person, by name.
    def attention() -> dict[str, Any] | None:
        found = condition(mind_body(cluster, namespace), "NeedsAttention")
        return found if found is not None and found["status"] == "True" else None

    needs = eventually(attention, timeout=60, what="NeedsAttention True on the Mind")
    assert needs["reason"] == "Escalated"
    assert intention.objective in needs["message"]
    assert "escalated" in needs["message"]
    ready = condition(mind_body(cluster, namespace), "Ready")
    assert ready is not None
    assert ready["status"] == "True"
    described = cluster.kubectl("describe", "mind", "keeper", "-n", namespace).stdout
    assert "NeedsAttention" in described
    assert intention.objective in described
    header, row = cluster.kubectl("get", "minds", "-n", namespace).stdout.splitlines()[:2]
    assert row[header.index("ATTENTION") :].split()[0] == "Escalated"

    # The Mind's Events: what needs a person, once each, not every check or cycle.
    told = {"PlanFailed", "Replanned", "Escalated"}

    def on_the_mind() -> list[dict[str, Any]] | None:
        events = [
            e
            for e in our_events(cluster, namespace)
            if e["involvedObject"]["kind"] == "Mind" and e["involvedObject"]["name"] == "keeper"
        ]
        return events if told <= {e["reason"] for e in events} else None

    events = eventually(on_the_mind, timeout=60, what=f"the Mind's Events include {told}")
    reasons = [e["reason"] for e in events]
    assert reasons.count("PlanFailed") == 1
    assert len(events) <= 10, reasons

    # Each revision tells its own life on itself: valid, then failed (the first) or not yet.
    def on_plan(plan: str) -> list[str]:
        return [
            e["reason"]
            for e in our_events(cluster, namespace)
            if e["involvedObject"]["kind"] == "Plan" and e["involvedObject"]["name"] == plan
        ]

    # Its conclusion, which tells it, follows the phase by a tick.
    told_second = eventually(
        lambda: (r := on_plan(second)) and "Completed" in r and r, what="Completed on the Plan"
    )
    assert told_second.count("Validated") == told_second.count("Completed") == 1, told_second
    told_first = on_plan(first)
    assert told_first.count("Validated") == 1, told_first
    assert "Completed" not in told_first
    described_plan = cluster.kubectl("describe", "plan", first, "-n", namespace).stdout
    assert "Validated" in described_plan
    assert "Failed" in described_plan
    described = cluster.kubectl("describe", "mind", "keeper", "-n", namespace).stdout
    assert "PlanFailed" in described
    assert f"plan {first} failed" in described

    # Every reason the controller posted in the namespace is a CamelCase member of the table.
    posted = {e["reason"] for e in our_events(cluster, namespace)}
    assert "StepFailed" in posted or "Failed" in posted
    assert all(is_reason(r) for r in posted), posted

    # why on revision 2 tells revision 1 failed, and the prediction the world refuted.
    why = kubectl_minds(
        "why",
        f"plan/{second}",
        "-n",
        namespace,
        kubeconfig=cluster.kubeconfig,
        database_url=e2e_database_url,
    )
    assert why.returncode == 0, why.stderr
    assert f"Plan {first}: the revision before this one failed: " in why.stdout
    assert "expectation failed" in why.stdout
    [refuted] = [line for line in why.stdout.splitlines() if "Prediction " in line]
    assert "refuted: " in refuted
    assert "atlas-worker is running normally within 60 s (step P1" in refuted

    # docs/reading.md, as written, as a person in this namespace.
    kubeconfig = kubeconfig_in(cluster.kubeconfig, namespace, "admin", tmp_path / "kubeconfig")
    env = {"KUBECONFIG": str(kubeconfig), "MINDS_DATABASE_URL": e2e_database_url}
    out = run_documented(list(DOC_COMMANDS), {"<mind>": "keeper", "<plan>": second}, env, REPO)
    assert "Escalated" in out["kubectl get minds"]
    assert "condition met" in out[DOC_COMMANDS[-1]]
    assert "NeedsAttention" in out["kubectl describe mind <mind>"]
    assert "PlanFailed" in out[DOC_COMMANDS[2]]
    assert "caution" in out["kubectl explain mind.spec.caution"]
    assert "the revision before this one failed" in out["kubectl minds why plan/<plan>"]
    assert "plan_failed" in out["kubectl minds timeline <mind>"]
    # The cycles that decided nothing, one line with their count (docs/ledger.md).
    assert "cycle_series" in out["kubectl minds timeline <mind>"]
    assert "completed a cycle that decided nothing" in out["kubectl minds timeline <mind>"]

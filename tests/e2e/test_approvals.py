"""Approvals decided with kubectl patch, against the real API server, admission policy,
controller process and Postgres. Approvals of actions are raised by a real Plan's executor,
which alone carries out what a person approved."""

from __future__ import annotations

import uuid
from dataclasses import replace
from datetime import timedelta

import pytest
from sqlalchemy import text

from minds.adapters.ledger import Ledger
from minds.domain.resources.approval import Explanation
from minds.engine.capability_service import CapabilityService
from minds.engine.invocations import Invocation, Origin, OutcomeKind
from tests.e2e.approval_support import (
    MIND,
    PLAN,
    ApprovalVersions,
    approval,
    asked,
    decide,
    forge,
    lifecycle,
    phase,
    restarted_at,
    setup_mind,
)
from tests.e2e.executor_support import (
    apply,
    kube_events,
    plan_body,
    wait_phase,
    wait_step,
    workload,
)
from tests.fixtures.cluster import Cluster
from tests.fixtures.waiting import eventually

pytestmark = pytest.mark.usefixtures("session_controller")

WHY = Explanation(
    what="restart atlas-worker",
    why="it stopped serving",
    expected_outcome="running normally within 60 s",
    side_effects="in-flight jobs are retried",
)


def restart(namespace: str, ttl: timedelta | None = None) -> Invocation:
    """A restart asked outside any plan: its Approval follows the lifecycle (pending, decided,
    expired, withdrawn) but nothing ever acts on it, as no plan's executor follows it."""
    return Invocation(
        namespace=namespace,
        capability="service.restart",
        parameters=workload(namespace),
        origin=Origin(mind=MIND, cycle=f"approvals-{uuid.uuid4().hex[:8]}"),
        explanation=WHY,
        **({"approval_ttl": ttl} if ttl else {}),
    )


def step_invocation(cluster: Cluster, namespace: str) -> Invocation:
    """The invocation the executor builds from the Plan for its step P1, attempt 1."""
    uid = plan_body(cluster, namespace, PLAN)["metadata"]["uid"]
    return Invocation(
        namespace=namespace,
        capability="service.restart",
        parameters=workload(namespace),
        origin=Origin(mind=MIND, plan=PLAN, plan_uid=uid, step="P1"),
        explanation=WHY,
    )


def test_forgery_matrix(cluster: Cluster, namespace: str) -> None:
    setup_mind(cluster, namespace)
    name = asked(cluster, namespace)
    phase(cluster, namespace, name, "Pending")

    wrong_name = decide(cluster, namespace, name, "Approved", "alice")
    assert wrong_name.returncode != 0
    assert 'set decidedBy to "approver"' in wrong_name.stderr

    # A user who may patch Approvals but lacks the approve verb.
    apply(
        cluster,
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "RoleBinding",
            "metadata": {"name": "intruder-patches", "namespace": namespace},
            "roleRef": {
                "apiGroup": "rbac.authorization.k8s.io",
                "kind": "ClusterRole",
                "name": "minds-viewer",
            },
            "subjects": [{"kind": "User", "name": "intruder"}],
        },
    )
    apply(
        cluster,
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "Role",
            "metadata": {"name": "patch-approvals", "namespace": namespace},
            "rules": [
                {"apiGroups": ["minds.dev"], "resources": ["approvals"], "verbs": ["get", "patch"]}
            ],
        },
    )
    apply(
        cluster,
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "RoleBinding",
            "metadata": {"name": "intruder-patch", "namespace": namespace},
            "roleRef": {
                "apiGroup": "rbac.authorization.k8s.io",
                "kind": "Role",
                "name": "patch-approvals",
            },
            "subjects": [{"kind": "User", "name": "intruder"}],
        },
    )
    no_verb = decide(cluster, namespace, name, "Approved", "intruder", context="intruder")
    assert no_verb.returncode != 0
    assert 'needs the RBAC verb "approve"' in no_verb.stderr

    controller = decide(
        cluster,
        namespace,
        name,
        "Approved",
        "system:serviceaccount:minds-system:minds-controller",
        as_controller=True,
    )
    assert controller.returncode != 0
    assert "service accounts cannot decide" in controller.stderr

    edit = cluster.kubectl(
        "patch",
        "approval",
        name,
        "-n",
        namespace,
        "--type=merge",
        "-p",
        '{"spec":{"target":"elsewhere/else"}}',
        check=False,
    )
    assert edit.returncode != 0
    assert "target is immutable" in edit.stderr

    ok = decide(cluster, namespace, name, "Denied", "approver", note="not now")
    assert ok.returncode == 0, ok.stderr
    change = decide(cluster, namespace, name, "Approved", "approver")
    assert change.returncode != 0
    assert "immutable" in change.stderr

    created = approval(cluster, namespace, name)
    forged = {
        "apiVersion": "minds.dev/v1alpha1",
        "kind": "Approval",
        "metadata": {"name": "forged", "namespace": namespace},
        "spec": {**created["spec"], "decision": "Approved", "decidedBy": "admin"},
    }
    forged["spec"].pop("note", None)
    refused = apply(cluster, forged, check=False)
    assert refused.returncode != 0
    assert "cannot be created already decided" in refused.stderr


def test_approve_executes_exactly_once(
    cluster: Cluster, namespace: str, e2e_ledger: Ledger, capability_service: CapabilityService
) -> None:
    setup_mind(cluster, namespace)
    name = asked(cluster, namespace)
    assert restarted_at(cluster, namespace) is None
    # Asking again for the same step adopts the same Approval.
    inv = replace(step_invocation(cluster, namespace), require_approval=True)
    assert capability_service.invoke(inv).approval == name

    assert decide(cluster, namespace, name, "Approved", "approver").returncode == 0
    done = phase(cluster, namespace, name, "Executed")
    assert "restart requested (health not yet verified)" in done["status"]["message"]
    assert restarted_at(cluster, namespace) is not None
    [row] = e2e_ledger.executions(namespace=namespace)
    assert done["status"]["execution"] == str(row.id)

    # Carrying it out again (a replayed follow, a second controller) adopts the record.
    again = capability_service.execute_approved(
        step_invocation(cluster, namespace), name, done["metadata"]["uid"], "approver"
    )
    assert again.kind is OutcomeKind.EXECUTED
    assert again.execution_id == row.id
    assert len(e2e_ledger.executions(namespace=namespace)) == 1
    [approved] = e2e_ledger.events(namespace=namespace, type="approval_approved")
    assert approved.payload["decidedBy"] == "approver"
    # One owner, one transaction: the plan that asked recorded the approval with the
    # write-ahead row of the action it allowed (Postgres stamps both rows with the id of the
    # transaction that wrote them).
    assert written_together(e2e_ledger, approved.id, row.origin_key)


def written_together(ledger: Ledger, event_id: int | None, origin_key: str) -> bool:
    with ledger.engine.connect() as connection:
        found = connection.execute(
            text(
                "SELECT e.xmin::text = x.xmin::text FROM events e, executions x "
                "WHERE e.id = :event AND x.origin_key = :origin"
            ),
            {"event": event_id, "origin": origin_key},
        ).scalar_one()
    return bool(found)


def test_deny_executes_nothing(cluster: Cluster, namespace: str, e2e_ledger: Ledger) -> None:
    setup_mind(cluster, namespace)
    name = asked(cluster, namespace)
    assert (
        decide(
            cluster, namespace, name, "Denied", "approver", note="wait for the release"
        ).returncode
        == 0
    )
    phase(cluster, namespace, name, "Denied")
    failed = wait_step(cluster, namespace, PLAN, "P1", "failed")
    assert failed["reason"] == "approval denied: approver: wait for the release"
    assert e2e_ledger.executions(namespace=namespace) == []
    assert restarted_at(cluster, namespace) is None
    [denied] = e2e_ledger.events(namespace=namespace, type="approval_denied")
    assert denied.payload["note"] == "wait for the release"


def test_expiry_executes_nothing_and_cannot_be_decided_late(
    cluster: Cluster, namespace: str, e2e_ledger: Ledger, capability_service: CapabilityService
) -> None:
    setup_mind(cluster, namespace)
    pending = capability_service.invoke(restart(namespace, ttl=timedelta(seconds=2)))
    assert pending.approval is not None
    phase(cluster, namespace, pending.approval, "Expired")
    late = decide(cluster, namespace, pending.approval, "Approved", "approver")
    assert late.returncode != 0
    assert "is Expired and can no longer be decided" in late.stderr
    assert e2e_ledger.executions(namespace=namespace) == []


def test_withdraw(
    cluster: Cluster, namespace: str, e2e_ledger: Ledger, capability_service: CapabilityService
) -> None:
    from minds.adapters.kube.client import KubeEvents, KubeResources, api_client
    from minds.engine.approval_service import ApprovalService

    setup_mind(cluster, namespace)
    pending = capability_service.invoke(restart(namespace))
    assert pending.approval is not None
    phase(cluster, namespace, pending.approval, "Pending")
    api = api_client(str(cluster.controller_kubeconfig))
    from datetime import UTC, datetime

    approvals = ApprovalService(
        resources=KubeResources(api),
        ledger=e2e_ledger,
        events=KubeEvents(api),
        clock=lambda: datetime.now(UTC),
    )
    assert approvals.withdraw(namespace, pending.approval, "the workload recovered by itself")
    phase(cluster, namespace, pending.approval, "Withdrawn")
    late = decide(cluster, namespace, pending.approval, "Approved", "approver")
    assert late.returncode != 0
    assert e2e_ledger.executions(namespace=namespace) == []
    assert e2e_ledger.events(namespace=namespace, type="approval_withdrawn")


@pytest.mark.usefixtures("controller_without_errors")
def test_a_terminal_status_forged_with_the_controllers_token_is_reported_and_decides_nothing(
    cluster: Cluster, namespace: str, e2e_ledger: Ledger
) -> None:
    """The status guard keeps a terminal phase, even one the ledger never recorded (written
    with the controller's own token outside it): the controller cannot put it back, so it
    says so in a Warning Event on the Approval, without failing, and the step still waits on
    what the ledger says."""
    setup_mind(cluster, namespace)
    name = asked(cluster, namespace)
    uid = phase(cluster, namespace, name, "Pending")["metadata"]["uid"]

    forge(cluster, namespace, name, {"phase": "Withdrawn"}, "controller", "patch")
    eventually(
        lambda: "StatusNotShown" in kube_events(cluster, namespace, name),
        what="a Warning that the forged phase stays shown",
    )
    assert phase(cluster, namespace, name, "Withdrawn")["status"]["phase"] == "Withdrawn"
    assert lifecycle(e2e_ledger, uid) == {"approval_requested"}
    assert wait_step(cluster, namespace, PLAN, "P1", "awaiting_approval")


def test_an_approved_restart_writes_the_approvals_status_at_most_twice(
    cluster: Cluster, namespace: str
) -> None:
    """Its status reads Pending from its creation (the schema's default: no write); the
    decision is shown by the execution that follows it at once (Executed), or as Approved
    first when the executor is slower than the handler's grace: one or two status writes for
    the whole story, never one per writer that settles it."""
    setup_mind(cluster, namespace)
    versions = ApprovalVersions(cluster, namespace)
    try:
        name = asked(cluster, namespace)
        assert decide(cluster, namespace, name, "Approved", "approver").returncode == 0
        phase(cluster, namespace, name, "Executed")
        wait_phase(cluster, namespace, PLAN, "completed")
        last = approval(cluster, namespace, name)["metadata"]["resourceVersion"]
        eventually(lambda: versions.reached(name, last), what="the watch caught up")
        shown = versions.statuses(name)
    finally:
        versions.stop()
    assert shown[0] == {"phase": "Pending"}
    assert shown[-1]["phase"] == "Executed"
    writes = shown[1:]
    assert len(writes) <= 2, [s.get("phase") for s in shown]


def test_an_approved_restart_is_told_in_four_events(cluster: Cluster, namespace: str) -> None:
    """The story of a Mind's approved restart, each part told once: the plan valid (on the
    Plan), the approval asked (on the Mind), the person's decision (on the Approval), the
    plan's end (on the Plan: `kubectl describe plan` tells its own story). The Plan does not
    repeat the asking, and the Approval's request and execution are in its status and its
    conditions, which `kubectl describe` and `kubectl wait` read."""
    setup_mind(cluster, namespace)
    name = asked(cluster, namespace)
    assert decide(cluster, namespace, name, "Approved", "approver").returncode == 0
    wait_phase(cluster, namespace, PLAN, "completed")

    def told() -> list[tuple[str, str]]:
        listed = cluster.api.list("events", namespace)
        # The plan's story: Events on the Plan and the Approval, and the Mind's Events that
        # name them (not the Mind's own, such as Registered).
        return sorted(
            (e["involvedObject"]["kind"], e["reason"])
            for e in listed["items"]
            if e["involvedObject"]["name"] in {PLAN, name}
            or (
                e["involvedObject"]["kind"] == "Mind"
                and (PLAN in e["message"] or name in e["message"])
            )
        )

    # Events are posted in order by one thread: once the plan's end is told, all before it are.
    story = eventually(lambda: (t := told()) and ("Plan", "Completed") in t and t, what="Completed")
    assert story == [
        ("Approval", "Approved"),
        ("Mind", "ApprovalRequested"),
        ("Plan", "Completed"),
        ("Plan", "Validated"),
    ]
    described = cluster.kubectl("describe", "approval", name, "-n", namespace).stdout
    assert "Executed" in described
    # Its conditions, from the ledger: a person decided, and the action ran.
    for condition in ("Decided", "Executed"):
        waited = cluster.kubectl(
            "wait", f"--for=condition={condition}", f"approval/{name}", "-n", namespace,
            "--timeout=30s",
        )  # fmt: skip
        assert "condition met" in waited.stdout

"""Approvers are named: a Mind lists who may decide its Approvals, deciding needs that
membership and the RBAC verb ``approve``, and the person who wrote an operator Plan does not
approve its steps (four eyes) unless the Mind says so. Real API server (admission policies,
RBAC, impersonation), Postgres and controller."""

from __future__ import annotations

import json
from typing import Any

import pytest

from minds.adapters.ledger import Ledger
from tests.e2e.approval_support import (
    MIND,
    PLAN,
    approval,
    asked,
    decide,
    lifecycle,
    phase,
    restarted_at,
    setup_mind,
)
from tests.e2e.executor_support import (
    APPROVERS,
    apply,
    operator_plan,
    read_step,
    wait_step,
    workload,
)
from tests.fixtures.cluster import Cluster

pytestmark = pytest.mark.usefixtures("session_controller")

RBAC = "rbac.authorization.k8s.io"


def bind(
    cluster: Cluster, namespace: str | None, user: str, role: str, kind: str = "ClusterRole"
) -> None:
    """Bind ``role`` to ``user``: cluster-wide without a namespace."""
    binding_kind = "RoleBinding" if namespace else "ClusterRoleBinding"
    metadata: dict[str, str] = {"name": f"{user}-{role}"}
    if namespace:
        metadata["namespace"] = namespace
    apply(
        cluster,
        {
            "apiVersion": f"{RBAC}/v1",
            "kind": binding_kind,
            "metadata": metadata,
            "roleRef": {"apiGroup": RBAC, "kind": kind, "name": role},
            "subjects": [{"kind": "User", "name": user, "apiGroup": RBAC}],
        },
    )


def wildcard_role(cluster: Cluster, namespace: str) -> None:
    apply(
        cluster,
        {
            "apiVersion": f"{RBAC}/v1",
            "kind": "Role",
            "metadata": {"name": "everything-on-approvals", "namespace": namespace},
            "rules": [{"apiGroups": ["*"], "resources": ["*"], "verbs": ["*"]}],
        },
    )


def patch_only_role(cluster: Cluster, namespace: str) -> None:
    apply(
        cluster,
        {
            "apiVersion": f"{RBAC}/v1",
            "kind": "Role",
            "metadata": {"name": "patch-approvals", "namespace": namespace},
            "rules": [
                {"apiGroups": ["minds.dev"], "resources": ["approvals"], "verbs": ["get", "patch"]}
            ],
        },
    )


def as_(user: str, *groups: str) -> tuple[str, ...]:
    return (f"--as={user}", *(f"--as-group={g}" for g in groups))


NOT_NAMED = "is not an approver of mind keeper"

#: (who, how they ask, what the API server answers). Each is refused, whatever RBAC gives them.
FORGERIES: list[tuple[str, dict[str, Any], str]] = [
    ("admin", {"context": "admin"}, NOT_NAMED),  # system:masters
    ("root", {"context": "admin", "impersonate": as_("root", "system:masters")}, NOT_NAMED),
    ("carol", {"context": "admin", "impersonate": as_("carol")}, NOT_NAMED),  # cluster-admin
    ("dave", {"context": "admin", "impersonate": as_("dave")}, NOT_NAMED),  # verbs: ['*']
    # The approver's name without its group: exactly who you claim, no more (no patch even).
    ("approver", {"context": "admin", "impersonate": as_("approver")}, 'User "approver" cannot'),
    # Named by the Mind, but without the verb "approve".
    ("intruder", {"context": "intruder"}, 'needs the RBAC verb "approve"'),
    # Impersonating an approver needs the right to impersonate.
    (
        "approver",
        {"context": "intruder", "impersonate": as_("approver", "minds:approvers")},
        "cannot impersonate",
    ),
    ("viewer", {"context": "viewer"}, "forbidden"),
    (
        "system:serviceaccount:minds-system:minds-controller",
        {"as_controller": True},
        "service accounts cannot decide",
    ),
]


def test_only_named_approvers_with_the_verb_decide(
    cluster: Cluster, namespace: str, e2e_ledger: Ledger
) -> None:
    # Plan authors may approve here, so that four eyes do not stand in for the rule tested.
    named = {"users": ["intruder"], "groups": ["minds:approvers"]}
    setup_mind(cluster, namespace, approvers={**named, "planAuthorsMayApprove": True})
    bind(cluster, None, "carol", "cluster-admin")
    wildcard_role(cluster, namespace)
    bind(cluster, namespace, "dave", "everything-on-approvals", kind="Role")
    patch_only_role(cluster, namespace)
    bind(cluster, namespace, "intruder", "patch-approvals", kind="Role")
    name = asked(cluster, namespace)
    shown = phase(cluster, namespace, name, "Pending")
    assert shown["spec"]["approvers"] == named

    for who, how, refusal in FORGERIES:
        proc = decide(cluster, namespace, name, "Approved", who, **how)
        assert proc.returncode != 0, f"{who} ({how}) decided"
        assert refusal in proc.stderr, (who, how, proc.stderr)
    # Nor may anyone name themselves in the request: its approvers are fixed at creation.
    for edit in ({"approvers": {"users": ["admin"]}}, {"approvers": None}):
        proc = cluster.kubectl(
            "patch",
            "approval",
            name,
            "-n",
            namespace,
            "--type=merge",
            "-p",
            json.dumps({"spec": edit}),
            check=False,
        )
        assert proc.returncode != 0
        assert "immutable" in proc.stderr
    assert "decision" not in approval(cluster, namespace, name)["spec"]

    # A member of a named group, with the verb: the one who decides (here by impersonation,
    # which the admin may do: the API server then knows the request as erin's).
    erin = decide(
        cluster,
        namespace,
        name,
        "Approved",
        "erin",
        context="admin",
        impersonate=as_("erin", "minds:approvers"),
    )
    assert erin.returncode == 0, erin.stderr
    phase(cluster, namespace, name, "Executed")
    [approved] = e2e_ledger.events(namespace=namespace, type="approval_approved")
    assert approved.payload["decidedBy"] == "erin"
    assert restarted_at(cluster, namespace) is not None


def test_a_mind_without_approvers_lets_nobody_decide(cluster: Cluster, namespace: str) -> None:
    setup_mind(cluster, namespace, approvers={})
    name = asked(cluster, namespace)
    phase(cluster, namespace, name, "Pending")
    for context in ("approver", "admin"):
        by = "approver" if context == "approver" else "admin"
        proc = decide(cluster, namespace, name, "Approved", by, context=context)
        assert proc.returncode != 0
        assert NOT_NAMED in proc.stderr


def test_an_approver_removed_from_the_mind_since_does_not_make_it_act(
    cluster: Cluster, namespace: str, e2e_ledger: Ledger
) -> None:
    """The Approval still names the group (its copy is immutable), so admission lets the
    approver in; the controller checks the Mind as it is now, and refuses."""
    setup_mind(cluster, namespace)
    name = asked(cluster, namespace)
    uid = phase(cluster, namespace, name, "Pending")["metadata"]["uid"]
    setup_mind(cluster, namespace, approvers={"users": ["someone-else"]})

    assert decide(cluster, namespace, name, "Approved", "approver").returncode == 0
    withdrawn = phase(cluster, namespace, name, "Withdrawn")
    assert "not an approver of mind keeper" in withdrawn["status"]["message"]
    failed = wait_step(cluster, namespace, PLAN, "P1", "failed")
    assert "not an approver" in failed["reason"]
    events = lifecycle(e2e_ledger, uid)
    assert "approval_decision_refused" in events
    assert "approval_approved" not in events
    assert e2e_ledger.executions(namespace=namespace) == []
    assert restarted_at(cluster, namespace) is None


def an_approver_writes_a_plan(cluster: Cluster, namespace: str, plan: str = PLAN) -> str:
    """``approver`` (allowed to create plans here) applies a one-step restart plan in their
    own name; returns the Approval its executor raised."""
    bind(cluster, namespace, "approver", "minds-admin")
    restart = {
        "key": "P1",
        "title": "restart atlas-worker",
        "kind": "capability",
        "capability": "service.restart",
        "parameters": workload(namespace),
    }
    manifest = operator_plan(namespace, plan, [restart], mind_name=MIND, author="approver")
    cluster.kubectl("apply", "-f", "-", input_=json.dumps(manifest), context="approver")
    return str(wait_step(cluster, namespace, plan, "P1", "awaiting_approval")["approvalRef"])


def test_the_author_of_a_plan_does_not_approve_its_steps(
    cluster: Cluster, namespace: str, e2e_ledger: Ledger
) -> None:
    setup_mind(cluster, namespace)
    name = an_approver_writes_a_plan(cluster, namespace)
    assert phase(cluster, namespace, name, "Pending")["spec"]["author"] == "approver"

    own = decide(cluster, namespace, name, "Approved", "approver")
    assert own.returncode != 0
    assert "wrote the plan that asks and cannot approve its steps" in own.stderr

    other = decide(
        cluster,
        namespace,
        name,
        "Approved",
        "erin",
        context="admin",
        impersonate=as_("erin", "minds:approvers"),
    )
    assert other.returncode == 0, other.stderr
    phase(cluster, namespace, name, "Executed")
    assert len(e2e_ledger.executions(namespace=namespace)) == 1


def test_a_mind_may_let_plan_authors_approve(
    cluster: Cluster, namespace: str, e2e_ledger: Ledger
) -> None:
    setup_mind(cluster, namespace, approvers={**APPROVERS, "planAuthorsMayApprove": True})
    name = an_approver_writes_a_plan(cluster, namespace)
    assert "author" not in phase(cluster, namespace, name, "Pending")["spec"]
    assert decide(cluster, namespace, name, "Approved", "approver").returncode == 0
    phase(cluster, namespace, name, "Executed")
    assert len(e2e_ledger.executions(namespace=namespace)) == 1


def test_four_eyes_hold_when_the_mind_changes_its_mind(
    cluster: Cluster, namespace: str, e2e_ledger: Ledger
) -> None:
    """Raised while the Mind let authors approve (so admission lets the author in), decided
    after it stopped: the controller checks the Mind and the Plan's author again."""
    setup_mind(cluster, namespace, approvers={**APPROVERS, "planAuthorsMayApprove": True})
    name = an_approver_writes_a_plan(cluster, namespace)
    uid = phase(cluster, namespace, name, "Pending")["metadata"]["uid"]
    setup_mind(cluster, namespace, approvers=APPROVERS)

    assert decide(cluster, namespace, name, "Approved", "approver").returncode == 0
    withdrawn = phase(cluster, namespace, name, "Withdrawn")
    assert "four eyes" in withdrawn["status"]["message"]
    assert "approval_approved" not in lifecycle(e2e_ledger, uid)
    wait_step(cluster, namespace, PLAN, "P1", "failed")
    assert e2e_ledger.executions(namespace=namespace) == []


@pytest.mark.parametrize(
    ("author", "context", "refusal"),
    [
        pytest.param(None, "admin", 'set spec.author to "admin"', id="missing"),
        pytest.param("approver", "admin", "spec.author must be your own username", id="another"),
    ],
)
def test_an_operator_plan_names_its_real_author(
    cluster: Cluster, namespace: str, author: str | None, context: str, refusal: str
) -> None:
    manifest = operator_plan(namespace, "authored", [read_step("D1", namespace)], mind_name=MIND)
    if author is None:
        del manifest["spec"]["author"]
    else:
        manifest["spec"]["author"] = author
    proc = cluster.kubectl(
        "apply", "-f", "-", input_=json.dumps(manifest), context=context, check=False
    )
    assert proc.returncode != 0
    assert refusal in proc.stderr


def assert_author_kept(proc: Any) -> None:
    """Refused by one of the two policies that keep the author: its own rule, or the rule that
    freezes a Plan's whole spec (the API server reports whichever denied first)."""
    assert proc.returncode != 0
    assert any(
        said in proc.stderr
        for said in ("spec.author is immutable", "is immutable (spec.author changed)")
    ), proc.stderr


def test_the_author_of_a_plan_never_changes(cluster: Cluster, namespace: str) -> None:
    setup_mind(cluster, namespace)
    apply(
        cluster, operator_plan(namespace, "authored", [read_step("D1", namespace)], mind_name=MIND)
    )
    for author in ("approver", "admin-too"):
        proc = cluster.kubectl(
            "patch",
            "plan",
            "authored",
            "-n",
            namespace,
            "--type=merge",
            "-p",
            json.dumps({"spec": {"author": author}}),
            check=False,
        )
        assert_author_kept(proc)
    removed = cluster.kubectl(
        "patch",
        "plan",
        "authored",
        "-n",
        namespace,
        "--type=json",
        "-p",
        '[{"op": "remove", "path": "/spec/author"}]',
        check=False,
    )
    assert_author_kept(removed)


def test_a_request_recreated_to_name_someone_else_approves_nothing(
    cluster: Cluster, namespace: str, e2e_ledger: Ledger
) -> None:
    """Delete and re-create: the admin replaces the Approval with one that names the admin.
    Admission then lets the admin decide; the controller checks the Mind and refuses. Or the
    controller was quicker: the plan looked at its Approval between the delete and the create,
    found it gone and failed the step, so the replacement is withdrawn before anyone decides,
    and admission refuses the decision. Either way nothing is approved and nothing runs."""
    setup_mind(cluster, namespace, approvers={**APPROVERS, "planAuthorsMayApprove": True})
    name = asked(cluster, namespace)
    original = phase(cluster, namespace, name, "Pending")
    cluster.kubectl("delete", "approval", name, "-n", namespace)
    forged = {
        "apiVersion": "minds.dev/v1alpha1",
        "kind": "Approval",
        "metadata": {
            "name": name,
            "namespace": namespace,
            "labels": original["metadata"]["labels"],
            "ownerReferences": original["metadata"]["ownerReferences"],
        },
        "spec": {**original["spec"], "approvers": {"users": ["admin"]}},
    }
    cluster.kubectl("create", "-f", "-", input_=json.dumps(forged))
    uid = approval(cluster, namespace, name)["metadata"]["uid"]
    decided = decide(cluster, namespace, name, "Approved", "admin", context="admin")
    withdrawn = phase(cluster, namespace, name, "Withdrawn")
    if decided.returncode == 0:
        assert "not an approver of mind keeper" in withdrawn["status"]["message"]
    else:
        assert "is Withdrawn and can no longer be decided" in decided.stderr
    assert "approval_approved" not in lifecycle(e2e_ledger, uid)
    wait_step(cluster, namespace, PLAN, "P1", "failed")
    assert e2e_ledger.executions(namespace=namespace) == []
    assert restarted_at(cluster, namespace) is None

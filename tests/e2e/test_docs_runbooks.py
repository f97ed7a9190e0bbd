"""Every command of every runbook, run as written against the real control plane, admission
policies and controller: a Mind with a plan blocked on its budget (the step a runbook
releases) and Approvals to decide. People's commands run as the person the runbook says
(reading as a viewer, deciding as an approver); the rest as the cluster admin, against the
controller's Deployment, Service and Secret as the chart renders them into minds-system."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from minds.devenv.install import CONTROLLER_NAMESPACE
from tests.e2e.executor_support import (
    apply,
    approval_phase,
    example_mind,
    operator_plan,
    read_step,
    restart_request,
    wait_phase,
)
from tests.fixtures.cluster import REPO, Cluster
from tests.fixtures.docs import kubeconfig_in, run_documented, sh_commands
from tests.fixtures.helm import Helm
from tests.fixtures.waiting import eventually

pytestmark = pytest.mark.usefixtures("session_controller")

RUNBOOKS = REPO / "docs" / "runbooks"
MIND = "atlas-keeper"
BLOCKED = "runbook-budget"
#: What a person types as themselves: deciding as an approver, reading Minds as a viewer.
AS_APPROVER = ("kubectl minds approve", "kubectl minds deny", "kubectl minds release")
AS_VIEWER = (
    "kubectl get plans",
    "kubectl get approvals",
    "kubectl describe plan",
    "kubectl describe approval",
    "kubectl describe mind",
    "kubectl get mind",
    "kubectl minds plan show",
    "kubectl minds timeline",
)
#: kubectl logs needs a kubelet to read a container's log; the local control plane has none
#: (tests/cluster/main.go), so no pod of the Deployment ever runs. The commands are still
#: parsed by kubectl itself in tests/unit/test_docs_runbooks.py.
NEEDS_A_KUBELET = "kubectl logs "
#: The chart's objects the controller runbooks name, rendered for minds-system; nothing runs
#: them here (no controller-manager), they are there to be read, described and restarted.
CONTROLLER_OBJECTS = {("Deployment", "minds-controller"), ("Service", "minds-metrics")}


@pytest.fixture
def controller_objects(cluster: Cluster, helm: Helm) -> Iterator[None]:
    rendered = [
        o
        for o in helm.objects({"networkPolicy.enabled": True}, namespace=CONTROLLER_NAMESPACE)
        if (o["kind"], o["metadata"]["name"]) in CONTROLLER_OBJECTS or o["kind"] == "NetworkPolicy"
    ]
    secret = {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": "minds-ledger-app", "namespace": CONTROLLER_NAMESPACE},
        "stringData": {"url": "postgresql://minds_controller@db.example.invalid/minds"},
    }
    objects = [*rendered, secret]
    listing = json.dumps({"apiVersion": "v1", "kind": "List", "items": objects})
    cluster.kubectl("create", "namespace", CONTROLLER_NAMESPACE, check=False)
    cluster.kubectl("apply", "-f", "-", input_=listing)
    yield
    cluster.kubectl("delete", "-f", "-", "--wait=false", input_=listing, check=False)


def test_every_runbook_command_works(
    cluster: Cluster,
    namespace: str,
    tmp_path: Path,
    e2e_database_url: str,
    controller_objects: None,
) -> None:
    example_mind(cluster, namespace)
    steps = [read_step("P1", namespace), read_step("P2", namespace, "P1")]
    apply(
        cluster,
        operator_plan(namespace, BLOCKED, steps, mind_name=MIND, budget={"invocations": 1}),
    )
    wait_phase(cluster, namespace, BLOCKED, "blocked")
    placeholders = {
        "<namespace>": namespace,
        "<mind>": MIND,
        "<plan>": BLOCKED,
        "<step>": "P2",
        "<workload>": "atlas-worker",
    }
    configs = {
        ctx: kubeconfig_in(cluster.kubeconfig, namespace, ctx, tmp_path / f"{ctx}.kubeconfig")
        for ctx in ("admin", "approver", "viewer")
    }
    decided: dict[str, str] = {}
    ran = 0
    seen: set[str] = set()
    for page in sorted(RUNBOOKS.glob("Minds*.md")):
        for command in sh_commands(page):
            # A command two runbooks share is proven once: kubectl refuses a second
            # `rollout restart` of the same Deployment within a second, by design.
            if command.startswith(NEEDS_A_KUBELET) or command in seen:
                continue
            seen.add(command)
            line = command
            if "<approval>" in line:
                approval = restart_request(cluster, namespace, f"runbook-{ran}", MIND)
                line = line.replace("<approval>", approval)
                if line.startswith(("kubectl minds approve", "kubectl minds deny")):
                    decided[approval] = "Approved" if "approve" in line else "Denied"
            context = (
                "approver"
                if line.startswith(AS_APPROVER)
                else "viewer"
                if line.startswith(AS_VIEWER)
                else "admin"
            )
            env = {"KUBECONFIG": str(configs[context]), "MINDS_DATABASE_URL": e2e_database_url}
            run_documented([line], placeholders, env, REPO)
            ran += 1
    assert ran > 20

    for approval, expected in decided.items():
        eventually(
            lambda a=approval, e=expected: approval_phase(cluster, namespace, a) in {e, "Executed"},
            what=f"{approval} {expected}",
        )

    def release_events() -> list[str]:
        listed = cluster.kubectl("get", "events", "-n", namespace, "-o", "json").stdout
        events = json.loads(listed)["items"]
        return [
            e["reason"]
            for e in events
            if e["involvedObject"].get("name") == BLOCKED and e["reason"].startswith("Release")
        ]

    # The release reached the controller, which acted on it (the step blocks again on its
    # budget: a release does not raise a budget, as MindsBudgetExhausted's runbook says).
    assert "Released" in eventually(release_events, what="the release acted on")

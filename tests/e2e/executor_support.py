"""Helpers for executor scenarios. On the plain ``cluster`` fixture nothing reconciles, and a
test plays "the world" by setting workload status (``set_health``); the tests whose subject is
what an action does to a workload run in the ``world`` instead (tests/e2e/world_support.py),
where the same helpers create the objects and the real controllers move them."""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
import uuid
from collections import defaultdict
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from minds.adapters.kube.client import KubeResources, api_client
from minds.adapters.ledger import Ledger
from minds.domain.capabilities.registry import REGISTRY
from minds.domain.executions import ExecutionRecord
from minds.domain.intentions import IntentionKind, IntentionRecord, IntentionStatus, intention_id
from minds.domain.series import SeriesKind
from minds.engine.planning_service import PlanningService
from minds.engine.why import series_of
from tests.fixtures.cluster import REPO, Cluster, with_namespace
from tests.fixtures.docs import kubeconfig_in
from tests.fixtures.waiting import eventually


def apply(
    cluster: Cluster, obj: dict[str, Any], *, check: bool = True
) -> subprocess.CompletedProcess[str]:
    return cluster.kubectl("apply", "-f", "-", input_=json.dumps(obj), check=check)


#: Who decides the test minds' Approvals: the devcluster's approver is in this group.
APPROVERS = {"groups": ["minds:approvers"]}


def mind(cluster: Cluster, namespace: str, name: str = "keeper", **spec: Any) -> None:
    spec.setdefault("approvers", APPROVERS)
    apply(
        cluster,
        {
            "apiVersion": "minds.dev/v1alpha1",
            "kind": "Mind",
            "metadata": {"name": name, "namespace": namespace},
            "spec": spec,
        },
    )


def asking_keeper(cluster: Cluster, namespace: str, name: str = "keeper") -> None:
    """A Mind whose goal is atlas-worker running, that plans on its own every 5 s and asks a
    person before a restart; logs may not be read, so an escalation asks nobody for access."""
    mind(
        cluster,
        namespace,
        name,
        cycleIntervalSeconds=5,
        goals=[{"name": "atlas-running", "subject": {"name": "atlas-worker"}, "priority": 0.8}],
        capabilityPolicy=[
            {"capability": "service.restart", "decision": "approve"},
            {"capability": "logs.query", "decision": "deny"},
        ],
        budget={"invocations": 100},
    )


def deployment(cluster: Cluster, namespace: str, name: str = "atlas-worker") -> None:
    apply(
        cluster,
        {
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "metadata": {"name": name, "namespace": namespace},
            "spec": {
                "replicas": 1,
                "selector": {"matchLabels": {"app": name}},
                "template": {
                    "metadata": {"labels": {"app": name}},
                    "spec": {"containers": [{"name": "w", "image": "busybox"}]},
                },
            },
        },
    )


def set_health(cluster: Cluster, namespace: str, healthy: bool, name: str = "atlas-worker") -> None:
    """Write the workload's status as its controller would: running, or degraded."""
    obj = cluster.api.get("deployment", name, namespace)
    ready = 1 if healthy else 0
    status = {
        "observedGeneration": obj["metadata"]["generation"],
        "replicas": 1,
        "updatedReplicas": 1,
        "readyReplicas": ready,
        "availableReplicas": ready,
        "conditions": [
            {
                "type": "Progressing",
                "status": "True",
                "reason": "NewReplicaSetAvailable" if healthy else "ProgressDeadlineExceeded",
            }
        ],
    }
    cluster.kubectl(
        "patch",
        "deployment",
        name,
        "-n",
        namespace,
        "--subresource=status",
        "--type=merge",
        "-p",
        json.dumps({"status": status}),
    )


def plan_status(cluster: Cluster, namespace: str, name: str) -> dict[str, Any]:
    obj = cluster.api.get("plan", name, namespace)
    return obj.get("status") or {}


def step(cluster: Cluster, namespace: str, plan: str, key: str) -> dict[str, Any]:
    found = [s for s in plan_status(cluster, namespace, plan).get("steps", []) if s["key"] == key]
    return found[0] if found else {}


def wait_phase(
    cluster: Cluster, namespace: str, plan: str, *phases: str, timeout: float = 90
) -> dict[str, Any]:
    """Wait for the plan to reach one of ``phases``; on timeout, show the status it has."""
    seen: dict[str, Any] = {}

    def probe() -> dict[str, Any] | None:
        seen.update(plan_status(cluster, namespace, plan))
        return dict(seen) if seen.get("phase") in phases else None

    try:
        return eventually(probe, timeout=timeout, what=f"plan {plan} in {phases}")
    except AssertionError as exc:
        raise AssertionError(f"{exc}\nlast status: {json.dumps(seen, indent=1)}") from None


def wait_step(
    cluster: Cluster, namespace: str, plan: str, key: str, *statuses: str, timeout: float = 90
) -> dict[str, Any]:
    seen: dict[str, Any] = {}

    def probe() -> dict[str, Any] | None:
        seen.clear()
        seen.update(plan_status(cluster, namespace, plan))
        found = step(cluster, namespace, plan, key)
        return found if found.get("status") in statuses else None

    try:
        return eventually(probe, timeout=timeout, what=f"step {key} of {plan} in {statuses}")
    except AssertionError as exc:
        raise AssertionError(f"{exc}\nlast status: {json.dumps(seen, indent=1)}") from None


def operator_plan(
    namespace: str, name: str, steps: list[dict[str, Any]], mind_name: str = "keeper", **spec: Any
) -> dict[str, Any]:
    return {
        "apiVersion": "minds.dev/v1alpha1",
        "kind": "Plan",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {
            "objective": "keep atlas-worker running",
            "origin": "operator",
            "strategy": "authored",
            "mind": mind_name,
            "steps": steps,
            # The tests apply plans as the devcluster's admin (admission checks the name).
            "author": "admin",
            **spec,
        },
    }


def example_mind(cluster: Cluster, namespace: str) -> None:
    """examples/mind.yaml (atlas-keeper) in ``namespace``, and the atlas-worker it keeps."""
    cluster.kubectl(
        "apply", "-f", "-", input_=with_namespace(REPO / "examples" / "mind.yaml", namespace)
    )
    cluster.kubectl("create", "deployment", "atlas-worker", "--image=busybox", "-n", namespace)


def restart_request(cluster: Cluster, namespace: str, plan: str, mind_name: str) -> str:
    """A Plan whose one step restarts atlas-worker; its executor raises the Approval (and it,
    nothing else, acts on it once decided). One plan each: a denial fails its own plan only."""
    apply(cluster, operator_plan(namespace, plan, [restart_step("P1", namespace)], mind_name))
    return str(wait_step(cluster, namespace, plan, "P1", "awaiting_approval")["approvalRef"])


def approval_phase(cluster: Cluster, namespace: str, name: str) -> str:
    obj = cluster.api.get("approval", name, namespace)
    return str(obj.get("status", {}).get("phase"))


def workload(namespace: str, name: str = "atlas-worker") -> dict[str, str]:
    return {"namespace": namespace, "name": name}


def running_check(namespace: str) -> dict[str, Any]:
    return {
        "capability": "service.status",
        "parameters": workload(namespace),
        "field": "state",
        "comparison": "equals",
        "value": "running",
    }


def plan_body(cluster: Cluster, namespace: str, name: str) -> dict[str, Any]:
    return cluster.api.get("plan", name, namespace)


def plan_names(cluster: Cluster, namespace: str) -> list[str]:
    listed = cluster.api.list("plans", namespace)
    return sorted(item["metadata"]["name"] for item in listed["items"])


def intention_of(ledger: Ledger, cluster: Cluster, namespace: str, plan: str) -> IntentionRecord:
    """The plan's intention: the one it names, or the implicit one of an operator's plan."""
    body = plan_body(cluster, namespace, plan)
    wanted = body["spec"].get("intention") or intention_id("plan", body["metadata"]["uid"])
    found = eventually(lambda: ledger.intention(wanted), what=f"intention of {plan}")
    assert found is not None
    return found


def intention_status(
    ledger: Ledger, intention: str, *statuses: IntentionStatus, timeout: float = 60
) -> IntentionRecord:
    def probe() -> IntentionRecord | None:
        found = ledger.intention(intention)
        return found if found is not None and found.status in statuses else None

    return eventually(probe, timeout=timeout, what=f"intention {intention} in {statuses}")


def executions_by_step(
    ledger: Ledger, namespace: str, capability: str | None = None
) -> dict[tuple[str, str], list[ExecutionRecord]]:
    """The ledger's execution rows grouped by the (plan, step) that invoked them; checks
    (verify, monitor, precondition) carry their own label in the plan uid."""
    grouped: dict[tuple[str, str], list[ExecutionRecord]] = defaultdict(list)
    for record in ledger.executions(namespace=namespace, capability=capability):
        grouped[(record.origin.plan_uid or "", record.origin.step or "")].append(record)
    return dict(grouped)


def steps_of(status: dict[str, Any]) -> dict[str, str]:
    return {s["key"]: s["status"] for s in status.get("steps", [])}


def form_intention(
    ledger: Ledger,
    namespace: str,
    *,
    mind_name: str = "keeper",
    workload_name: str = "atlas-worker",
    replans: int = 0,
) -> IntentionRecord:
    """An intention the volition layer would form: restart the workload, as the means."""
    now = datetime.now(UTC)
    record = IntentionRecord(
        id=f"int-{uuid.uuid4().hex[:16]}",
        namespace=namespace,
        mind=mind_name,
        objective=f"Bring {workload_name} back to running normally",
        kind=IntentionKind.ACTION,
        subject=f"{namespace}/{workload_name}",
        means_capability="service.restart",
        means_parameters={"namespace": namespace, "name": workload_name},
        replans=replans,
        created_at=now,
        updated_at=now,
    )
    formed, _ = ledger.form_intention(record)
    return formed


def planning_service(cluster: Cluster) -> PlanningService:
    """The planner in-process, writing Plans with the controller's own credentials."""
    api = api_client(str(cluster.controller_kubeconfig))
    return PlanningService(
        resources=KubeResources(api), clock=lambda: datetime.now(UTC), registry=REGISTRY
    )


def read_step(key: str, namespace: str, *depends_on: str, **over: Any) -> dict[str, Any]:
    return {
        "key": key,
        "title": f"read atlas-worker ({key})",
        "kind": "capability",
        "capability": "service.status",
        "parameters": workload(namespace),
        "dependsOn": list(depends_on),
        **over,
    }


def restart_step(key: str, namespace: str, *depends_on: str, **over: Any) -> dict[str, Any]:
    return {
        "key": key,
        "title": "restart atlas-worker",
        "kind": "capability",
        "capability": "service.restart",
        "parameters": workload(namespace),
        "dependsOn": list(depends_on),
        **over,
    }


def grant_request(key: str, namespace: str) -> dict[str, Any]:
    return {
        "key": key,
        "title": f"ask for logs of atlas-worker ({key})",
        "kind": "request_capability",
        "request": {
            "capability": "logs.query",
            "targetPattern": f"{namespace}/atlas-worker",
            "durationSeconds": 1800,
            "operationCap": 20,
            "reason": "diagnose atlas-worker",
            "risk": "logs may contain personal identifiers",
            "mitigation": "masking on by default",
            "fallback": "ask the operator",
        },
    }


def kube_events(cluster: Cluster, namespace: str, name: str) -> str:
    """The reason and message of each Event about ``name``, a line each."""
    listed = cluster.api.list("events", namespace, fields=f"involvedObject.name={name}")
    return "\n".join(f"{e.get('reason')}: {e.get('message')}" for e in listed["items"])


def user_kubeconfig(cluster: Cluster, namespace: str, context: str, out: Path) -> Path:
    """A person's kubeconfig (``context`` is who they are) defaulting to ``namespace``."""
    return kubeconfig_in(cluster.kubeconfig, namespace, context, out)


def run_as(kubeconfig: Path, command: str) -> subprocess.CompletedProcess[str]:
    """Run a command line as a person would type it, with the ``minds`` tools on PATH (so
    ``kubectl minds`` finds the plugin)."""
    path = f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"
    return subprocess.run(
        shlex.split(command),
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "PATH": path, "KUBECONFIG": str(kubeconfig)},
        check=False,
    )


def assert_no_tracebacks(log: str) -> None:
    """A controller log must show no handler failure (kopf logs each with its traceback)."""
    if "Traceback (most recent call last)" in log:
        start = log.index("Traceback (most recent call last)")
        raise AssertionError(f"the controller failed:\n{log[max(0, start - 500) : start + 4000]}")


def cycles_pass(cluster: Cluster, namespace: str, count: int, name: str = "keeper") -> None:
    """Wait until the mind has run `count` more cycles (its status says when each ran)."""
    seen: set[str] = set()

    def probe() -> bool:
        obj = cluster.api.get("mind", name, namespace)
        at = (obj.get("status") or {}).get("lastCycleAt")
        if at:
            seen.add(str(at))
        return len(seen) > count

    eventually(probe, timeout=30 + 15 * count, interval=0.5, what=f"{count} more cycles")


def minds_cli(
    cluster: Cluster, database_url: str | None, *args: str
) -> subprocess.CompletedProcess[str]:
    """``minds ARGS`` as a person runs it, against the cluster (and the ledger, when given)."""
    env = {**os.environ, "KUBECONFIG": str(cluster.kubeconfig), "COLUMNS": "200"}
    if database_url is not None:
        env["MINDS_DATABASE_URL"] = database_url
    return subprocess.run(
        [sys.executable, "-m", "minds.cli.main", *args],
        env=env,
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def why(cluster: Cluster, namespace: str, plan: str, database_url: str, *step: str) -> str:
    """What ``minds why plan/PLAN [STEP]`` tells a person."""
    done = minds_cli(cluster, database_url, "why", f"plan/{plan}", *step, "-n", namespace)
    assert done.returncode == 0, done.stderr
    return done.stdout


def cycles_completed(ledger: Ledger, namespace: str, name: str = "keeper") -> int:
    """How many cycles the mind completed, as the ledger counts them: each `cycle_completed`
    row, and each routine cycle after it that its series counted (docs/ledger.md, Routine is
    a series)."""
    rows = ledger.events(namespace=namespace, mind=name, type="cycle_completed")
    counted = [s for s in series_of(ledger, namespace, name) if s.kind is SeriesKind.CYCLE]
    return len(rows) + sum(s.count - 1 for s in counted)

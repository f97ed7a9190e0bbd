"""Helpers for executor scenarios: the test plays "the world" by setting workload status."""

from __future__ import annotations

import json
from typing import Any

from tests.fixtures.cluster import Cluster
from tests.fixtures.waiting import eventually


def apply(cluster: Cluster, obj: dict[str, Any]) -> None:
    cluster.kubectl("apply", "-f", "-", input_=json.dumps(obj))


def mind(cluster: Cluster, namespace: str, name: str = "keeper", **spec: Any) -> None:
    apply(
        cluster,
        {
            "apiVersion": "minds.dev/v1alpha1",
            "kind": "Mind",
            "metadata": {"name": name, "namespace": namespace},
            "spec": spec,
        },
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
    obj = json.loads(
        cluster.kubectl("get", "deployment", name, "-n", namespace, "-o", "json").stdout
    )
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
    obj = json.loads(cluster.kubectl("get", "plan", name, "-n", namespace, "-o", "json").stdout)
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
            **spec,
        },
    }


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

"""The devcluster's world runs: the real deployment and replicaset controllers, the real
scheduler and kwok's simulated kubelets move a Deployment from its spec to Ready Pods, and
``kubectl rollout restart`` replaces those Pods for real."""

from __future__ import annotations

import json
from typing import Any

from tests.fixtures.cluster import Cluster
from tests.fixtures.waiting import eventually

NAME = "atlas-worker"


def deployment(namespace: str, replicas: int = 2, labels: dict[str, str] | None = None) -> str:
    template_labels = {"app": NAME, **(labels or {})}
    return json.dumps(
        {
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "metadata": {"name": NAME, "namespace": namespace},
            "spec": {
                "replicas": replicas,
                "selector": {"matchLabels": {"app": NAME}},
                "template": {
                    "metadata": {"labels": template_labels},
                    "spec": {"containers": [{"name": "worker", "image": "atlas-worker:1.0"}]},
                },
            },
        }
    )


def pods(world: Cluster, namespace: str) -> list[dict[str, Any]]:
    out = world.kubectl("get", "pods", "-n", namespace, "-l", f"app={NAME}", "-o", "json").stdout
    items: list[dict[str, Any]] = json.loads(out)["items"]
    return items


def ready(pod: dict[str, Any]) -> bool:
    conditions = pod.get("status", {}).get("conditions", [])
    return any(c["type"] == "Ready" and c["status"] == "True" for c in conditions)


def rollout_status(world: Cluster, namespace: str, timeout: str = "90s") -> None:
    world.kubectl(
        "rollout", "status", f"deployment/{NAME}", "-n", namespace, f"--timeout={timeout}"
    )


def test_a_deployment_gets_a_replicaset_and_ready_pods_on_simulated_nodes(
    world: Cluster, world_namespace: str
) -> None:
    world.kubectl("apply", "-f", "-", input_=deployment(world_namespace))
    rollout_status(world, world_namespace)

    sets = json.loads(
        world.kubectl("get", "replicasets", "-n", world_namespace, "-o", "json").stdout
    )["items"]
    assert [rs["metadata"]["ownerReferences"][0]["name"] for rs in sets] == [NAME]
    assert sets[0]["status"]["readyReplicas"] == 2
    running = pods(world, world_namespace)
    assert len(running) == 2
    assert all(ready(p) for p in running)
    assert {p["spec"]["nodeName"] for p in running} <= {"kwok-node-0", "kwok-node-1"}
    status = json.loads(
        world.kubectl("get", f"deployment/{NAME}", "-n", world_namespace, "-o", "json").stdout
    )["status"]
    assert status["readyReplicas"] == 2
    assert status["updatedReplicas"] == 2


def test_rollout_restart_replaces_the_pods(world: Cluster, world_namespace: str) -> None:
    world.kubectl("apply", "-f", "-", input_=deployment(world_namespace))
    rollout_status(world, world_namespace)
    before = {p["metadata"]["uid"]: p["metadata"]["name"] for p in pods(world, world_namespace)}

    world.kubectl("rollout", "restart", f"deployment/{NAME}", "-n", world_namespace)
    rollout_status(world, world_namespace)

    def replaced() -> list[dict[str, Any]] | None:
        now = pods(world, world_namespace)
        # The old pods go through graceful deletion, which kwok completes: wait for that.
        fresh = not set(before) & {p["metadata"]["uid"] for p in now}
        return now if len(now) == 2 and fresh else None

    after = eventually(replaced, timeout=60, what="only the new pods left")
    assert all(ready(p) for p in after)
    assert not set(before.values()) & {p["metadata"]["name"] for p in after}

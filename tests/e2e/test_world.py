"""The devcluster's world runs: the real deployment and replicaset controllers, the real
scheduler and kwok's simulated kubelets move a Deployment from its spec to Ready Pods, and
``kubectl rollout restart`` replaces those Pods for real."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

from minds.devenv import cluster as devcluster
from tests.e2e.world_support import NAME, deployment, pods, ready, rollout_status
from tests.fixtures.cluster import REPO, Cluster
from tests.fixtures.waiting import eventually


def test_a_deployment_gets_a_replicaset_and_ready_pods_on_simulated_nodes(
    world: Cluster, world_namespace: str
) -> None:
    world.kubectl("apply", "-f", "-", input_=deployment(world_namespace))
    rollout_status(world, world_namespace)

    sets = world.api.list("replicasets", world_namespace)["items"]
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


def test_each_component_acts_as_its_own_least_privileged_identity(
    world: Cluster, world_namespace: str
) -> None:
    """The controllers act as one ServiceAccount each (as kube-controller-manager does with
    --use-service-account-credentials), and kwok, which plays the kubelets, may write Pod
    status but neither create workloads nor read Secrets."""
    world.kubectl("apply", "-f", "-", input_=deployment(world_namespace))
    rollout_status(world, world_namespace)
    # kube-controller-manager creates the ServiceAccount of each controller it runs when,
    # and only when, it acts as one ServiceAccount per controller.
    accounts = world.kubectl("get", "serviceaccounts", "-n", "kube-system", "-o", "name").stdout
    for controller in ("deployment-controller", "replicaset-controller", "namespace-controller"):
        assert f"serviceaccount/{controller}" in accounts

    def can(user: str, verb: str, resource: str, *subresource: str) -> bool:
        args = ["auth", "can-i", verb, resource, "-n", world_namespace, f"--as={user}"]
        args += [f"--subresource={s}" for s in subresource]
        return world.kubectl(*args, check=False).stdout.strip() == "yes"

    assert can("devcluster:kwok", "patch", "pods", "status")
    assert not can("devcluster:kwok", "create", "pods")
    assert not can("devcluster:kwok", "create", "deployments")
    assert not can("devcluster:kwok", "get", "secrets")
    assert can("system:kube-scheduler", "create", "pods", "binding")
    assert not can("system:kube-scheduler", "get", "secrets")


def test_a_world_that_cannot_start_is_no_cluster_at_all(tmp_path: Path) -> None:
    """Without kwok there are no nodes, so nothing would ever run: devcluster says so and
    exits, stopping the API server it started, instead of announcing a cluster."""
    binary = os.environ.get("MINDS_DEVCLUSTER") or str(devcluster.build_devcluster(REPO))
    missing = tmp_path / "no-kwok-here"
    proc = subprocess.run(
        [binary, "--dir", str(tmp_path / "state"), "--world", "--kwok", str(missing)],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert proc.returncode == 1
    assert "READY" not in proc.stdout
    assert f"kwok: {missing} not found" in proc.stderr

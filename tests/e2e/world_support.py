"""Helpers for tests in the world (docs/world.md): a Deployment whose Pods run on kwok's
simulated nodes, the faults that break them, and waits on what the real controllers do."""

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
    listed = world.api.list("pods", namespace, selector=f"app={NAME}")
    items: list[dict[str, Any]] = listed["items"]
    return items


def ready(pod: dict[str, Any]) -> bool:
    conditions = pod.get("status", {}).get("conditions", [])
    return any(c["type"] == "Ready" and c["status"] == "True" for c in conditions)


def rollout_status(world: Cluster, namespace: str, timeout: str = "90s") -> None:
    world.kubectl(
        "rollout", "status", f"deployment/{NAME}", "-n", namespace, f"--timeout={timeout}"
    )


FAULT = "minds.dev/fault"


def container(pod: dict[str, Any]) -> dict[str, Any]:
    statuses: list[dict[str, Any]] = pod.get("status", {}).get("containerStatuses", [])
    return statuses[0] if statuses else {}


def crash_looping(pod: dict[str, Any]) -> bool:
    state = container(pod).get("state", {})
    return (
        not ready(pod)
        and state.get("waiting", {}).get("reason") == "CrashLoopBackOff"
        and container(pod).get("restartCount", 0) >= 1
    )


def never_ready(pod: dict[str, Any]) -> bool:
    return (
        pod.get("status", {}).get("phase") == "Running"
        and not ready(pod)
        and "running" in container(pod).get("state", {})
    )


def all_pods(world: Cluster, namespace: str, check: Any, count: int = 2) -> list[dict[str, Any]]:
    """Wait until exactly ``count`` Pods exist and every one passes ``check``."""

    def probe() -> list[dict[str, Any]] | None:
        now = [p for p in pods(world, namespace) if "deletionTimestamp" not in p["metadata"]]
        return now if len(now) == count and all(check(p) for p in now) else None

    return eventually(probe, timeout=90, what=f"{count} pods that pass {check.__name__}")


def rollout_fails(world: Cluster, namespace: str) -> bool:
    proc = world.kubectl(
        "rollout", "status", f"deployment/{NAME}", "-n", namespace, "--timeout=5s", check=False
    )
    return proc.returncode != 0


def broken_again(
    world: Cluster, namespace: str, check: Any, before: list[dict[str, Any]]
) -> list[dict[str, Any]]:
    """Wait until no Pod is Ready and a Pod that was not in ``before`` has the fault. A rollout
    in which no Pod is available goes no further than its surge (maxUnavailable rounds down
    to 0 for 2 replicas): the first new Pod never becomes available, so no old one goes."""
    old = {p["metadata"]["uid"] for p in before}

    def probe() -> list[dict[str, Any]] | None:
        now = [p for p in pods(world, namespace) if "deletionTimestamp" not in p["metadata"]]
        new = [p for p in now if p["metadata"]["uid"] not in old and check(p)]
        return new if new and not any(ready(p) for p in now) else None

    return eventually(probe, timeout=90, what=f"new pods that pass {check.__name__}, none Ready")


def break_pods(world: Cluster, namespace: str, fault: str = "crashloop") -> list[dict[str, Any]]:
    """Put the fault on the running Pods (a restart heals them); wait until all are broken."""
    world.kubectl("label", "pods", "-n", namespace, "-l", f"app={NAME}", f"{FAULT}={fault}")
    check = crash_looping if fault == "crashloop" else never_ready
    broken = all_pods(world, namespace, check, count=len(pods(world, namespace)))
    wait_status(world, namespace, lambda s: s.get("readyReplicas", 0) == 0, "no replica ready")
    return broken


def wait_status(world: Cluster, namespace: str, holds: Any, what: str) -> dict[str, Any]:
    """Wait until the Deployment's status, as its controller writes it, satisfies ``holds``."""

    def probe() -> dict[str, Any] | None:
        obj = world.api.get("deployment", NAME, namespace)
        status: dict[str, Any] = obj.get("status", {})
        return status if holds(status) else None

    return eventually(probe, timeout=60, what=f"deployment {NAME}: {what}")

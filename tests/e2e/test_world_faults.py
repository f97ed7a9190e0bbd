"""Faults on demand in the world, driven by kubectl alone (docs/world.md): a Pod labelled
``minds.dev/fault`` crash-loops or never becomes Ready; on running Pods a restart heals it, on
the Pod template it does not, and a rollout that drops the label does."""

from __future__ import annotations

from typing import Any

import pytest

from tests.e2e.test_world import NAME, deployment, pods, ready, rollout_status
from tests.fixtures.cluster import Cluster
from tests.fixtures.waiting import eventually

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


def test_a_crash_loop_on_running_pods_is_healed_by_a_restart(
    world: Cluster, world_namespace: str
) -> None:
    world.kubectl("apply", "-f", "-", input_=deployment(world_namespace))
    rollout_status(world, world_namespace)

    world.kubectl("label", "pods", "-n", world_namespace, "-l", f"app={NAME}", f"{FAULT}=crashloop")
    broken = all_pods(world, world_namespace, crash_looping)
    assert rollout_fails(world, world_namespace)

    world.kubectl("rollout", "restart", f"deployment/{NAME}", "-n", world_namespace)
    rollout_status(world, world_namespace)
    healed = all_pods(world, world_namespace, ready)
    assert not {p["metadata"]["uid"] for p in broken} & {p["metadata"]["uid"] for p in healed}


def test_restarts_of_a_crash_looping_container_are_counted(
    world: Cluster, world_namespace: str
) -> None:
    world.kubectl("apply", "-f", "-", input_=deployment(world_namespace, replicas=1))
    rollout_status(world, world_namespace)
    world.kubectl("label", "pods", "-n", world_namespace, "-l", f"app={NAME}", f"{FAULT}=crashloop")
    [pod] = all_pods(world, world_namespace, crash_looping, count=1)
    first = container(pod)["restartCount"]

    def crashed_again() -> bool:
        [now] = pods(world, world_namespace)
        return bool(container(now)["restartCount"] > first and crash_looping(now))

    eventually(crashed_again, timeout=60, what="another crash, counted")


@pytest.mark.parametrize(
    ("fault", "check"), [("crashloop", crash_looping), ("never-ready", never_ready)]
)
def test_a_fault_in_the_template_survives_a_restart_and_a_rollout_without_it_heals(
    world: Cluster, world_namespace: str, fault: str, check: Any
) -> None:
    world.kubectl("apply", "-f", "-", input_=deployment(world_namespace, labels={FAULT: fault}))
    first = all_pods(world, world_namespace, check)
    assert rollout_fails(world, world_namespace)

    world.kubectl("rollout", "restart", f"deployment/{NAME}", "-n", world_namespace)
    restarted = broken_again(world, world_namespace, check, first)
    assert all(p["metadata"]["labels"][FAULT] == fault for p in restarted)
    assert rollout_fails(world, world_namespace)

    world.kubectl("apply", "-f", "-", input_=deployment(world_namespace))
    rollout_status(world, world_namespace)
    healed = all_pods(world, world_namespace, ready)
    assert all(FAULT not in p["metadata"]["labels"] for p in healed)

"""Faults on demand in the world, driven by kubectl alone (docs/world.md): a Pod labelled
``minds.dev/fault`` crash-loops or never becomes Ready; on running Pods a restart heals it, on
the Pod template it does not, and a rollout that drops the label does."""

from __future__ import annotations

from typing import Any

import pytest

from tests.e2e.world_support import (
    FAULT,
    NAME,
    all_pods,
    break_pods,
    broken_again,
    container,
    crash_looping,
    deployment,
    never_ready,
    pods,
    ready,
    rollout_fails,
    rollout_status,
)
from tests.fixtures.cluster import Cluster
from tests.fixtures.waiting import eventually


def test_a_crash_loop_on_running_pods_is_healed_by_a_restart(
    world: Cluster, world_namespace: str
) -> None:
    world.kubectl("apply", "-f", "-", input_=deployment(world_namespace))
    rollout_status(world, world_namespace)

    broken = break_pods(world, world_namespace)
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
    [pod] = break_pods(world, world_namespace)
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

"""The mind hears its goals, against the real control plane: a watched workload that breaks is
planned for within seconds although the Mind's cycle runs once a minute, and a burst of changes
to it costs at most two cycles (docs/execution.md, Waking a mind early)."""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from datetime import datetime
from typing import Any

import pytest
from kubernetes import client

from minds.adapters.kube.client import api_client
from minds.adapters.ledger import Ledger
from minds.devenv.controller import ControllerHandle
from minds.domain.wakeups import Debounce
from tests.e2e.executor_support import cycles_completed, mind, set_health
from tests.e2e.executor_support import deployment as still_deployment
from tests.e2e.test_repeats_cycle import GOAL, plans_of
from tests.e2e.world_support import FAULT, NAME, deployment, rollout_status
from tests.fixtures.cluster import Cluster
from tests.fixtures.metrics import labels, samples, scrape
from tests.fixtures.waiting import eventually

#: Longer than any of these tests: only an early wake-up can explain a second cycle.
MINUTE_CYCLE = 60
WAKEUPS = "minds_cycle_early_wakeups_total"
#: Seconds between two changes of the burst: twenty within two seconds.
PACE = 0.09


def keeper(cluster: Cluster, namespace: str, policy: str = "approve") -> None:
    """A Mind whose goal is atlas-worker running, with a cycle a minute, that asks a person
    before a restart (so nothing heals the workload behind the test's back)."""
    mind(
        cluster,
        namespace,
        cycleIntervalSeconds=MINUTE_CYCLE,
        goals=GOAL,
        capabilityPolicy=[
            {"capability": "service.restart", "decision": policy},
            {"capability": "logs.query", "decision": "deny"},
        ],
        budget={"invocations": 100},
    )


def cycles(ledger: Ledger, namespace: str) -> list[datetime]:
    rows = ledger.events(namespace=namespace, mind="keeper", type="cycle_completed")
    return sorted(row.occurred_at for row in rows)


def first_cycle(ledger: Ledger, namespace: str) -> datetime:
    [done] = eventually(lambda: cycles(ledger, namespace), timeout=60, what="the first cycle")
    return done


def early_wakeups(handle: ControllerHandle, namespace: str) -> dict[str, float]:
    found = samples(scrape(handle.metrics_url)).get(WAKEUPS, {})
    return {
        dict(key)["reason"]: value
        for key, value in found.items()
        if key >= labels(namespace=namespace, mind="keeper")
    }


def stays(probe: Callable[[], bool], seconds: float, what: str) -> None:
    """``probe`` holds at every look until the deadline (what must not happen, does not)."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        assert probe(), what
        time.sleep(0.2)


def test_a_broken_watched_deployment_is_planned_for_within_three_seconds(
    world: Cluster, world_namespace: str, world_controller: ControllerHandle, e2e_ledger: Ledger
) -> None:
    cluster, namespace = world, world_namespace
    cluster.kubectl("apply", "-f", "-", input_=deployment(namespace, replicas=1))
    rollout_status(cluster, namespace)
    keeper(cluster, namespace)
    periodic = first_cycle(e2e_ledger, namespace)
    assert plans_of(cluster, namespace) == []  # healthy: nothing to do

    cluster.kubectl("label", "pods", "-n", namespace, "-l", f"app={NAME}", f"{FAULT}=crashloop")

    def unavailable() -> bool:
        obj = cluster.api.get("deployment", NAME, namespace)
        return not (obj.get("status") or {}).get("availableReplicas")

    # From the moment the Deployment's status says no replica is available (as its
    # controller wrote it, so as the watch delivers it).
    eventually(unavailable, timeout=60, interval=0.05, what="the deployment unavailable")
    broken = time.monotonic()
    [plan] = eventually(
        lambda: plans_of(cluster, namespace), timeout=3, interval=0.05, what="a plan"
    )
    elapsed = time.monotonic() - broken
    assert elapsed <= 3.0, f"the plan came {elapsed:.2f}s after the deployment broke"

    assert plan["spec"]["strategy"] == "direct"
    created = datetime.fromisoformat(plan["metadata"]["creationTimestamp"].replace("Z", "+00:00"))
    # Not the periodic cycle: the next one was a minute away.
    assert (created - periodic).total_seconds() < MINUTE_CYCLE - 10
    woken = early_wakeups(world_controller, namespace)
    assert woken.get("availability", 0) + woken.get("conditions", 0) >= 1, woken


@pytest.mark.usefixtures("session_controller")
def test_a_burst_of_changes_to_a_watched_workload_costs_a_cycle_per_cooldown(
    cluster: Cluster, namespace: str, e2e_ledger: Ledger
) -> None:
    """Twenty status writes paced to fit in two seconds, each of them news to the goal (its
    ready replicas go up and down): one cycle when the burst starts, one after it, no more (one
    more per further cooldown the burst spans when the machine stretches it)."""
    still_deployment(cluster, namespace)
    set_health(cluster, namespace, healthy=True)
    # The restart is denied: the mind observes and wants, but nothing it does changes the
    # workload, so every change the test sees is one the test made.
    keeper(cluster, namespace, policy="deny")
    first_cycle(e2e_ledger, namespace)

    apps = client.AppsV1Api(api_client(str(cluster.kubeconfig)))
    body: dict[str, Any] = {"status": {"replicas": 1, "observedGeneration": 1}}
    before = cycles_completed(e2e_ledger, namespace)
    began = time.monotonic()
    for i in range(20):
        # Spread over the two seconds, as a flapping workload would: a burst that fits in the
        # first wake-up's settle would prove nothing about what comes after it.
        time.sleep(max(0.0, began + i * PACE - time.monotonic()))
        ready = i % 2
        body["status"].update(readyReplicas=ready, availableReplicas=ready)
        apps.patch_namespaced_deployment_status(NAME, namespace, body, _preload_content=False)
    # Two when the burst fits in one cooldown, as it does on an idle machine. A loaded machine
    # may stretch the twenty writes over several cooldowns; each of them then costs at most one
    # more cycle, still far fewer than twenty (and the bound does not hide a missing debounce).
    lasted = time.monotonic() - began
    bound = 1 + math.ceil(lasted / Debounce().cooldown.total_seconds())
    assert bound < 20 / 2, f"the burst took {lasted:.1f}s: too slow to show a debounce"

    def after() -> int:
        # Cycles that decide nothing are counted in a series, not a row each: count both.
        return cycles_completed(e2e_ledger, namespace) - before

    eventually(lambda: after() >= 1, timeout=10, what="a cycle woken by the burst")
    # The debounce's cooldown is two seconds: a cycle past the bound would come within ten.
    stays(lambda: after() <= bound, 10, f"at most {bound} cycles for the burst")
    assert 1 <= after() <= bound

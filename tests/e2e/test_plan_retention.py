"""Finished plans leave the cluster after their Mind's TTL, and only once concluded.

The removal runs in-process with the controller's own credentials (so its RBAC is proven) and a
clock set past the TTL, against the real API server and the real ledger.
"""

from __future__ import annotations

import subprocess
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from minds.adapters.kube.client import KubeResources, api_client
from minds.adapters.ledger import Ledger
from minds.devenv.kubectl import kubectl
from minds.domain.ledger import idempotency_key
from minds.domain.resources.kinds import PLAN
from minds.engine.retention import REMOVED, PlanRetention
from tests.e2e.executor_support import (
    apply,
    deployment,
    grant_request,
    mind,
    operator_plan,
    plan_body,
    plan_names,
    read_step,
    set_health,
    wait_phase,
)
from tests.fixtures.cluster import Cluster
from tests.fixtures.waiting import eventually

TTL = 3600


def _retention(cluster: Cluster, ledger: Ledger, after: timedelta) -> PlanRetention:
    api = KubeResources(api_client(str(cluster.controller_kubeconfig)))
    return PlanRetention(resources=api, ledger=ledger, clock=lambda: datetime.now(UTC) + after)


def _plans(cluster: Cluster, namespace: str) -> list[dict[str, Any]]:
    return KubeResources(api_client(str(cluster.kubeconfig))).list(PLAN, namespace)


def _removed(ledger: Ledger, uid: str) -> bool:
    return ledger.event(idempotency_key("plan", uid, REMOVED)) is not None


@pytest.fixture
def finished(
    session_controller: object, cluster: Cluster, namespace: str, e2e_ledger: Ledger
) -> dict[str, Any]:
    """A plan the controller ran to completion and concluded, under a Mind with a one-hour TTL."""
    mind(cluster, namespace, planTtlSecondsAfterFinished=TTL)
    deployment(cluster, namespace)
    set_health(cluster, namespace, healthy=True)
    apply(cluster, operator_plan(namespace, "done", [read_step("S1", namespace)]))
    wait_phase(cluster, namespace, "done", "completed")
    body = plan_body(cluster, namespace, "done")
    key = idempotency_key("plan", body["metadata"]["uid"], "plan_completed")
    eventually(lambda: e2e_ledger.event(key) is not None, timeout=60, what="plan concluded")
    return body


def test_a_concluded_plan_stays_until_its_ttl_and_then_leaves_with_a_ledger_record(
    cluster: Cluster, namespace: str, e2e_ledger: Ledger, finished: dict[str, Any]
) -> None:
    uid = finished["metadata"]["uid"]
    apply(cluster, operator_plan(namespace, "open", [read_step("S1", namespace)], mind_name="none"))

    due = _retention(cluster, e2e_ledger, timedelta(seconds=TTL - 120)).sweep(
        _plans(cluster, namespace)
    )
    assert "done" in plan_names(cluster, namespace)
    assert due is not None
    assert due > datetime.now(UTC)

    _retention(cluster, e2e_ledger, timedelta(seconds=TTL + 120)).sweep(_plans(cluster, namespace))
    assert plan_names(cluster, namespace) == ["open"]  # a plan that never ran stays
    assert _removed(e2e_ledger, uid)


def test_a_plan_recreated_under_the_same_name_is_spared(
    cluster: Cluster, namespace: str, e2e_ledger: Ledger, finished: dict[str, Any]
) -> None:
    stale = _plans(cluster, namespace)  # what a store held before the name was reused
    cluster.kubectl("-n", namespace, "delete", "plan", "done", "--wait=true")
    apply(cluster, operator_plan(namespace, "done", [read_step("S1", namespace)]))
    again = plan_body(cluster, namespace, "done")
    assert again["metadata"]["uid"] != finished["metadata"]["uid"]

    _retention(cluster, e2e_ledger, timedelta(seconds=TTL + 120)).sweep(stale)
    assert plan_body(cluster, namespace, "done")["metadata"]["uid"] == again["metadata"]["uid"]


def test_a_finished_plan_whose_conclusion_is_not_recorded_stays(
    cluster: Cluster, namespace: str, e2e_ledger: Ledger, finished: dict[str, Any]
) -> None:
    """As if the plan had finished while no controller ran: nothing it meant is in the ledger,
    so a removal now would lose it. The body is the finished one, its uid one the ledger never
    heard of (the uid precondition would spare the real object anyway; the ledger shows whether
    the removal was attempted)."""
    unconcluded = {
        **finished,
        "metadata": {**finished["metadata"], "uid": "00000000-0000-0000-0000-000000000000"},
    }
    _retention(cluster, e2e_ledger, timedelta(seconds=TTL + 120)).sweep([unconcluded])
    assert "done" in plan_names(cluster, namespace)
    assert not _removed(e2e_ledger, unconcluded["metadata"]["uid"])


def test_the_controllers_token_deletes_only_finished_plans(
    cluster: Cluster, namespace: str, finished: dict[str, Any]
) -> None:
    """RBAC grants the controller `delete` on plans for retention; admission narrows it to plans
    that are history, so its token can never make an open plan (or a draft) go away."""
    apply(cluster, operator_plan(namespace, "asks", [grant_request("R1", namespace)]))
    wait_phase(cluster, namespace, "asks", "awaiting_approval")
    orphan = operator_plan(namespace, "orphan", [read_step("S1", namespace)], mind_name="nobody")
    apply(cluster, orphan)
    wait_phase(cluster, namespace, "orphan", "draft")

    def delete(name: str) -> subprocess.CompletedProcess[str]:
        return kubectl(
            cluster.controller_kubeconfig, "delete", "plan", name, "-n", namespace, check=False
        )

    for name, phase in (("asks", "awaiting_approval"), ("orphan", "draft")):
        refused = delete(name)
        assert refused.returncode != 0
        assert f"deletes only finished plans; this one is {phase}" in refused.stderr
    assert {"asks", "orphan", "done"} <= set(plan_names(cluster, namespace))
    assert delete("done").returncode == 0  # finished: history, the controller's to remove
    assert "done" not in plan_names(cluster, namespace)

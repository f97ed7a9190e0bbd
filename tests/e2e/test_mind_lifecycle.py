"""A Mind's life against the real control plane, Postgres and the controller process."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from minds.adapters.ledger import Ledger
from minds.devenv.process import stop
from tests.fixtures.cluster import REPO, Cluster, ControllerFactory, with_namespace
from tests.fixtures.waiting import eventually

pytestmark = pytest.mark.minutes(1)

EXAMPLE = REPO / "examples" / "mind.yaml"
NAME = "atlas-keeper"


def count(ledger: Ledger, namespace: str, type_: str, mind: str = NAME) -> int:
    return len(ledger.events(namespace=namespace, mind=mind, type=type_))


def ready(cluster: Cluster, namespace: str, name: str = NAME, generation: int = 1) -> dict:
    """Wait until the Ready condition reflects ``generation``; return it."""

    def probe() -> dict | None:
        obj = cluster.api.get("mind", name, namespace)
        for cond in obj.get("status", {}).get("conditions", []):
            if cond["type"] == "Ready" and cond.get("observedGeneration") == generation:
                return cond
        return None

    return eventually(probe, timeout=60, what=f"Ready for generation {generation}")


@pytest.mark.usefixtures("session_controller")
def test_apply_edit_delete(cluster: Cluster, namespace: str, e2e_ledger: Ledger) -> None:
    cluster.kubectl("apply", "-f", "-", input_=with_namespace(EXAMPLE, namespace))
    cluster.kubectl(
        "wait", "--for=condition=Ready", f"mind/{NAME}", "-n", namespace, "--timeout=60s"
    )
    cond = ready(cluster, namespace)
    assert cond["status"] == "True"
    assert cond["reason"] == "Accepted"
    assert count(e2e_ledger, namespace, "mind_registered") == 1

    obj = cluster.api.get("mind", NAME, namespace)
    assert "minds.dev/ledger" in obj["metadata"]["finalizers"]

    describe = cluster.kubectl("describe", "mind", NAME, "-n", namespace).stdout
    assert "Registered" in describe

    table = cluster.kubectl("get", "minds", "-n", namespace).stdout
    assert NAME in table
    assert "True" in table

    cluster.kubectl(
        "patch", "mind", NAME, "-n", namespace, "--type=merge", "-p", '{"spec":{"caution":0.9}}'
    )
    ready(cluster, namespace, generation=2)
    eventually(lambda: count(e2e_ledger, namespace, "mind_updated") == 1, what="one mind_updated")
    [updated] = e2e_ledger.events(namespace=namespace, mind=NAME, type="mind_updated")
    assert updated.payload["generation"] == 2
    assert count(e2e_ledger, namespace, "mind_registered") == 1

    cluster.kubectl("delete", "mind", NAME, "-n", namespace, "--timeout=60s")
    gone = cluster.kubectl("get", "mind", NAME, "-n", namespace, check=False)
    assert gone.returncode != 0
    assert "NotFound" in gone.stderr
    assert count(e2e_ledger, namespace, "mind_deleted") == 1


DUE = "2026-12-04T02:00:00Z"
EVERY = "spec.commitments[0].everySeconds"


@pytest.mark.parametrize(
    ("patch", "field"),
    [
        ({"caution": 2}, "spec.caution"),
        ({"commitments": [{"name": "x", "mode": "maybe"}]}, "spec.commitments[0].mode"),
        ({"cycleIntervalSeconds": 1}, "spec.cycleIntervalSeconds"),
        ({"goals": [{"name": "Bad_Name", "subject": {"name": "w"}}]}, "spec.goals[0].name"),
        (
            {"commitments": [{"name": "x", "mode": "do", "unlessApproval": True}]},
            "spec.commitments[0].unlessApproval",
        ),
        *(
            ({"commitments": [{"name": "x", "capability": "service.restart", **c}]}, EVERY)
            for c in (
                {"mode": "refrain", "due": DUE, "everySeconds": 3600},
                {"mode": "do", "everySeconds": 3600},
                {"mode": "do", "due": DUE, "everySeconds": 59},
            )
        ),
        (
            {
                "lockedCapabilities": ["service.restart"],
                "capabilityPolicy": [{"capability": "service.restart", "decision": "allow"}],
            },
            "spec.capabilityPolicy",
        ),
        ({"surprise": True}, "spec.surprise"),
    ],
)
def test_malformed_mind_is_refused_naming_the_field(
    cluster: Cluster, namespace: str, patch: dict, field: str
) -> None:
    manifest = {
        "apiVersion": "minds.dev/v1alpha1",
        "kind": "Mind",
        "metadata": {"name": "bad", "namespace": namespace},
        "spec": patch,
    }
    proc = cluster.kubectl("apply", "-f", "-", input_=json.dumps(manifest), check=False)
    assert proc.returncode != 0
    assert field in proc.stderr, proc.stderr
    assert cluster.kubectl("get", "mind", "bad", "-n", namespace, check=False).returncode != 0


@pytest.mark.usefixtures("session_controller")
def test_spec_the_schema_cannot_judge_gets_a_reasoned_condition(
    cluster: Cluster, namespace: str
) -> None:
    manifest = {
        "apiVersion": "minds.dev/v1alpha1",
        "kind": "Mind",
        "metadata": {"name": "typo", "namespace": namespace},
        "spec": {"capabilityPolicy": [{"capability": "servce.restart", "decision": "deny"}]},
    }
    cluster.kubectl("apply", "-f", "-", input_=json.dumps(manifest))
    cond = ready(cluster, namespace, "typo")
    assert cond["status"] == "False"
    assert cond["reason"] == "InvalidSpec"
    assert "spec.capabilityPolicy[0].capability" in cond["message"]
    events = cluster.kubectl(
        "get", "events", "-n", namespace, "--field-selector", "involvedObject.name=typo"
    ).stdout
    assert "InvalidSpec" in events


def test_controller_restart_writes_no_duplicates(
    cluster: Cluster,
    namespace: str,
    e2e_ledger: Ledger,
    controller_factory: ControllerFactory,
) -> None:
    first = controller_factory("first")
    cluster.kubectl("apply", "-f", "-", input_=with_namespace(EXAMPLE, namespace))
    ready(cluster, namespace)

    # Killed without a chance to clean up, as a crash or an OOM kill would.
    stop(first.pid_file, sig=signal.SIGKILL)
    cluster.kubectl(
        "patch", "mind", NAME, "-n", namespace, "--type=merge", "-p", '{"spec":{"caution":0.7}}'
    )
    manifest = with_namespace(EXAMPLE, namespace).replace(f"name: {NAME}", "name: while-down")
    cluster.kubectl("apply", "-f", "-", input_=manifest)

    controller_factory("second")
    ready(cluster, namespace, generation=2)
    ready(cluster, namespace, "while-down")
    # A third start replays resume handlers for everything once more.
    controller_factory("third")
    cluster.kubectl(
        "patch", "mind", NAME, "-n", namespace, "--type=merge", "-p", '{"spec":{"caution":0.8}}'
    )
    ready(cluster, namespace, generation=3)

    assert count(e2e_ledger, namespace, "mind_registered") == 1
    assert count(e2e_ledger, namespace, "mind_registered", "while-down") == 1
    updates = e2e_ledger.events(namespace=namespace, mind=NAME, type="mind_updated")
    assert sorted(e.payload["generation"] for e in updates) == [2, 3]


def test_controller_refuses_to_start_on_a_schema_behind(
    cluster: Cluster, database_url: str
) -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "minds.cli.main", "controller", "run"],
        env={
            "PATH": os.environ["PATH"],
            "KUBECONFIG": str(cluster.controller_kubeconfig),
            "MINDS_DATABASE_URL": database_url,
        },
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert proc.returncode == 2, proc.stderr
    assert "minds db upgrade" in proc.stderr


def test_kopf_run_serves_the_same_handlers(
    cluster: Cluster, namespace: str, e2e_database_url: str, tmp_path: Path
) -> None:
    """`kopf run -m minds.controller` is a supported way to run the controller."""
    from minds.devenv.controller import start_controller, stop_controller

    handle = start_controller(
        kubeconfig=cluster.controller_kubeconfig,
        database_url=e2e_database_url,
        state_dir=tmp_path,
        name="kopf-run",
        extra_env=cluster.ledger_env(),
        via_kopf=True,
    )
    try:
        handle.wait_ready()
        manifest = with_namespace(EXAMPLE, namespace).replace(f"name: {NAME}", "name: via-kopf")
        cluster.kubectl("apply", "-f", "-", input_=manifest)
        assert ready(cluster, namespace, "via-kopf")["status"] == "True"
        # This process handled it (another controller may be running in the session).
        eventually(lambda: f"{namespace}/via-kopf" in handle.log(), what="kopf run handled it")
    finally:
        stop_controller(handle)

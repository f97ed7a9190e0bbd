"""The ledger's checkpoint in the local control plane: a controller running under the chart's
ServiceAccount keeps every chain's head, sealed, in the chart's ConfigMap, which the chart lets
it update and nothing else; `minds db verify --checkpoint configmap:...` reads it from the
cluster and finds an old checkpoint put back and a truncated tail (docs/ledger.md)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from functools import partial
from pathlib import Path
from typing import Any

import pytest

from minds.devenv.controller import CHECKPOINT_CONFIGMAP, start_controller, stop_controller
from minds.devenv.install import CONTROLLER_ACCOUNT, CONTROLLER_NAMESPACE, repo_root
from tests.e2e.executor_support import mind
from tests.fixtures.cluster import Cluster
from tests.fixtures.docs import run_documented, sh_commands
from tests.fixtures.postgres import DatabaseFactory, LedgerDatabase, connect
from tests.fixtures.waiting import eventually

pytestmark = pytest.mark.e2e

DOC = repo_root() / "docs" / "ledger.md"
SOURCE = f"configmap:{CONTROLLER_NAMESPACE}/{CHECKPOINT_CONFIGMAP}"
ACCOUNT = f"system:serviceaccount:{CONTROLLER_NAMESPACE}:{CONTROLLER_ACCOUNT}"


def _data(cluster: Cluster) -> dict[str, Any]:
    proc = cluster.kubectl(
        "get", "configmap", CHECKPOINT_CONFIGMAP, "-n", CONTROLLER_NAMESPACE, "-o", "json"
    )
    return dict(json.loads(proc.stdout).get("data") or {})


def _sequence(cluster: Cluster) -> int:
    data = _data(cluster)
    return int(json.loads(data["checkpoint"])["sequence"]) if data.get("checkpoint") else 0


def _heads_of(cluster: Cluster, namespace: str) -> list[dict[str, Any]]:
    data = _data(cluster)
    heads = json.loads(data["checkpoint"])["heads"] if data.get("checkpoint") else []
    return [h for h in heads if h["namespace"] == namespace]


def _verify(
    cluster: Cluster, database: LedgerDatabase, *args: str
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "minds.cli.main", "db", "verify", *args],
        env={
            **os.environ,
            "KUBECONFIG": str(cluster.kubeconfig),
            "MINDS_DATABASE_URL": database.app_url,
        },
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def test_only_its_checkpoint_configmap_may_the_controller_update(cluster: Cluster) -> None:
    def can(*args: str) -> bool:
        proc = cluster.kubectl(
            "auth", "can-i", *args, "-n", CONTROLLER_NAMESPACE, "--as", ACCOUNT, check=False
        )
        return proc.stdout.strip() == "yes"

    assert can("update", f"configmap/{CHECKPOINT_CONFIGMAP}")
    assert can("patch", f"configmap/{CHECKPOINT_CONFIGMAP}")
    assert not can("update", "configmap/minds-model-endpoints")
    assert not can("delete", f"configmap/{CHECKPOINT_CONFIGMAP}")
    assert not can("create", "configmaps")


@pytest.mark.usefixtures("alone")
def test_the_checkpoint_finds_an_old_one_put_back_and_a_truncated_tail(
    cluster: Cluster, namespace: str, make_database: DatabaseFactory, tmp_path: Path
) -> None:
    database = make_database(migrated=True)
    handle = start_controller(
        kubeconfig=cluster.controller_kubeconfig,
        database_url=database.app_url,
        state_dir=tmp_path,
        extra_env={**cluster.ledger_env(), "MINDS_LEDGER_CHECKPOINT_SECONDS": "1"},
    )
    try:
        handle.wait_ready()
        mind(cluster, namespace, "keeper", cycleIntervalSeconds=5)
        eventually(
            lambda: _heads_of(cluster, namespace), timeout=60, what="a checkpoint of the mind"
        )
        old, old_sequence = _data(cluster), _sequence(cluster)
        eventually(lambda: _sequence(cluster) > old_sequence, timeout=60, what="a newer checkpoint")
    finally:
        stop_controller(handle)
    newest = _data(cluster)
    keys = ("--keys-dir", str(cluster.ledger_keys))

    intact = _verify(cluster, database, *keys, "--checkpoint", SOURCE)
    assert intact.returncode == 0, intact.stdout + intact.stderr
    assert f"checkpoint {_sequence(cluster)} of {CHECKPOINT_CONFIGMAP} holds" in intact.stdout

    # Someone who may write the ConfigMap puts the older checkpoint back.
    cluster.kubectl(
        "patch", "configmap", CHECKPOINT_CONFIGMAP, "-n", CONTROLLER_NAMESPACE,
        "--type=merge", "-p", json.dumps({"data": old}),
    )  # fmt: skip
    replayed = _verify(cluster, database, *keys, "--checkpoint", SOURCE)
    assert replayed.returncode == 1
    assert "(an old checkpoint was put back)" in replayed.stdout

    # The newest checkpoint back, and the chain's tail from its head on removed by the
    # database's owner.
    cluster.kubectl(
        "patch", "configmap", CHECKPOINT_CONFIGMAP, "-n", CONTROLLER_NAMESPACE,
        "--type=merge", "-p", json.dumps({"data": newest}),
    )  # fmt: skip
    [head] = [h for h in _heads_of(cluster, namespace) if h["table"] == "events"]
    with connect(database.owner_url) as conn:
        conn.execute("ALTER TABLE events DISABLE TRIGGER events_append_only")
        conn.execute(
            "DELETE FROM events WHERE namespace = %s AND mind = 'keeper' AND id >= %s",
            (namespace, head["order"]),
        )
        conn.execute("ALTER TABLE events ENABLE TRIGGER events_append_only")
    assert _verify(cluster, database, *keys).returncode == 0  # the chain alone cannot tell
    truncated = _verify(cluster, database, *keys, "--checkpoint", SOURCE)
    assert truncated.returncode == 1
    assert (
        f"CHECKPOINT events {namespace}/keeper: row {head['order']}, its head at checkpoint"
        in truncated.stdout
    )
    assert "(the chain was truncated or rewritten)" in truncated.stdout


@pytest.mark.usefixtures("alone")
def test_the_documented_key_rotation_and_checkpoint_commands_run(
    cluster: Cluster, namespace: str, make_database: DatabaseFactory, tmp_path: Path
) -> None:
    """docs/ledger.md's key and checkpoint commands, as written: a key made and put in a
    Secret, rows sealed with it, the key rotated, rows sealed with the new one, and the
    documented verify (both keys, the checkpoint read from the cluster) finds all intact."""
    make_key, make_secret, *rotate = sh_commands(DOC, section="The key")
    [verify] = sh_commands(DOC, section="Checkpoints")
    database = make_database(migrated=True)
    env = {"KUBECONFIG": str(cluster.kubeconfig), "MINDS_DATABASE_URL": database.app_url}
    run = partial(run_documented, substitutions={}, env=env, cwd=tmp_path)
    cluster.kubectl("delete", "secret", "minds-ledger-keys", "-n", CONTROLLER_NAMESPACE,
                    "--ignore-not-found")  # fmt: skip
    try:
        run([make_key, make_secret])
        mind(cluster, namespace, "keeper", cycleIntervalSeconds=5)
        for active in ("k1", "k2"):
            before = _sequence(cluster)
            handle = start_controller(
                kubeconfig=cluster.controller_kubeconfig,
                database_url=database.app_url,
                state_dir=tmp_path,
                name=f"controller-{active}",
                extra_env={
                    **cluster.ledger_env(),
                    "MINDS_LEDGER_KEYS_DIR": str(tmp_path / "ledger-keys"),
                    "MINDS_LEDGER_ACTIVE_KEY": active,
                    "MINDS_LEDGER_CHECKPOINT_SECONDS": "1",
                },
            )
            try:
                handle.wait_ready()
                eventually(
                    lambda before=before: _sequence(cluster) > before + 1,  # type: ignore[misc]
                    timeout=60,
                    what=f"checkpoints of rows sealed with {active}",
                )
            finally:
                stop_controller(handle)
            if active == "k1":
                run(rotate)
        [output] = run([verify]).values()
        assert "every seal checked" in output
        assert "checkpoint" in output
        assert "holds" in output
    finally:
        cluster.kubectl("delete", "secret", "minds-ledger-keys", "-n", CONTROLLER_NAMESPACE,
                        "--ignore-not-found")  # fmt: skip

"""`minds demo` as the README runs it, on the path where the user brings a cluster and a
Postgres (KUBECONFIG and MINDS_DATABASE_URL set)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from minds.adapters.ledger import Ledger
from tests.fixtures.cluster import Cluster
from tests.fixtures.postgres import LedgerDatabase


def minds(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "minds.cli.main", *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


def test_demo_on_an_existing_cluster_and_postgres(
    cluster: Cluster,
    e2e_ledger_database: LedgerDatabase,
    e2e_database_url: str,
    e2e_ledger: Ledger,
    tmp_path: Path,
) -> None:
    env = {
        **os.environ,
        "KUBECONFIG": str(cluster.kubeconfig),
        "MINDS_DATABASE_URL": e2e_database_url,
        "MINDS_DATABASE_OWNER_URL": e2e_ledger_database.owner_url,
        "COLUMNS": "200",
    }
    state = tmp_path / "dev"
    try:
        demo = minds("demo", "--state-dir", str(state), env=env)
        assert demo.returncode == 0, demo.stdout + demo.stderr
        out = demo.stdout
        assert "using the cluster KUBECONFIG points at" in out
        assert "condition met" in out
        assert "mind_registered" in out
        assert "default/atlas-keeper" in out
        assert f"source {state / 'env'}" in out
        env_file = (state / "env").read_text()
        assert f"export KUBECONFIG={cluster.kubeconfig}" in env_file

        table = cluster.kubectl("get", "minds", "-n", "default").stdout
        assert "atlas-keeper" in table
        assert "True" in table
        assert e2e_ledger.events(namespace="default", mind="atlas-keeper", type="mind_registered")
        # What the controller wrote, as the application role, is chained and intact.
        verified = minds("db", "verify", env=env)
        assert verified.returncode == 0, verified.stdout
        assert "ledger intact" in verified.stdout
        # While the demo's controller still runs, so its finalizer is released.
        cluster.kubectl("delete", "mind", "atlas-keeper", "-n", "default", "--timeout=60s")
    finally:
        down = minds("dev", "down", "--state-dir", str(state), env=env)
    assert down.returncode == 0, down.stderr
    assert "controller" in down.stdout

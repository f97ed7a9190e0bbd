"""`minds demo` as the README runs it, on the path where the user brings a cluster and a
Postgres (KUBECONFIG and MINDS_DATABASE_URL set): a cluster whose world runs, so the story
plays for real, and the README's commands after it, as written."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

from minds.adapters.ledger import Ledger
from tests.fixtures.cluster import REPO, Cluster
from tests.fixtures.docs import run_documented, sh_commands
from tests.fixtures.postgres import LedgerDatabase
from tests.fixtures.waiting import eventually

README = REPO / "README.md"


def minds(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "minds.cli.main", *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=420,
        check=False,
    )


def test_demo_on_an_existing_cluster_and_postgres(
    world: Cluster,
    e2e_ledger_database: LedgerDatabase,
    e2e_database_url: str,
    e2e_ledger: Ledger,
    tmp_path: Path,
) -> None:
    env = {
        **os.environ,
        "KUBECONFIG": str(world.kubeconfig),
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
        assert f"export KUBECONFIG={world.kubeconfig}" in env_file

        table = world.kubectl("get", "minds", "-n", "default").stdout
        assert "atlas-keeper" in table
        assert "True" in table
        assert e2e_ledger.events(namespace="default", mind="atlas-keeper", type="mind_registered")
        _the_story_goes_on_as_the_readme_says(world, out, state, env)
        # What the controller wrote, as the application role, is chained and intact.
        verified = minds("db", "verify", env=env)
        assert verified.returncode == 0, verified.stdout
        assert "ledger intact" in verified.stdout
        # The demo's controller seals with the stack's key (docs/ledger.md#the-key).
        assert (state / "ledger-keys" / "k1").exists()
        assert re.search(
            r"^chain events default/atlas-keeper: \d+ rows, [1-9]\d* sealed, sealed from row",
            verified.stdout,
            re.MULTILINE,
        ), verified.stdout
        # While the demo's controller still runs, so its finalizer is released.
        world.kubectl("delete", "mind", "atlas-keeper", "-n", "default", "--timeout=60s")
        world.kubectl("delete", "deployment", "atlas-worker", "-n", "default")
    finally:
        down = minds("dev", "down", "--state-dir", str(state), env=env)
    assert down.returncode == 0, down.stderr
    assert "controller" in down.stdout


def _the_story_goes_on_as_the_readme_says(
    world: Cluster, out: str, state: Path, env: dict[str, str]
) -> None:
    """The demo stopped where the mind asks; the README's commands take it from there."""
    assert 'deployment "atlas-worker" successfully rolled out' in out
    assert "CrashLoopBackOff" in out
    asked = re.search(r"Plan (\S+) waits at step (P\d+) for approval (\S+)\.", out)
    assert asked, out
    plan, step, approval = asked.groups()
    assert f"kubectl minds approve {approval} --context approver" in out
    assert f"kubectl patch approval {approval} --context approver --type=merge" in out

    commands = sh_commands(README, section="Two commands")
    start = commands.index("source .dev/env")
    story = commands[start + 1 : start + 5]
    assert story[0].startswith("kubectl minds approve"), story
    # PATH is extended by the shell that sources the file; run_documented puts the same bin
    # first on PATH itself.
    exported = dict(
        line.removeprefix("export ").split("=", 1)
        for line in (state / "env").read_text().splitlines()
        if not line.startswith("export PATH=")
    )
    substitutions = {"<approval>": approval, "<plan>": plan}
    run_documented(story[:2], substitutions, exported, state)

    def completed() -> bool:
        obj = world.api.get("plan", plan, "default")
        return bool(obj.get("status", {}).get("phase") == "completed")

    eventually(completed, timeout=150, what=f"plan {plan} completed")
    outputs = run_documented(story[2:], substitutions, exported, state)
    assert plan in outputs["kubectl get plans"]
    why = outputs[f"kubectl minds why plan/<plan> {step}"]
    assert why.startswith(f"Step {plan}/{step}"), why
    assert "approval" in why
    pods = json.loads(
        world.kubectl("get", "pods", "-n", "default", "-l", "app=atlas-worker", "-o", "json").stdout
    )["items"]
    assert pods
    assert all("minds.dev/fault" not in p["metadata"]["labels"] for p in pods)

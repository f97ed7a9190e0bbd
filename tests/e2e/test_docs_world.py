"""Every command of docs/world.md, run as written against a devcluster whose world runs, with
what the page says each one does checked between the sections."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

from tests.e2e.world_support import (
    all_pods,
    broken_again,
    crash_looping,
    never_ready,
    ready,
    rollout_fails,
)
from tests.fixtures.cluster import REPO, Cluster
from tests.fixtures.docs import kubeconfig_in, run_documented, sh_commands
from tests.fixtures.waiting import eventually

DOC = REPO / "docs" / "world.md"


def test_every_command_of_the_world_page_does_what_it_says(
    world: Cluster, world_namespace: str, tmp_path: Path
) -> None:
    kubeconfig = kubeconfig_in(world.kubeconfig, world_namespace, "admin", tmp_path / "kc")
    env = {"KUBECONFIG": str(kubeconfig)}

    def run(commands: list[str]) -> dict[str, str]:
        return run_documented(commands, {}, env, tmp_path)

    rolled = run(sh_commands(DOC, section="Roll out"))
    listing = rolled["kubectl get replicasets,pods -l app=atlas-worker -o wide"]
    assert "kwok-node-" in listing
    assert "replicaset.apps/atlas-worker-" in listing
    all_pods(world, world_namespace, ready)

    on_pods, on_template = _blocks(sh_commands(DOC, section="Break it"))
    run(on_pods)
    crashing = all_pods(world, world_namespace, crash_looping)
    # kubectl refuses a second `rollout restart` in the second of the last one (its annotation
    # has a second's resolution); a person typing is slower than that, a test may not be.
    eventually(
        lambda: restarted_before_this_second(world, world_namespace),
        what="a new second since the last restart",
    )
    shown = run(on_template)["kubectl get deployment atlas-worker"]
    assert "atlas-worker" in shown
    template_broken = broken_again(world, world_namespace, never_ready, crashing)
    assert all(p["metadata"]["labels"]["minds.dev/fault"] == "never-ready" for p in template_broken)
    assert rollout_fails(world, world_namespace)

    run(sh_commands(DOC, section="Heal it"))
    healed = all_pods(world, world_namespace, ready)
    assert all("minds.dev/fault" not in p["metadata"]["labels"] for p in healed)


def restarted_before_this_second(world: Cluster, namespace: str) -> bool:
    body = json.loads(
        world.kubectl("get", "deployment", "atlas-worker", "-n", namespace, "-o", "json").stdout
    )
    annotations = body["spec"]["template"]["metadata"].get("annotations") or {}
    at = annotations.get("kubectl.kubernetes.io/restartedAt")
    now = datetime.now(UTC).replace(microsecond=0)
    return at is None or datetime.fromisoformat(at.replace("Z", "+00:00")) < now


def _blocks(commands: list[str]) -> tuple[list[str], list[str]]:
    """The section's two blocks: the label on running pods, then the label on the template."""
    split = next(i for i, c in enumerate(commands) if c.startswith("kubectl patch"))
    return commands[:split], commands[split:]

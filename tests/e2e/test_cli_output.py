"""``-o`` on the commands that read a mind (``why``, ``timeline``, ``plan show``): ``json`` and
``yaml`` are the same document, ``text`` is for people; docs/cli.md's examples run as written.

The session's controller judges a plan a person applied and records the Mind, then pauses: the
ledger holds still, so two reads of it can be compared exactly.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from minds.devenv.controller import ControllerHandle
from minds.devenv.install import manage_namespace
from tests.e2e.executor_support import minds_cli
from tests.fixtures.cluster import REPO, Cluster, paused, with_namespace
from tests.fixtures.docs import kubeconfig_in, run_documented, sh_commands
from tests.fixtures.waiting import eventually

pytestmark = pytest.mark.minutes(1)

DOC = REPO / "docs" / "cli.md"
MIND = "atlas-keeper"
PLAN = "restart-atlas-worker"
#: What each command reads, as its data is printed.
READS: dict[str, tuple[str, ...]] = {
    "why": ("why", f"plan/{PLAN}"),
    "timeline": ("timeline", MIND),
    "plan show": ("plan", "show", PLAN),
}
READ: dict[str, Callable[[str], Any]] = {"json": json.loads, "yaml": yaml.safe_load}


@pytest.fixture(scope="module")
def judged(
    cluster: Cluster, e2e_database_url: str, session_controller: ControllerHandle
) -> Iterator[str]:
    """A namespace with the example Mind and a person's plan that the controller judged."""
    namespace = f"t-{uuid.uuid4().hex[:10]}"
    cluster.kubectl("create", "namespace", namespace)
    manage_namespace(cluster.kubeconfig, namespace)
    for example in ("mind.yaml", "plan.yaml"):
        manifest = with_namespace(REPO / "examples" / example, namespace)
        cluster.kubectl("apply", "-n", namespace, "-f", "-", input_=manifest)

    def recorded() -> list[Any] | None:
        done = minds_cli(cluster, e2e_database_url, "timeline", MIND, "-n", namespace, "-o", "json")
        assert done.returncode == 0, done.stderr
        whats = [item["what"] for item in json.loads(done.stdout)]
        return whats if "plan_validated" in whats else None

    eventually(recorded, timeout=60, what="the plan judged in the ledger")
    with paused(session_controller, cluster, e2e_database_url):
        yield namespace
    cluster.kubectl("delete", "namespace", namespace, "--wait=false", check=False)


@pytest.mark.parametrize("command", READS, ids=READS.keys())
def test_json_and_yaml_are_one_document_and_text_is_neither(
    cluster: Cluster, judged: str, e2e_database_url: str, command: str
) -> None:
    printed: dict[str, str] = {}
    for output in ("text", "json", "yaml"):
        done = minds_cli(cluster, e2e_database_url, *READS[command], "-n", judged, "-o", output)
        assert done.returncode == 0, done.stderr
        printed[output] = done.stdout
    document = json.loads(printed["json"])
    assert document
    assert yaml.safe_load(printed["yaml"]) == document
    assert not printed["yaml"].lstrip().startswith(("{", "["))
    with pytest.raises(json.JSONDecodeError):
        json.loads(printed["text"])
    assert printed["text"] != printed["yaml"]


def test_the_docs_output_examples_run_as_written(
    cluster: Cluster, judged: str, e2e_database_url: str, tmp_path: Path
) -> None:
    kubeconfig = kubeconfig_in(cluster.kubeconfig, judged, "admin", tmp_path / "kubeconfig")
    env = {"KUBECONFIG": str(kubeconfig), "MINDS_DATABASE_URL": e2e_database_url}
    commands = sh_commands(DOC, section="Output")
    out = run_documented(commands, {"<plan>": PLAN, "<mind>": MIND}, env, REPO)
    [why, timeline] = commands
    assert READ["yaml"](out[why])[0]["name"] == PLAN
    assert "plan_validated" in [item["what"] for item in READ["json"](out[timeline])]

"""Sharded controllers against the real control plane: two shards, each serving its own
namespace, one of them with two replicas of which exactly one acts (kopf peering).

The session controller (cluster-wide, unsharded) is paused for these tests: the controllers
started here are the only ones acting.
"""

from __future__ import annotations

import json
import re
import shlex
import signal
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from kubernetes.client import CustomObjectsApi
from kubernetes.client.exceptions import ApiException

from minds.adapters.kube.client import api_client
from minds.adapters.ledger import Ledger
from minds.devenv import process
from minds.devenv.controller import ControllerHandle
from minds.domain.sharding import (
    NAMESPACES_ANNOTATION,
    PEERING_GROUP,
    PEERING_PLURAL,
    PEERING_VERSION,
)
from tests.e2e.executor_support import (
    apply,
    assert_no_tracebacks,
    deployment,
    executions_by_step,
    mind,
    operator_plan,
    plan_status,
    read_step,
    run_as,
    wait_phase,
)
from tests.fixtures.cluster import REPO, Cluster, ControllerFactory
from tests.fixtures.docs import kubeconfig_in, sh_commands
from tests.fixtures.waiting import eventually

pytestmark = pytest.mark.minutes(1)

#: Short, so that a standby's takeover after a crash is quick to see; the default is 60 s.
LIFETIME = 10
#: kopf's own words when a replica starts acting. A replica of a shard starts paused and
#: stays so, silently, while a peer with a higher priority (one that started earlier) lives.
RESUMING = "Resuming operations after the pause"
#: What kopf logs, with ``--verbose``, for every object it handles (a replica that stands by
#: logs none of it).
HANDLED = re.compile(r"^(Handler|Daemon|Timer) '", re.MULTILINE)

Declare = Callable[[str, str], str]


@pytest.fixture
def declare(cluster: Cluster) -> Iterator[Declare]:
    """Declare a shard as a cluster admin does: a ClusterKopfPeering named after it whose
    annotation lists its namespaces. Deleted afterwards (they are cluster-scoped)."""
    made: list[str] = []

    def shard(prefix: str, namespaces: str) -> str:
        name = f"{prefix}-{uuid.uuid4().hex[:8]}"
        obj = {
            "apiVersion": "kopf.dev/v1",
            "kind": "ClusterKopfPeering",
            "metadata": {"name": name, "annotations": {NAMESPACES_ANNOTATION: namespaces}},
        }
        cluster.kubectl("apply", "-f", "-", input_=json.dumps(obj))
        made.append(name)
        return name

    yield shard
    for name in made:
        cluster.kubectl("delete", "clusterkopfpeering", name, "--wait=false", check=False)


def replica(factory: ControllerFactory, shard: str, name: str) -> ControllerHandle:
    """A replica of ``shard``; POD_ID names it in the peering object, as the chart does.
    Verbose, so that its log names every object it handled."""
    return factory(
        name,
        extra_env={"POD_ID": name},
        args=("--shard", shard, "--peering-lifetime", str(LIFETIME), "--verbose"),
    )


def peers(cluster: Cluster, shard: str) -> dict[str, Any]:
    return dict(cluster.api.get("clusterkopfpeering", shard).get("status") or {})


def logged(handle: ControllerHandle, words: str, timeout: float = 60) -> None:
    eventually(lambda: words in handle.log(), timeout=timeout, what=f"{words!r} logged")


def reads(namespace: str, n: int) -> list[dict[str, Any]]:
    return [read_step(f"D{i}", namespace) for i in range(1, n + 1)]


def assert_each_step_ran_once(ledger: Ledger, namespace: str, expected: int) -> None:
    ran = executions_by_step(ledger, namespace)
    assert len(ran) == expected
    for (uid, key), rows in ran.items():
        assert [r.origin.attempt for r in rows] == [1], (uid, key)
    assert len(ledger.events(namespace=namespace, type="plan_step_started")) == expected


@pytest.mark.usefixtures("alone")
def test_two_shards_act_only_on_their_namespaces_and_one_replica_of_a_shard_acts(
    cluster: Cluster,
    namespace: str,
    other_namespace: str,
    e2e_ledger: Ledger,
    controller_factory: ControllerFactory,
    declare: Declare,
) -> None:
    """Each check of "left alone" is causal, not timed: the untouched plan is applied before
    the one that completes, so a controller watching both would have admitted it first."""
    shard_a = declare("a", namespace)
    shard_b = declare("b", other_namespace)
    for ns in (namespace, other_namespace):
        mind(cluster, ns)
        deployment(cluster, ns)

    first = replica(controller_factory, shard_a, "a-first")
    logged(first, RESUMING)
    standby = replica(controller_factory, shard_a, "a-standby")
    eventually(lambda: "a-standby" in peers(cluster, shard_a), what="a-standby announced")
    assert "a-first" in peers(cluster, shard_a)

    # Shard a serves its namespace only, and only the replica that started first acts.
    apply(cluster, operator_plan(other_namespace, "theirs", reads(other_namespace, 3)))
    apply(cluster, operator_plan(namespace, "ours", reads(namespace, 3)))
    assert wait_phase(cluster, namespace, "ours", "completed")["progress"] == "3/3"
    assert plan_status(cluster, other_namespace, "theirs") == {}
    assert HANDLED.search(first.log())
    assert not HANDLED.search(standby.log()), standby.log()
    assert RESUMING not in standby.log()

    # The acting replica dies without a word: the standby takes over once its record expires.
    process.stop(first.pid_file, sig=signal.SIGKILL)
    logged(standby, RESUMING, timeout=3 * LIFETIME + 30)
    apply(cluster, operator_plan(namespace, "after", reads(namespace, 2)))
    assert wait_phase(cluster, namespace, "after", "completed")["progress"] == "2/2"
    assert plan_status(cluster, other_namespace, "theirs") == {}
    assert_no_tracebacks(standby.log())

    # Shard b serves its namespace only; a namespace no running shard serves is left alone.
    process.stop(standby.pid_file)
    apply(cluster, operator_plan(namespace, "unserved", reads(namespace, 1)))
    only_b = replica(controller_factory, shard_b, "b-only")
    apply(cluster, operator_plan(other_namespace, "later", reads(other_namespace, 2)))
    for name, progress in (("theirs", "3/3"), ("later", "2/2")):
        assert wait_phase(cluster, other_namespace, name, "completed")["progress"] == progress
    assert plan_status(cluster, namespace, "unserved") == {}
    assert_no_tracebacks(only_b.log())

    assert_each_step_ran_once(e2e_ledger, namespace, 5)
    assert_each_step_ran_once(e2e_ledger, other_namespace, 5)


def test_a_shard_sharing_a_namespace_with_another_is_refused(
    cluster: Cluster,
    namespace: str,
    other_namespace: str,
    controller_factory: ControllerFactory,
    declare: Declare,
) -> None:
    """Both shards refuse to start once the overlap is declared, whichever was first."""
    first = declare("first", namespace)
    second = declare("second", f"{other_namespace},{namespace}")
    for shard, other in ((first, second), (second, first)):
        handle = controller_factory(shard, args=("--shard", shard), wait=False)
        eventually(lambda h=handle: not h.alive(), what=f"{shard} refused to start")  # type: ignore[misc]
        assert f"shard {shard!r} overlaps shard {other!r} on namespace(s) {namespace}" in (
            handle.log()
        )


def test_a_shard_nobody_declared_is_refused(
    cluster: Cluster, controller_factory: ControllerFactory
) -> None:
    handle = controller_factory("undeclared", args=("--shard", "nobody-declared"), wait=False)
    eventually(lambda: not handle.alive(), what="the undeclared shard refused to start")
    assert "no ClusterKopfPeering named 'nobody-declared'" in handle.log()


EXECUTION_DOC = REPO / "docs" / "execution.md"
DOC_SHARDS = {"team-a": "payments,checkout", "team-b": "search"}


def test_every_command_of_scaling_out_works(
    cluster: Cluster, controller_factory: ControllerFactory, tmp_path: Path
) -> None:
    """docs/execution.md, Scaling out, as written: the example's shards, listed; a controller
    for team-a started twice (two replicas, the doc's "each with the same command"); their
    liveness records; and the one that started first striking its record when it stops."""
    admin = kubeconfig_in(cluster.kubeconfig, "default", "admin", tmp_path / "admin.kubeconfig")

    def run(command: str) -> str:
        proc = run_as(admin, command)
        assert proc.returncode == 0, f"{command}\n{proc.stdout}\n{proc.stderr}"
        return proc.stdout

    def alive(command: str, count: int) -> dict[str, Any]:
        def probe() -> dict[str, Any] | None:
            records = json.loads(run(command) or "{}")
            return records if len(records) == count else None

        return eventually(probe, what=f"{count} replica(s) announced")

    outputs: dict[str, str] = {}
    replicas: list[ControllerHandle] = []
    try:
        for command in sh_commands(EXECUTION_DOC, section="Scaling out"):
            if command.startswith("minds controller run"):
                args = tuple(shlex.split(command)[3:])
                for name in ("doc-1", "doc-2"):
                    replicas.append(controller_factory(name, args=args))
                    count = len(replicas)
                    eventually(lambda n=count: len(peers(cluster, "team-a")) == n)  # type: ignore[misc]
            elif "jsonpath={.status}" in command:
                outputs[command] = json.dumps(alive(command, len(replicas)))
            else:
                outputs[command] = run(command)

        rows = [line.split() for line in outputs["kubectl get clusterkopfpeerings"].splitlines()]
        assert rows[0][:2] == ["NAME", "NAMESPACES"]
        for shard, namespaces in DOC_SHARDS.items():
            assert [shard, namespaces] in [row[:2] for row in rows]
        [status_command] = [c for c in outputs if "jsonpath={.status}" in c]
        first_records = json.loads(outputs[status_command])
        assert len(first_records) == 2

        first, second = replicas
        logged(first, RESUMING)
        assert RESUMING not in second.log()
        process.stop(first.pid_file)
        left = alive(status_command, 1)
        assert set(left) < set(first_records)
        logged(second, RESUMING)
        assert_no_tracebacks(second.log())
    finally:
        cluster.kubectl("delete", "clusterkopfpeering", *DOC_SHARDS, check=False)


def test_only_a_cluster_admin_decides_which_namespaces_a_shard_serves(
    cluster: Cluster, namespace: str, other_namespace: str, declare: Declare
) -> None:
    """The controller's token writes liveness records (the status subresource) and nothing
    else of a peering object: not the annotation, not through status, not by deleting and
    re-creating it. People with the minds roles cannot write it at all. Requests go straight
    to the API (kubectl would GET first, and fail on that instead of on the write)."""
    shard = declare("fenced", namespace)
    grab = {"metadata": {"annotations": {NAMESPACES_ANNOTATION: other_namespace}}}
    record = {"status": {"forged": {"priority": 1, "lifetime": 60}}}
    group = (PEERING_GROUP, PEERING_VERSION, PEERING_PLURAL)

    def writes(api: CustomObjectsApi) -> dict[str, Callable[[], object]]:
        body = {"apiVersion": "kopf.dev/v1", "kind": "ClusterKopfPeering", **grab}
        body["metadata"] = {**body["metadata"], "name": f"{shard}-x"}
        return {
            "annotate": lambda: api.patch_cluster_custom_object(*group, shard, grab),
            "delete": lambda: api.delete_cluster_custom_object(*group, shard),
            "create": lambda: api.create_cluster_custom_object(*group, body),
            "status": lambda: api.patch_cluster_custom_object_status(*group, shard, record),
        }

    def refused(write: Callable[[], object]) -> bool:
        try:
            write()
        except ApiException as exc:
            return exc.status == 403
        return False

    controller_api = CustomObjectsApi(api_client(str(cluster.controller_kubeconfig)))
    controller = writes(controller_api)
    controller["status"]()
    assert "forged" in peers(cluster, shard)
    for what in ("annotate", "delete", "create"):
        assert refused(controller[what]), what
    # Through the status subresource, the API server keeps everything but the status.
    controller_api.patch_cluster_custom_object_status(*group, shard, {**grab, **record})
    obj = json.loads(cluster.kubectl("get", "clusterkopfpeering", shard, "-o", "json").stdout)
    assert obj["metadata"]["annotations"][NAMESPACES_ANNOTATION] == namespace

    for person in ("viewer", "approver"):
        theirs = writes(CustomObjectsApi(api_client(str(cluster.kubeconfig), person)))
        for what, write in theirs.items():
            assert refused(write), (person, what)

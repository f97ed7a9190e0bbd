"""The goals' workload watches against the real API server, under the controller's own token:
a namespace the minds manage is listed and watched (across the server ending the watch), one
nobody handed to them is refused and tried again without harm, and a watch no goal needs any
more stops and says so."""

from __future__ import annotations

import logging
import threading
import time
import uuid
from collections.abc import Iterator, Mapping

import pytest

from minds.adapters.kube.client import api_client
from minds.adapters.kube.workload_watch import WorkloadBodies, WorkloadWatches
from tests.e2e.executor_support import deployment, set_health
from tests.fixtures.cluster import Cluster
from tests.fixtures.waiting import eventually

NAME = "atlas-worker"


class Heard:
    """What the watches told, in order."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.told: list[tuple[str, ...]] = []

    def seen(self, plural: str, namespace: str, body: Mapping[str, object], *, first: bool) -> None:
        meta = body["metadata"]
        assert isinstance(meta, Mapping)
        status = body.get("status")
        ready = str(status.get("readyReplicas")) if isinstance(status, Mapping) else "None"
        with self._lock:
            self.told.append(("seen", plural, namespace, str(meta["name"]), str(first), ready))

    def gone(self, plural: str, namespace: str, name: str) -> None:
        with self._lock:
            self.told.append(("gone", plural, namespace, name))

    def forget(self, plural: str, namespace: str) -> None:
        with self._lock:
            self.told.append(("forget", plural, namespace))

    def has(self, *entry: str) -> bool:
        with self._lock:
            return entry in self.told


@pytest.fixture
def heard() -> Heard:
    return Heard()


@pytest.fixture
def watches(cluster: Cluster, heard: Heard) -> Iterator[WorkloadWatches]:
    # The server ends each watch after a second: the test also sees the watch taken up again.
    found = WorkloadWatches(
        api_client(str(cluster.controller_kubeconfig)), heard, watch_seconds=1, retry_seconds=0.5
    )
    yield found
    found.close()


def test_a_managed_namespace_is_listed_then_watched_until_the_goal_goes(
    cluster: Cluster, namespace: str, watches: WorkloadWatches, heard: Heard
) -> None:
    deployment(cluster, namespace)
    watches.follow({(namespace, "deployments")})
    started = time.monotonic()
    eventually(
        lambda: heard.has("seen", "deployments", namespace, NAME, "True", "None"),
        what="the first listing",
    )

    def heard_after_the_first_request_ended() -> bool:
        # The condition is the time itself: the server ends the first watch after a second,
        # and a change made after that is heard only if the watch was taken up again.
        if time.monotonic() - started < 1.5:
            return False
        set_health(cluster, namespace, healthy=True)
        return heard.has("seen", "deployments", namespace, NAME, "False", "1")

    eventually(heard_after_the_first_request_ended, what="a status change, watched")
    first = [t for t in heard.told if t[:5] == ("seen", "deployments", namespace, NAME, "True")]
    assert len(first) == 1  # the watch taken up again is no new first listing

    cluster.kubectl("delete", "deployment", NAME, "-n", namespace)
    eventually(lambda: heard.has("gone", "deployments", namespace, NAME), what="the deletion")

    watches.follow(())
    assert heard.has("forget", "deployments", namespace)
    assert watches.following() == set()


def test_a_namespace_nobody_handed_to_the_minds_is_refused_without_harm(
    cluster: Cluster,
    namespace: str,
    watches: WorkloadWatches,
    heard: Heard,
    caplog: pytest.LogCaptureFixture,
) -> None:
    unmanaged = f"t-{uuid.uuid4().hex[:10]}"
    cluster.kubectl("create", "namespace", unmanaged)
    try:
        deployment(cluster, unmanaged)
        deployment(cluster, namespace)
        with caplog.at_level(logging.WARNING, logger="minds.adapters.kube.workload_watch"):
            watches.follow({(unmanaged, "deployments"), (namespace, "deployments")})
            eventually(
                lambda: f"watching deployments in {unmanaged}: 403" in caplog.text,
                what="the refusal, logged",
            )
        eventually(
            lambda: heard.has("seen", "deployments", namespace, NAME, "True", "None"),
            what="the managed namespace listed all the same",
        )
        assert not any(entry[2] == unmanaged for entry in heard.told)
        # Still followed: a binding made later is taken up at the next try.
        assert watches.following() == {(unmanaged, "deployments"), (namespace, "deployments")}
    finally:
        cluster.kubectl("delete", "namespace", unmanaged, "--wait=false", check=False)


def test_the_last_body_of_each_watched_workload_is_kept_without_its_managed_fields(
    cluster: Cluster, namespace: str, heard: Heard
) -> None:
    """What a restart reads instead of a GET: the watch's latest body, while the goals'
    listener still hears every change, and nothing once the workload is gone."""
    bodies = WorkloadBodies()
    bodies.attach(heard)
    watches = WorkloadWatches(
        api_client(str(cluster.controller_kubeconfig)), bodies, watch_seconds=1, retry_seconds=0.5
    )
    try:
        deployment(cluster, namespace)
        watches.follow({(namespace, "deployments")})
        set_health(cluster, namespace, True)
        current = cluster.api.get("deployment", NAME, namespace)

        def caught_up() -> dict[str, object] | None:
            body = bodies.get("deployments", namespace, NAME)
            version = (body or {}).get("metadata", {}).get("resourceVersion")  # type: ignore[union-attr]
            return body if version == current["metadata"]["resourceVersion"] else None

        body = eventually(caught_up, what="the watch's body at the server's version")
        assert "managedFields" not in body["metadata"]  # type: ignore[operator]
        assert current["metadata"].get("managedFields")  # the server has them: they were dropped
        assert heard.has("seen", "deployments", namespace, NAME, "False", "1")
        cluster.kubectl("delete", "deployment", NAME, "-n", namespace)
        eventually(
            lambda: bodies.get("deployments", namespace, NAME) is None, what="the body forgotten"
        )
        assert heard.has("gone", "deployments", namespace, NAME)
    finally:
        watches.close()

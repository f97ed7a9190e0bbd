"""The controller's reads come from the watch; its writes go to the API server, conditionally.

Against the real API server: a stale body never overwrites newer state (409), and the one
re-read a 409 buys corrects the store; an object deleted behind the store's back is forgotten
at the first write that finds it gone.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from minds.adapters.kube.client import KubeResources, api_client
from minds.adapters.kube.watched import WatchedResources, WatchStore
from minds.devenv.install import CONTROLLER_ACCOUNT, CONTROLLER_NAMESPACE, repo_root
from minds.domain.errors import Conflict, NotFound
from minds.domain.resources.kinds import PLAN
from tests.fixtures.cluster import Cluster

# These tests write Plans as a controller would; the session controller must not meanwhile.
pytestmark = pytest.mark.usefixtures("no_controller_in_module")

# A plan that stays a draft once admitted.
INVALID_PLAN = repo_root() / "examples" / "plan-invalid.yaml"


@pytest.fixture
def api(cluster: Cluster) -> KubeResources:
    return KubeResources(api_client(str(cluster.controller_kubeconfig)))


def _plan(name: str) -> dict[str, Any]:
    doc = yaml.safe_load(Path(INVALID_PLAN).read_text())
    # Written here with the controller's token: the author admission checks is the controller.
    author = f"system:serviceaccount:{CONTROLLER_NAMESPACE}:{CONTROLLER_ACCOUNT}"
    return {"metadata": {"name": name}, "spec": {**doc["spec"], "author": author}}


def _version(body: dict[str, Any]) -> int:
    return int(body["metadata"]["resourceVersion"])


def test_reads_after_our_own_create_and_write_come_from_the_store(
    api: KubeResources, namespace: str
) -> None:
    store = WatchStore([PLAN.plural])
    resources = WatchedResources(store, api)
    created = resources.create(PLAN, namespace, _plan("mine"))
    assert resources.get(PLAN, namespace, "mine")["metadata"]["uid"] == created["metadata"]["uid"]
    written = resources.replace_status(PLAN, created, {"reason": "ours"})
    held = resources.get(PLAN, namespace, "mine")
    assert held["metadata"]["resourceVersion"] == written["metadata"]["resourceVersion"]
    assert [b["metadata"]["name"] for b in resources.list(PLAN, namespace)] == ["mine"]


def test_a_stale_body_is_refused_and_the_store_corrected(
    api: KubeResources, namespace: str
) -> None:
    store = WatchStore([PLAN.plural])
    resources = WatchedResources(store, api)
    stale = resources.create(PLAN, namespace, _plan("raced"))
    # Someone else writes first, behind the store's back (the watch has not delivered it).
    theirs = api.replace_status(PLAN, stale, {"reason": "theirs"})

    with pytest.raises(Conflict):
        resources.replace_status(PLAN, stale, {"reason": "ours, from a stale body"})

    assert api.get(PLAN, namespace, "raced")["status"]["reason"] == "theirs"
    fresh = resources.get(PLAN, namespace, "raced")
    assert _version(fresh) >= _version(theirs)
    # The caller's retry, from what the store now holds, goes through.
    resources.replace_status(PLAN, fresh, {"reason": "ours, recomputed"})
    assert api.get(PLAN, namespace, "raced")["status"]["reason"] == "ours, recomputed"


def test_an_object_deleted_behind_the_stores_back_is_forgotten_at_the_next_write(
    api: KubeResources, cluster: Cluster, namespace: str
) -> None:
    store = WatchStore([PLAN.plural])
    resources = WatchedResources(store, api)
    held = resources.create(PLAN, namespace, _plan("gone"))
    cluster.kubectl("-n", namespace, "delete", "plan", "gone", "--wait=true")

    with pytest.raises(NotFound):
        resources.replace_status(PLAN, held, {"reason": "too late"})
    with pytest.raises(NotFound):
        resources.get(PLAN, namespace, "gone")


def test_kinds_the_controller_does_not_watch_are_read_from_the_api_server(
    api: KubeResources, namespace: str
) -> None:
    resources = WatchedResources(WatchStore([]), api)  # nothing watched
    api.create(PLAN, namespace, _plan("direct"))
    assert resources.get(PLAN, namespace, "direct")["metadata"]["name"] == "direct"

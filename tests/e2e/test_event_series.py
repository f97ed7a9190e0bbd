"""A repeated Event is one Event with a count, as the API server stores it and `kubectl
describe` shows it; a repeat whose Event is gone starts a new one."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from typing import Any

from minds.adapters.kube.client import KubeEvents, api_client
from tests.fixtures.cluster import Cluster

T0 = datetime(2026, 12, 6, 9, 0, tzinfo=UTC)


class Clock:
    def __init__(self) -> None:
        self.now = T0

    def __call__(self) -> datetime:
        return self.now


def configmap(cluster: Cluster, namespace: str, name: str) -> dict[str, Any]:
    cluster.kubectl("create", "configmap", name, "-n", namespace)
    return dict(cluster.api.get("configmap", name, namespace))


def events_of(cluster: Cluster, namespace: str, uid: str) -> list[dict[str, Any]]:
    listed = json.loads(
        cluster.kubectl(
            "get",
            "events",
            "-n",
            namespace,
            "--field-selector",
            f"involvedObject.uid={uid}",
            "-o",
            "json",
        ).stdout
    )
    return sorted(listed["items"], key=lambda e: (e["reason"], e["message"]))


def test_a_repeated_event_is_counted_on_the_first(cluster: Cluster, namespace: str) -> None:
    body = configmap(cluster, namespace, "atlas")
    clock = Clock()
    events = KubeEvents(api_client(str(cluster.controller_kubeconfig)), clock=clock)

    for minutes in (0, 3, 7):
        clock.now = T0 + timedelta(minutes=minutes)
        events.post(body, type_="Warning", reason="StepBlocked", message="P1: blocked")
    events.post(body, type_="Warning", reason="StepBlocked", message="P2: blocked")

    [first, other] = events_of(cluster, namespace, body["metadata"]["uid"])
    assert (first["message"], first["count"]) == ("P1: blocked", 3)
    assert first["firstTimestamp"] == "2026-12-06T09:00:00Z"
    assert first["lastTimestamp"] == "2026-12-06T09:07:00Z"
    assert (other["message"], other["count"]) == ("P2: blocked", 1)
    described = cluster.kubectl("describe", "configmap", "atlas", "-n", namespace).stdout
    assert "(x3 over" in described


def test_a_repeat_of_an_event_gone_posts_a_new_one(cluster: Cluster, namespace: str) -> None:
    body = configmap(cluster, namespace, "gone")
    events = KubeEvents(api_client(str(cluster.controller_kubeconfig)), clock=Clock())
    uid = body["metadata"]["uid"]
    events.post(body, type_="Normal", reason="Released", message="P1 released by alice")
    [posted] = events_of(cluster, namespace, uid)
    cluster.kubectl("delete", "event", posted["metadata"]["name"], "-n", namespace)

    events.post(body, type_="Normal", reason="Released", message="P1 released by alice")

    [again] = events_of(cluster, namespace, uid)
    assert again["metadata"]["name"] != posted["metadata"]["name"]
    assert again["count"] == 1

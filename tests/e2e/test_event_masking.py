"""Kubernetes Events the controller posts carry masked messages, as the API server stores them."""

from __future__ import annotations

from minds.adapters.kube.client import KubeEvents, api_client
from tests.fixtures.cluster import Cluster


def test_an_event_message_is_masked_before_it_reaches_the_api_server(
    cluster: Cluster, namespace: str
) -> None:
    cluster.kubectl("create", "configmap", "atlas", "-n", namespace)
    body = cluster.api.get("configmap", "atlas", namespace)
    events = KubeEvents(api_client(str(cluster.controller_kubeconfig)))

    events.post(
        body,
        type_="Warning",
        reason="Failed",
        message=(
            "restart failed: connect postgres://app:hunter2@db:5432/app refused; "
            "told alice@example.com, token=ghp_0123456789abcdefghijABCDEFGHIJ012345"
        ),
    )

    listed = cluster.api.list("events", namespace)
    [message] = [item["message"] for item in listed["items"] if item["reason"] == "Failed"]
    assert message == (
        "restart failed: connect postgres://app:[secret]@db:5432/app refused; "
        "told [email], token=[token]"
    )

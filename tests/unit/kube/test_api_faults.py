"""The injected API faults (minds.adapters.kube.faults): parsed strictly, each spent once."""

from __future__ import annotations

from typing import Any

import pytest
from kubernetes import client
from kubernetes.client.exceptions import ApiException

from minds.adapters.kube.faults import Fault, inject, parse


def test_faults_are_parsed_and_a_malformed_one_is_refused_by_name() -> None:
    assert parse("") == []
    assert parse("put:/plans/:500:2, PATCH:/deployments/:429:1") == [
        Fault("PUT", "/plans/", 500, 2),
        Fault("PATCH", "/deployments/", 429, 1),
    ]
    with pytest.raises(ValueError, match="'PUT:/plans/:500' is not METHOD:PATH-PART"):
        parse("PUT:/plans/:500")


def test_each_fault_fails_its_count_of_matching_requests_then_lets_them_through() -> None:
    api = client.ApiClient(client.Configuration())
    through: list[tuple[str, str]] = []

    def reached(method: str, url: str, *args: Any, **kwargs: Any) -> str:
        through.append((method, url))
        return "answered"

    api.rest_client.request = reached  # type: ignore[method-assign]
    inject(api, parse("PUT:/plans/:500:2"))
    plans = "https://api/apis/minds.dev/v1alpha1/namespaces/a/plans/p/status"
    assert api.rest_client.request("GET", plans) == "answered"  # another method
    for _ in range(2):
        with pytest.raises(ApiException) as raised:
            api.rest_client.request("PUT", plans)
        assert raised.value.status == 500
    assert api.rest_client.request("PUT", plans) == "answered"
    assert through == [("GET", plans), ("PUT", plans)]

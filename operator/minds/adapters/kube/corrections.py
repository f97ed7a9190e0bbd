"""What a person writes to correct a mind, through the same API server path as ``kubectl
patch``: the admission policies judge it the same way (the name must be the requester's own)."""

from __future__ import annotations

from typing import Any, cast

from kubernetes import client
from kubernetes.client.exceptions import ApiException

from minds.adapters.kube.client import server_message
from minds.adapters.kube.people import DecisionRefused
from minds.domain.resources.kinds import MIND, PLAN, Kind


def _patch(
    api: client.ApiClient,
    kind: Kind,
    namespace: str,
    name: str,
    body: dict[str, Any] | list[dict[str, Any]],
    content_type: str = "application/merge-patch+json",
) -> dict[str, Any]:
    objects = client.CustomObjectsApi(api)
    try:
        patched = objects.patch_namespaced_custom_object(
            kind.group, kind.version, namespace, kind.plural, name, body,
            _content_type=content_type,
        )  # fmt: skip
    except ApiException as exc:
        if exc.status == 404:
            raise DecisionRefused(f"{kind.singular} {namespace}/{name} not found") from exc
        raise DecisionRefused(server_message(exc)) from exc
    return cast(dict[str, Any], patched)


def cancel_plan(
    api: client.ApiClient, namespace: str, name: str, by: str, reason: str
) -> dict[str, Any]:
    """``kubectl patch plan NAME --type=merge -p '{"spec":{"cancellation":{...}}}'``."""
    body = {"spec": {"cancellation": {"by": by, "reason": reason}}}
    return _patch(api, PLAN, namespace, name, body)


def append_to_mind(
    api: client.ApiClient, namespace: str, mind: str, field: str, entry: dict[str, str]
) -> dict[str, Any]:
    """Append one entry to a list of the Mind's spec with a JSON patch (two people appending
    at once both land): ``kubectl patch mind NAME --type=json -p '[{"op":"add",
    "path":"/spec/FIELD/-","value":{...}}]'``."""
    body = [{"op": "add", "path": f"/spec/{field}/-", "value": entry}]
    return _patch(api, MIND, namespace, mind, body, "application/json-patch+json")

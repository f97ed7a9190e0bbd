"""Read kopf's ClusterKopfPeering objects: where shards are declared and replicas meet."""

from __future__ import annotations

from typing import Any, cast

from kubernetes import client
from kubernetes.client.exceptions import ApiException

from minds.domain.sharding import PEERING_GROUP, PEERING_PLURAL, PEERING_VERSION


class PeeringUnavailable(RuntimeError):
    """The cluster cannot host shards as installed; the message says what to install."""


_CRD_FILE = "crds/clusterkopfpeerings.kopf.dev.yaml"


def peering_objects(api: client.ApiClient) -> list[dict[str, Any]]:
    """Every ClusterKopfPeering, after checking that replicas can only write their status.

    The controller's role may patch ``clusterkopfpeerings/status`` and nothing else of them;
    kopf writes its liveness records there only when the CRD has a status subresource. A CRD
    installed earlier without one (kopf's own example has none) would leave every replica
    unable to announce itself, each believing it is alone and acting: refused here instead.
    """
    try:
        found = client.CustomObjectsApi(api).get_api_resources(PEERING_GROUP, PEERING_VERSION)
    except ApiException as exc:
        if exc.status == 404:
            raise PeeringUnavailable(
                f"the {PEERING_PLURAL}.{PEERING_GROUP} CRD is not installed; apply {_CRD_FILE} "
                "(the Helm chart installs it)"
            ) from exc
        raise
    names = {r.name for r in found.resources}
    if f"{PEERING_PLURAL}/status" not in names:
        raise PeeringUnavailable(
            f"the {PEERING_PLURAL}.{PEERING_GROUP} CRD in this cluster has no status "
            f"subresource, so replicas could not announce themselves; replace it with {_CRD_FILE}"
        )
    listed = cast(
        dict[str, Any],
        client.CustomObjectsApi(api).list_cluster_custom_object(
            PEERING_GROUP, PEERING_VERSION, PEERING_PLURAL
        ),
    )
    return cast(list[dict[str, Any]], listed.get("items", []))

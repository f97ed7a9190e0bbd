"""The ledger's checkpoint outside the database: one ConfigMap in the controller's namespace.

The chart creates it empty and lets the controller's ServiceAccount get and update that one
ConfigMap by name, and no other (RBAC ``resourceNames``); whoever may write the database may
not write it. Its data is a `SealedCheckpoint`'s ``data()``. Writes are conditional on the
resourceVersion read, so two controllers never both advance one sequence.
"""

from __future__ import annotations

from typing import Final

from kubernetes import client
from kubernetes.client.exceptions import ApiException

from minds.domain.ledger_seal import SealedCheckpoint

__all__ = [
    "CHECKPOINT_CONFIGMAP_ENV",
    "NAMESPACE_ENV",
    "CheckpointConfigMap",
    "CheckpointUnavailable",
    "read_checkpoint",
]

#: The namespace the controller runs in (the chart sets it from the Pod's), where its
#: checkpoint ConfigMap is.
NAMESPACE_ENV: Final = "MINDS_CONTROLLER_NAMESPACE"
#: The checkpoint ConfigMap's name (the chart's ``<release>-ledger-checkpoint``).
CHECKPOINT_CONFIGMAP_ENV: Final = "MINDS_LEDGER_CHECKPOINT_CONFIGMAP"


class CheckpointUnavailable(RuntimeError):
    """The checkpoint object cannot be read or written; the message says which and why."""


#: What the object holds (None: nothing yet) and the version a write must match (None: the
#: object is not there, a write creates it).
Stored = tuple[SealedCheckpoint | None, str | None]


class CheckpointConfigMap:
    def __init__(self, api: client.ApiClient, namespace: str, name: str) -> None:
        self._core = client.CoreV1Api(api)
        self.namespace = namespace
        self.name = name

    def describe(self) -> str:
        return f"configmap {self.namespace}/{self.name}"

    def read(self) -> Stored:
        try:
            found = self._core.read_namespaced_config_map(self.name, self.namespace)
        except ApiException as exc:
            if exc.status == 404:
                return None, None
            raise CheckpointUnavailable(f"{self.describe()}: {exc.reason}") from exc
        data = found.data or {}
        version = found.metadata.resource_version if found.metadata else None
        if not data.get("checkpoint"):
            return None, version or ""
        try:
            return SealedCheckpoint.from_data(data), version
        except ValueError as exc:
            raise CheckpointUnavailable(f"{self.describe()}: {exc}") from exc

    def write(self, checkpoint: SealedCheckpoint, version: str | None) -> None:
        """Set the object's data, if it is still at ``version`` (None: create it). A patch, not
        a replace: the chart's labels and annotations stay."""
        try:
            if version is None:
                body = client.V1ConfigMap(
                    metadata=client.V1ObjectMeta(name=self.name, namespace=self.namespace),
                    data=checkpoint.data(),
                )
                self._core.create_namespaced_config_map(self.namespace, body)
            else:
                patch = {"metadata": {"resourceVersion": version}, "data": checkpoint.data()}
                self._core.patch_namespaced_config_map(self.name, self.namespace, patch)
        except ApiException as exc:
            raise CheckpointUnavailable(f"{self.describe()}: {exc.reason}") from exc


def read_checkpoint(api: client.ApiClient, namespace: str, name: str) -> SealedCheckpoint:
    """The checkpoint the ConfigMap holds; CheckpointUnavailable if none."""
    stored, _version = CheckpointConfigMap(api, namespace, name).read()
    if stored is None:
        raise CheckpointUnavailable(f"configmap {namespace}/{name} holds no checkpoint")
    return stored

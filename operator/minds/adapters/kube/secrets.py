"""Read a Mind's model API key: one key of one Secret, in the Mind's own namespace, labelled.

RBAC cannot tell Secrets apart by label, so the label is checked here before any value is
used: a Secret that is not marked as a model key (a database password, a TLS key) is never
sent anywhere, even where the controller happens to be allowed to read it. The reference
carries no namespace (the schema refuses one), so a Mind can only name a Secret beside it.
"""

from __future__ import annotations

import base64
from typing import Final

from kubernetes import client
from kubernetes.client.exceptions import ApiException

from minds.domain.resources.mind import SecretKeyRef

MODEL_KEY_LABEL: Final = "minds.dev/model-key"


class SecretUnavailable(RuntimeError):
    """The Secret or its key cannot be used; the message names which, never the value."""


def model_key(api: client.ApiClient, namespace: str, ref: SecretKeyRef) -> str:
    """The API key `ref` names in `namespace`, if that Secret is marked as a model key."""
    try:
        secret = client.CoreV1Api(api).read_namespaced_secret(ref.name, namespace)
    except ApiException as exc:
        raise SecretUnavailable(f"secret {namespace}/{ref.name}: {exc.reason}") from exc
    labels = (secret.metadata.labels if secret.metadata else None) or {}
    if labels.get(MODEL_KEY_LABEL) != "true":
        raise SecretUnavailable(
            f"secret {namespace}/{ref.name} is not labelled {MODEL_KEY_LABEL}=true, so it is "
            "not used as a model key (label it if it is one)"
        )
    data = (secret.data or {}).get(ref.key)
    if data is None:
        raise SecretUnavailable(f"secret {namespace}/{ref.name} has no key {ref.key!r}")
    return base64.b64decode(data).decode("utf-8").strip()

"""Read one key of one Secret: how a Mind's model API key reaches the model client."""

from __future__ import annotations

import base64

from kubernetes import client
from kubernetes.client.exceptions import ApiException


class SecretUnavailable(RuntimeError):
    """The Secret or its key cannot be read; the message names which, never the value."""


def secret_value(api: client.ApiClient, namespace: str, name: str, key: str) -> str:
    try:
        secret = client.CoreV1Api(api).read_namespaced_secret(name, namespace)
    except ApiException as exc:
        raise SecretUnavailable(f"secret {namespace}/{name}: {exc.reason}") from exc
    data = (secret.data or {}).get(key)
    if data is None:
        raise SecretUnavailable(f"secret {namespace}/{name} has no key {key!r}")
    return base64.b64decode(data).decode("utf-8").strip()

"""Kubernetes API access for the engine: custom objects, conditional status writes, Events."""

from __future__ import annotations

import json
import logging
import os
import threading
import time
from collections.abc import Callable, Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, cast

from kubernetes import client, config
from kubernetes.client.exceptions import ApiException

from minds.adapters.kube import faults
from minds.adapters.kube.series import EventSeries, Series
from minds.domain.errors import AlreadyExists, Conflict, NotFound, Refused
from minds.domain.masking import mask_text
from minds.domain.resources.kinds import Kind

log = logging.getLogger(__name__)

COMPONENT = "minds-controller"
#: How an Event's times are written (metav1.Time: seconds, UTC).
RFC3339 = "%Y-%m-%dT%H:%M:%SZ"
_SA_NAMESPACE = "/var/run/secrets/kubernetes.io/serviceaccount/namespace"


def api_client(
    kubeconfig: str | None = None, context: str | None = None, *, connections: int | None = None
) -> client.ApiClient:
    """An API client from a kubeconfig (explicit, $KUBECONFIG, ~/.kube) or the pod's account.

    ``connections``: how many connections to keep open, at least as many as threads that call
    at once. The library's default (five per core) is smaller than a controller's worker pools;
    every call beyond it opens a connection, pays a TLS handshake on both ends and throws the
    connection away."""
    cfg = client.Configuration()
    try:
        config.load_kube_config(  # type: ignore[no-untyped-call]
            config_file=kubeconfig, context=context, client_configuration=cfg
        )
    except config.ConfigException:
        config.load_incluster_config(client_configuration=cfg)  # type: ignore[no-untyped-call]
    if connections is not None:
        cfg.connection_pool_maxsize = connections
    if cfg.refresh_api_key_hook is not None:
        cfg.refresh_api_key_hook = _at_most_every(TOKEN_REFRESH_SECONDS, cfg.refresh_api_key_hook)
    api = client.ApiClient(cfg)
    faults.inject(api, faults.parse(os.environ.get(faults.ENV, "")))
    return api


#: How often a kubeconfig's credentials are looked at again. The library's hook runs before
#: every request and re-applies the whole kubeconfig (host, certificates, the proxy from the
#: environment), which costs more CPU than the request; a token is renewed five minutes before
#: it expires, so a look a minute is still in time.
TOKEN_REFRESH_SECONDS = 60.0
#: A JSON merge patch (RFC 7386): the request body names only the fields it sets.
MERGE_PATCH = "application/merge-patch+json"


def _at_most_every(
    seconds: float, hook: Callable[[client.Configuration], None]
) -> Callable[[client.Configuration], None]:
    lock = threading.Lock()
    due = 0.0

    def throttled(cfg: client.Configuration) -> None:
        nonlocal due, hook
        with lock:
            now = time.monotonic()
            if now < due:
                return
            due = now + seconds
            hook(cfg)
            # The library's hook installs a fresh hook of its own each time it runs.
            fresh = cfg.refresh_api_key_hook
            if fresh is not None and fresh is not throttled:
                hook, cfg.refresh_api_key_hook = fresh, throttled

    return throttled


def current_namespace(kubeconfig: str | None = None, context: str | None = None) -> str:
    """The namespace kubectl would use: the context's, else the pod's, else ``default``."""
    try:
        contexts, active = config.list_kube_config_contexts(  # type: ignore[no-untyped-call]
            config_file=kubeconfig
        )
    except (config.ConfigException, FileNotFoundError, TypeError):
        try:
            return Path(_SA_NAMESPACE).read_text().strip() or "default"
        except OSError:
            return "default"
    chosen = next((c for c in contexts if c["name"] == context), active) if context else active
    return str((chosen or {}).get("context", {}).get("namespace") or "default")


def _raise_mapped(exc: ApiException, what: str) -> None:
    if exc.status == 409 and "AlreadyExists" in str(exc.body or ""):
        raise AlreadyExists(what) from exc
    if exc.status == 409:
        raise Conflict(what) from exc
    if exc.status == 404:
        raise NotFound(what) from exc
    if exc.status == 403:
        raise Refused(f"{what}: {server_message(exc)}") from exc
    raise exc


def server_message(exc: ApiException) -> str:
    """The Status message the API server sent, not the whole response."""
    try:
        return str(json.loads(exc.body or "{}").get("message") or exc.reason)
    except (ValueError, AttributeError):
        return str(exc.reason)


class KubeResources:
    """The engine's ``ResourcePort`` over the CustomObjects API."""

    def __init__(self, api: client.ApiClient) -> None:
        self._custom = client.CustomObjectsApi(api)

    def get(self, kind: Kind, namespace: str, name: str) -> dict[str, Any]:
        try:
            obj = cast(
                dict[str, Any],
                self._custom.get_namespaced_custom_object(
                    kind.group, kind.version, namespace, kind.plural, name
                ),
            )
        except ApiException as exc:
            _raise_mapped(exc, f"{kind.kind} {namespace}/{name}")
            raise
        return obj

    def select(
        self, kind: Kind, namespace: str, match: Callable[[Mapping[str, Any]], bool]
    ) -> list[dict[str, Any]]:
        return [item for item in self.list(kind, namespace) if match(item)]

    def list(
        self, kind: Kind, namespace: str, label_selector: str | None = None
    ) -> list[dict[str, Any]]:
        try:
            result = cast(
                dict[str, Any],
                self._custom.list_namespaced_custom_object(
                    kind.group,
                    kind.version,
                    namespace,
                    kind.plural,
                    label_selector=label_selector or "",
                ),
            )
        except ApiException as exc:
            _raise_mapped(exc, f"{kind.plural} in {namespace}")
            raise
        items: list[dict[str, Any]] = result.get("items", [])
        for item in items:
            # List items omit apiVersion and kind; callers post Events about them.
            item.setdefault("apiVersion", f"{kind.group}/{kind.version}")
            item.setdefault("kind", kind.kind)
        return items

    def create(self, kind: Kind, namespace: str, body: dict[str, Any]) -> dict[str, Any]:
        body = {"apiVersion": f"{kind.group}/{kind.version}", "kind": kind.kind, **body}
        try:
            return cast(
                dict[str, Any],
                self._custom.create_namespaced_custom_object(
                    kind.group, kind.version, namespace, kind.plural, body
                ),
            )
        except ApiException as exc:
            _raise_mapped(exc, f"{kind.kind} {namespace}/{body['metadata'].get('name')}")
            raise

    def replace_status(
        self, kind: Kind, body: dict[str, Any], status: dict[str, Any]
    ) -> dict[str, Any]:
        """PUT the status subresource: the body's resourceVersion makes it conditional."""
        meta = body["metadata"]
        new = {**body, "status": status}
        try:
            obj = cast(
                dict[str, Any],
                self._custom.replace_namespaced_custom_object_status(
                    kind.group, kind.version, meta["namespace"], kind.plural, meta["name"], new
                ),
            )
        except ApiException as exc:
            _raise_mapped(exc, f"{kind.kind} {meta['namespace']}/{meta['name']}")
            raise
        return obj

    def patch_spec(self, kind: Kind, body: dict[str, Any], spec: dict[str, Any]) -> dict[str, Any]:
        """A merge patch of the spec that carries the body's resourceVersion: the API server
        refuses it (409) if the object changed since it was read."""
        meta = body["metadata"]
        patch = {"metadata": {"resourceVersion": meta["resourceVersion"]}, "spec": spec}
        try:
            return cast(
                dict[str, Any],
                self._custom.patch_namespaced_custom_object(
                    kind.group,
                    kind.version,
                    meta["namespace"],
                    kind.plural,
                    meta["name"],
                    patch,
                    _content_type=MERGE_PATCH,
                ),
            )
        except ApiException as exc:
            _raise_mapped(exc, f"{kind.kind} {meta['namespace']}/{meta['name']}")
            raise

    def delete(self, kind: Kind, namespace: str, name: str, uid: str) -> None:
        """Delete this incarnation only: the uid precondition spares an object re-created under
        the same name since it was read. Raises NotFound (gone) or Conflict (a new uid)."""
        options = client.V1DeleteOptions(preconditions=client.V1Preconditions(uid=uid))
        try:
            self._custom.delete_namespaced_custom_object(
                kind.group, kind.version, namespace, kind.plural, name, body=options
            )
        except ApiException as exc:
            if exc.status == 404:
                return
            _raise_mapped(exc, f"{kind.kind} {namespace}/{name}")
            raise


class KubeEvents:
    """Posts core/v1 Events so ``kubectl describe`` tells the story. Best effort by design:
    the ledger is the record, an Event is a courtesy, and losing one must not fail a handler.
    A repeat of an Event is counted on it (``minds.adapters.kube.series``), not posted again."""

    def __init__(
        self,
        api: client.ApiClient,
        *,
        clock: Callable[[], datetime] = lambda: datetime.now(UTC),
        series: EventSeries | None = None,
    ) -> None:
        self._core = client.CoreV1Api(api)
        self._clock = clock
        self._series = series if series is not None else EventSeries()

    def post(self, body: dict[str, Any], *, type_: str, reason: str, message: str) -> None:
        meta = body["metadata"]
        now = self._clock()
        # Masked before it is cut: a cut could leave half a secret no rule recognises.
        text = mask_text(message)[0][:1024]
        key = (
            meta["namespace"],
            str(body.get("kind")),
            str(meta.get("uid") or meta["name"]),
            type_,
            reason,
            text,
        )
        repeat = self._series.repeat_of(key, now)
        if repeat is not None:
            if self._count(meta["namespace"], repeat):
                return
            self._series.forget(key)
        name = self._create(body, type_, reason, text, now)
        if name is not None:
            self._series.started(key, name, now)

    def _create(
        self, body: dict[str, Any], type_: str, reason: str, text: str, now: datetime
    ) -> str | None:
        meta = body["metadata"]
        event = client.CoreV1Event(
            metadata=client.V1ObjectMeta(
                generate_name=f"{meta['name']}.", namespace=meta["namespace"]
            ),
            involved_object=client.V1ObjectReference(
                api_version=body.get("apiVersion"),
                kind=body.get("kind"),
                name=meta["name"],
                namespace=meta["namespace"],
                uid=meta.get("uid"),
                resource_version=meta.get("resourceVersion"),
            ),
            reason=reason,
            message=text,
            type=type_,
            first_timestamp=now,
            last_timestamp=now,
            count=1,
            source=client.V1EventSource(component=COMPONENT),
            reporting_component=COMPONENT,
            reporting_instance=COMPONENT,
        )
        try:
            created = self._core.create_namespaced_event(meta["namespace"], event)
        except ApiException as exc:
            log.warning("could not post event %s on %s: %s", reason, meta["name"], exc.reason)
            return None
        return cast(str, created.metadata.name)

    def _count(self, namespace: str, repeat: Series) -> bool:
        """Raise the Event's count and last time; False when the Event is gone."""
        patch = {"count": repeat.count, "lastTimestamp": repeat.last.strftime(RFC3339)}
        try:
            self._core.patch_namespaced_event(repeat.name, namespace, patch)
        except ApiException as exc:
            if exc.status == 404:
                return False
            # Best effort, as a post: a lost count is better than a copy of the Event.
            log.warning("could not count event %s again: %s", repeat.name, exc.reason)
        return True

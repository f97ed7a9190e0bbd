"""Watches of workloads, one per namespace and kind that a goal names.

The controller's ClusterRole reads no workload anywhere; the workloads role a platform team
binds per managed namespace lets it list and watch them there. A cluster-wide watch would need
more, so each (namespace, kind) pair gets a watch of its own: a list, then a watch from the
list's resourceVersion, listed again when the server says that version is gone. A namespace
the controller may not read is logged and tried again later; nothing else depends on it (the
periodic cycle still observes with a real read).

Each watch runs in a thread of its own: the client is synchronous, and a watch holds its
connection for minutes. Bodies are decoded from the stream as JSON and never turned into the
client's models, which would cost more than the watch itself.
"""

from __future__ import annotations

import json
import logging
import threading
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Final, Protocol

from kubernetes import client
from kubernetes.client.exceptions import ApiException
from kubernetes.watch.watch import iter_resp_lines

log = logging.getLogger(__name__)

#: Seconds a watch request stays open before the server ends it and it is opened again.
WATCH_SECONDS: Final = 300
#: After a failure (the API server away, the namespace not readable), the next try.
RETRY_SECONDS: Final = 5.0
#: A namespace the controller may not read is unlikely to become readable within seconds.
FORBIDDEN_RETRY_SECONDS: Final = 60.0

#: What the watched workloads' role must allow, beside what the drivers need.
RBAC_RULES: Final = (
    {
        "apiGroups": ["apps"],
        "resources": ["deployments", "statefulsets", "daemonsets"],
        "verbs": ["list", "watch"],
    },
)

Json = dict[str, object]


class WorkloadListener(Protocol):
    def seen(self, plural: str, namespace: str, body: Mapping[str, object], *, first: bool) -> None:
        """A body as listed or watched; ``first``: from the watch's first listing, before
        which nothing was known of this namespace and kind."""

    def gone(self, plural: str, namespace: str, name: str) -> None: ...

    def forget(self, plural: str, namespace: str) -> None:
        """The watch of this namespace and kind is stopped: what it told is out of date."""


class _Nobody:
    def seen(self, plural: str, namespace: str, body: Mapping[str, object], *, first: bool) -> None:
        return None

    def gone(self, plural: str, namespace: str, name: str) -> None:
        return None

    def forget(self, plural: str, namespace: str) -> None:
        return None


_NOBODY: Final = _Nobody()


class WorkloadBodies:
    """The last body each watch told of each workload, passed on to ``listener``: what acting
    on a watched workload reads instead of a GET (the write still carries the body's
    resourceVersion as its precondition, so a copy the watch has not brought up to date yet is
    refused by the API server, never acted on). managedFields are dropped: nobody reads them
    and they are most of a body."""

    def __init__(self) -> None:
        self._listener: WorkloadListener = _NOBODY
        self._lock = threading.Lock()
        self._bodies: dict[tuple[str, str, str], Json] = {}

    def attach(self, listener: WorkloadListener) -> None:
        """Who hears of each change: the goals' watch, made after the drivers that read here."""
        self._listener = listener

    def get(self, plural: str, namespace: str, name: str) -> Json | None:
        with self._lock:
            return self._bodies.get((plural, namespace, name))

    def seen(self, plural: str, namespace: str, body: Mapping[str, object], *, first: bool) -> None:
        meta = body.get("metadata")
        if isinstance(meta, Mapping):
            kept = {k: v for k, v in meta.items() if k != "managedFields"}
            with self._lock:
                self._bodies[(plural, namespace, str(meta.get("name")))] = {
                    **body,
                    "metadata": kept,
                }
        self._listener.seen(plural, namespace, body, first=first)

    def gone(self, plural: str, namespace: str, name: str) -> None:
        with self._lock:
            self._bodies.pop((plural, namespace, name), None)
        self._listener.gone(plural, namespace, name)

    def forget(self, plural: str, namespace: str) -> None:
        with self._lock:
            for key in [k for k in self._bodies if k[:2] == (plural, namespace)]:
                del self._bodies[key]
        self._listener.forget(plural, namespace)


#: A client's list call for one kind in a namespace (with ``watch=True``, its watch).
_Lister = Callable[..., object]


def _lister(apps: client.AppsV1Api, plural: str) -> _Lister:
    calls: dict[str, _Lister] = {
        "deployments": apps.list_namespaced_deployment,
        "statefulsets": apps.list_namespaced_stateful_set,
        "daemonsets": apps.list_namespaced_daemon_set,
    }
    return calls[plural]


class _Gone(Exception):
    """The resourceVersion the watch asked from is too old: list again."""


@dataclass
class _Watch:
    thread: threading.Thread
    stop: threading.Event


class WorkloadWatches:
    def __init__(
        self,
        api: client.ApiClient,
        listener: WorkloadListener,
        *,
        watch_seconds: int = WATCH_SECONDS,
        retry_seconds: float = RETRY_SECONDS,
    ) -> None:
        self._apps = client.AppsV1Api(api)
        self._listener = listener
        self._watch_seconds = watch_seconds
        self._retry = retry_seconds
        self._lock = threading.Lock()
        self._watches: dict[tuple[str, str], _Watch] = {}

    def follow(self, wanted: Iterable[tuple[str, str]]) -> None:
        """Watch exactly these (namespace, plural) pairs: start the missing, stop the rest."""
        wanted = set(wanted)
        with self._lock:
            stopped = [key for key in self._watches if key not in wanted]
            for key in stopped:
                self._watches.pop(key).stop.set()
            for key in wanted - self._watches.keys():
                stop = threading.Event()
                thread = threading.Thread(
                    target=self._run, args=(*key, stop), name=f"watch {key[1]} in {key[0]}",
                    daemon=True,
                )  # fmt: skip
                self._watches[key] = _Watch(thread, stop)
                thread.start()
        for namespace, plural in stopped:
            self._listener.forget(plural, namespace)

    def following(self) -> set[tuple[str, str]]:
        with self._lock:
            return set(self._watches)

    def close(self) -> None:
        self.follow(())

    # -- one watch -------------------------------------------------------------------------

    def _run(self, namespace: str, plural: str, stop: threading.Event) -> None:
        lister = _lister(self._apps, plural)
        version: str | None = None
        first = True
        known: set[str] = set()
        while not stop.is_set():
            try:
                if version is None:
                    version, known = self._list(lister, namespace, plural, known, first=first)
                    first = False
                version = self._watch(lister, namespace, plural, version, known, stop)
            except _Gone:
                version = None
            except ApiException as exc:
                version = None
                log.warning("watching %s in %s: %s %s", plural, namespace, exc.status, exc.reason)
                stop.wait(FORBIDDEN_RETRY_SECONDS if exc.status == 403 else self._retry)
            except Exception:  # the connection dropped, say: list again after a pause
                log.warning("watching %s in %s failed", plural, namespace, exc_info=True)
                version = None
                stop.wait(self._retry)

    def _list(
        self, lister: _Lister, namespace: str, plural: str, known: set[str], *, first: bool
    ) -> tuple[str, set[str]]:
        response = lister(namespace, _preload_content=False, _request_timeout=30)
        listing = json.loads(response.data)  # type: ignore[attr-defined]
        items = [item for item in listing.get("items") or [] if isinstance(item, dict)]
        names = {str((item.get("metadata") or {}).get("name")) for item in items}
        for name in known - names:  # deleted while no watch ran
            self._listener.gone(plural, namespace, name)
        for item in items:
            self._listener.seen(plural, namespace, item, first=first)
        return str((listing.get("metadata") or {}).get("resourceVersion") or ""), names

    def _watch(
        self,
        lister: _Lister,
        namespace: str,
        plural: str,
        version: str,
        known: set[str],
        stop: threading.Event,
    ) -> str:
        """Follow the watch until the server ends it; the resourceVersion to go on from."""
        response = lister(
            namespace,
            watch=True,
            resource_version=version,
            allow_watch_bookmarks=True,
            timeout_seconds=self._watch_seconds,
            _preload_content=False,
            _request_timeout=(30, self._watch_seconds + 30),
        )
        try:
            for event in _events(response):
                if stop.is_set():
                    break
                version = self._event(namespace, plural, event, known) or version
        finally:
            response.release_conn()  # type: ignore[attr-defined]
        return version

    def _event(self, namespace: str, plural: str, event: Json, known: set[str]) -> str | None:
        kind, body = event.get("type"), event.get("object")
        if not isinstance(body, dict):
            return None
        if kind == "ERROR":
            if body.get("code") == 410:
                raise _Gone
            raise ApiException(status=body.get("code"), reason=str(body.get("message") or ""))
        meta = body.get("metadata") or {}
        version = str(meta.get("resourceVersion") or "") or None
        if kind == "BOOKMARK":
            return version
        name = str(meta.get("name"))
        if kind == "DELETED":
            known.discard(name)
            self._listener.gone(plural, namespace, name)
        else:
            known.add(name)
            self._listener.seen(plural, namespace, body, first=False)
        return version


def _events(response: object) -> Iterator[Json]:
    for line in iter_resp_lines(response):  # type: ignore[no-untyped-call]
        event = json.loads(line)
        if isinstance(event, dict):
            yield event

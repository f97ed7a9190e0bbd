"""Reads from the watch, writes to the API server: the controller's ``ResourcePort``.

kopf already watches every Mind, Plan, Approval and CapabilityGrant; paying a GET for each
question the engine asks about them would repeat what the watch delivered a moment ago.
``WatchStore`` keeps the newest body of each watched object (fed by the controller from the
watch, and by our own writes as they return), and ``WatchedResources`` answers ``get`` and
``list`` from it while ``create`` and ``replace_status`` go to the API server.

Staleness is harmless by construction: every write is conditional on the resourceVersion of
the body in hand, so a decision computed from an old body fails with 409 instead of
overwriting newer state. After a 409 (or a 404) the object is re-read from the API server once
and the store corrected, so the caller's retry sees the truth. Kinds that are not watched (the
workloads a capability observes) are always read from the API server, one read per
observation.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from minds.adapters.kube.client import KubeResources
from minds.adapters.kube.selectors import LabelSelector
from minds.domain.errors import Conflict, NotFound
from minds.domain.resources.kinds import Kind

Key = tuple[str, str]


def _revision(body: Mapping[str, Any]) -> int | None:
    """An etcd-backed API server's resourceVersion is an integer revision. The API calls it
    opaque, so when it is not one we never claim to know which body is newer."""
    value = str((body.get("metadata") or {}).get("resourceVersion") or "")
    return int(value) if value.isdigit() else None


def _plain(value: object) -> object:
    """What ``json`` cannot encode by itself: the mapping and sequence views kopf hands out."""
    if isinstance(value, Mapping):
        return dict(value)
    if isinstance(value, Sequence) and not isinstance(value, str | bytes):
        return list(value)
    raise TypeError(f"not JSON: {type(value).__name__}")


@dataclass(frozen=True)
class _Held:
    """One object as the store keeps it: parsed, for readers that only read, and encoded, for
    the copies every other reader gets (decoding a few KiB of JSON costs a tenth of what
    ``copy.deepcopy`` of the same body does, and bodies are copied on every read)."""

    body: dict[str, Any]
    text: str
    revision: int | None

    @classmethod
    def of(cls, body: Mapping[str, Any], revision: int | None) -> _Held:
        text = json.dumps(body, default=_plain, separators=(",", ":"))
        return cls(json.loads(text), text, revision)

    def copy(self) -> dict[str, Any]:
        copied: dict[str, Any] = json.loads(self.text)
        return copied


def _older(held: _Held | None, uid: str | None, revision: int | None) -> bool:
    """Is a body of this uid and revision older than (or as old as) the one held?"""
    if held is None or held.body["metadata"].get("uid") != uid:
        return False
    return held.revision is not None and revision is not None and revision <= held.revision


class WatchStore:
    """The newest body seen of every watched object, by kind plural and (namespace, name).

    Fed from two directions: the watch (``observe`` and ``forget``) and our own writes. An
    older body never replaces a newer one, so a watch event still in flight after our write
    cannot roll the store back. Thread-safe: kopf feeds it on its event loop while the engine
    reads it from worker threads."""

    def __init__(self, plurals: Iterable[str]) -> None:
        self._lock = threading.Lock()
        self._objects: dict[str, dict[Key, _Held]] = {p: {} for p in plurals}
        self._primed = threading.Event()

    def primed(self) -> None:
        """The watch has delivered everything there was at start (the controller says so once
        kopf runs its first handler, which it does only after every indexed listing)."""
        self._primed.set()

    def watches(self, kind: Kind) -> bool:
        return kind.plural in self._objects

    def observe(self, plural: str, body: Mapping[str, Any]) -> bool:
        """Keep ``body`` unless the store holds a newer one; True when it was news (not a body
        the store already had, such as the watch echoing our own write)."""
        meta = body.get("metadata") or {}
        key = (str(meta.get("namespace") or ""), str(meta.get("name") or ""))
        uid, revision = meta.get("uid"), _revision(body)
        with self._lock:
            if _older(self._objects[plural].get(key), uid, revision):
                return False
        # Our own copy: kopf may reuse what it handed us, and callers get copies of ours.
        # Encoded outside the lock, so readers never wait for it.
        new = _Held.of(body, revision)
        with self._lock:
            objects = self._objects[plural]
            # Again: another thread may have kept a newer body meanwhile.
            if _older(objects.get(key), uid, revision):
                return False
            objects[key] = new
            return True

    def forget(self, plural: str, namespace: str, name: str, uid: str | None = None) -> None:
        with self._lock:
            objects = self._objects[plural]
            old = objects.get((namespace, name))
            # A delete of an earlier incarnation must not drop the object now under that name.
            if old is not None and (uid is None or old.body["metadata"].get("uid") == uid):
                del objects[(namespace, name)]

    def get(self, plural: str, namespace: str, name: str) -> dict[str, Any] | None:
        with self._lock:
            found = self._objects[plural].get((namespace, name))
        # Callers may change what they are handed; the store's copy stays as it was seen.
        return found.copy() if found is not None else None

    def version(self, plural: str, namespace: str, name: str) -> str | None:
        """The resourceVersion of the body held, without copying it: what a safety tick
        compares to know that nothing changed."""
        with self._lock:
            found = self._objects[plural].get((namespace, name))
        return None if found is None else found.body["metadata"].get("resourceVersion")

    def in_namespace(self, plural: str, namespace: str | None) -> list[dict[str, Any]]:
        """Every object of a kind in a namespace (``None``: in every namespace)."""
        with self._lock:
            found = [
                held
                for (ns, _name), held in self._objects[plural].items()
                if namespace is None or ns == namespace
            ]
        return [held.copy() for held in found]

    def select(
        self, plural: str, namespace: str, match: Callable[[Mapping[str, Any]], bool]
    ) -> list[dict[str, Any]]:
        """The objects of a kind in a namespace that ``match`` keeps, copied; the rest are
        only read as held (``match`` must not change them)."""
        with self._lock:
            found = [held for (ns, _name), held in self._objects[plural].items() if ns == namespace]
        return [held.copy() for held in found if match(held.body)]

    def objects(self, kind: Kind) -> list[Mapping[str, Any]]:
        """Every object of a kind, as held: not copied, for readers that only read (a metrics
        scrape). Safe to hold: the store replaces a body whole, it never changes one. Nothing
        until the store is primed: a half-filled store would tell a metrics scrape wrong
        numbers, where none is the truth (not yet known)."""
        if not self._primed.is_set():
            return []
        with self._lock:
            return [held.body for held in self._objects[kind.plural].values()]

    def __len__(self) -> int:
        with self._lock:
            return sum(len(objects) for objects in self._objects.values())


class WatchedResources:
    """``ResourcePort`` over a ``WatchStore`` and the API server (see the module's doc)."""

    def __init__(self, store: WatchStore, api: KubeResources) -> None:
        self._store = store
        self._api = api

    def get(self, kind: Kind, namespace: str, name: str) -> dict[str, Any]:
        if not self._store.watches(kind):
            return self._api.get(kind, namespace, name)
        body = self._store.get(kind.plural, namespace, name)
        if body is None:
            raise NotFound(f"{kind.kind} {namespace}/{name}")
        return body

    def select(
        self, kind: Kind, namespace: str, match: Callable[[Mapping[str, Any]], bool]
    ) -> list[dict[str, Any]]:
        if not self._store.watches(kind):
            return self._api.select(kind, namespace, match)
        return _typed(kind, self._store.select(kind.plural, namespace, match))

    def list(
        self, kind: Kind, namespace: str, label_selector: str | None = None
    ) -> list[dict[str, Any]]:
        if not self._store.watches(kind):
            return self._api.list(kind, namespace, label_selector)
        selector = LabelSelector.parse(label_selector or "")
        return _typed(
            kind,
            [
                body
                for body in self._store.in_namespace(kind.plural, namespace)
                if selector.matches((body.get("metadata") or {}).get("labels") or {})
            ],
        )

    def create(self, kind: Kind, namespace: str, body: dict[str, Any]) -> dict[str, Any]:
        created = self._api.create(kind, namespace, body)
        if self._store.watches(kind):
            self._store.observe(kind.plural, created)
        return created

    def replace_status(
        self, kind: Kind, body: dict[str, Any], status: dict[str, Any]
    ) -> dict[str, Any]:
        return self._conditional(kind, body, lambda: self._api.replace_status(kind, body, status))

    def patch_spec(self, kind: Kind, body: dict[str, Any], spec: dict[str, Any]) -> dict[str, Any]:
        return self._conditional(kind, body, lambda: self._api.patch_spec(kind, body, spec))

    def _conditional(
        self, kind: Kind, body: dict[str, Any], write: Callable[[], dict[str, Any]]
    ) -> dict[str, Any]:
        """A write conditional on ``body``'s resourceVersion; what it wrote (or, on a 409, what
        the API server has now) replaces what the store held."""
        if not self._store.watches(kind):
            return write()
        meta = body["metadata"]
        try:
            written = write()
        except Conflict:
            self._refresh(kind, meta["namespace"], meta["name"])
            raise
        except NotFound:
            self._store.forget(kind.plural, meta["namespace"], meta["name"], meta.get("uid"))
            raise
        self._store.observe(kind.plural, written)
        return written

    def delete(self, kind: Kind, namespace: str, name: str, uid: str) -> None:
        self._api.delete(kind, namespace, name, uid)
        if self._store.watches(kind):
            self._store.forget(kind.plural, namespace, name, uid)

    def _refresh(self, kind: Kind, namespace: str, name: str) -> None:
        """The one re-read a 409 buys: what the API server has now replaces what we held."""
        try:
            self._store.observe(kind.plural, self._api.get(kind, namespace, name))
        except NotFound:
            self._store.forget(kind.plural, namespace, name)


def _typed(kind: Kind, items: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """List items as the API server lists them, with their apiVersion and kind (callers post
    Events about them)."""
    for item in items:
        item.setdefault("apiVersion", f"{kind.group}/{kind.version}")
        item.setdefault("kind", kind.kind)
    return items

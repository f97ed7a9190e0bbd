"""The engine's ``ResourceReader`` and ``ResourceWriter`` in memory, as the API server answers.

What it copies from the API server, each proven by the contract suite: objects come back as
copies (a caller's edit changes nothing stored); ``create`` sets uid, resourceVersion and
generation, refuses a taken name (AlreadyExists); ``replace_status`` is the status subresource
(only ``status`` changes, written conditionally: a stale resourceVersion is a Conflict, a
missing object NotFound); ``list`` filters by equality, inequality and existence selectors;
``patch_spec`` is a merge patch of the spec, conditional on the resourceVersion (a new
generation when it changes something); ``delete`` takes the uid as a precondition.
``before_write`` lets a test slip a competing write in between a read and a write.
"""

from __future__ import annotations

import itertools
import pickle
import uuid
from collections.abc import Callable, Mapping
from typing import Any, TypeVar

from minds.adapters.kube.selectors import LabelSelector
from minds.domain.errors import AlreadyExists, Conflict, NotFound
from minds.domain.resources.kinds import Kind
from minds.domain.story import is_reason

_T = TypeVar("_T")


class FakeResources:
    def __init__(self) -> None:
        self._objects: dict[tuple[str, str, str], dict[str, Any]] = {}
        self._versions = itertools.count(1)
        self.writes = 0
        #: Called with (kind, body) before a status write is judged: a competing writer.
        self.before_write: Callable[[Kind, dict[str, Any]], None] | None = None

    def get(self, kind: Kind, namespace: str, name: str) -> dict[str, Any]:
        found = self._objects.get((kind.plural, namespace, name))
        if found is None:
            raise NotFound(f"{kind.kind} {namespace}/{name}")
        return _copied(found)

    def list(
        self, kind: Kind, namespace: str, label_selector: str | None = None
    ) -> list[dict[str, Any]]:
        # The controller's own matcher: the contract suite proves it matches as the API server.
        selector = LabelSelector.parse(label_selector or "")
        return [
            _copied(body)
            for (plural, ns, _), body in sorted(self._objects.items())
            if plural == kind.plural
            and ns == namespace
            and selector.matches(body["metadata"].get("labels") or {})
        ]

    def select(
        self, kind: Kind, namespace: str, match: Callable[[Mapping[str, Any]], bool]
    ) -> list[dict[str, Any]]:
        return [
            _copied(body)
            for (plural, ns, _), body in sorted(self._objects.items())
            if plural == kind.plural and ns == namespace and match(body)
        ]

    def create(self, kind: Kind, namespace: str, body: dict[str, Any]) -> dict[str, Any]:
        name = body["metadata"]["name"]
        key = (kind.plural, namespace, name)
        if key in self._objects:
            raise AlreadyExists(f"{kind.kind} {namespace}/{name}")
        stored = _copied(body)
        stored["apiVersion"] = f"{kind.group}/{kind.version}"
        stored["kind"] = kind.kind
        stored["metadata"] = {
            **stored["metadata"],
            "namespace": namespace,
            "uid": str(uuid.uuid4()),
            "resourceVersion": str(next(self._versions)),
            "generation": 1,
        }
        # The status subresource: a create never sets status, but a schema default fills it
        # in on every read (an Approval reads Pending from its creation).
        stored.pop("status", None)
        extra = kind.status.model_config.get("json_schema_extra")
        if isinstance(extra, dict) and "default" in extra:
            # As the API server defaults it: only the fields the schema gives a default.
            fields = kind.status.model_json_schema(by_alias=True).get("properties", {})
            stored["status"] = {
                name: field["default"]
                for name, field in fields.items()
                if field.get("default") is not None
            }
        self._objects[key] = stored
        self.writes += 1
        return _copied(stored)

    def replace_status(
        self, kind: Kind, body: dict[str, Any], status: dict[str, Any]
    ) -> dict[str, Any]:
        if self.before_write is not None:
            competing, self.before_write = self.before_write, None
            competing(kind, body)
        meta = body["metadata"]
        key = (kind.plural, meta["namespace"], meta["name"])
        stored = self._objects.get(key)
        if stored is None:
            raise NotFound(f"{kind.kind} {meta['namespace']}/{meta['name']}")
        expected = meta.get("resourceVersion")
        if expected and expected != stored["metadata"]["resourceVersion"]:
            raise Conflict(f"{kind.kind} {meta['namespace']}/{meta['name']}")
        if stored.get("status") != status:
            stored["status"] = _copied(status)
            stored["metadata"]["resourceVersion"] = str(next(self._versions))
        self.writes += 1
        return _copied(stored)

    def patch_spec(self, kind: Kind, body: dict[str, Any], spec: dict[str, Any]) -> dict[str, Any]:
        meta = body["metadata"]
        stored = self._objects.get((kind.plural, meta["namespace"], meta["name"]))
        if stored is None:
            raise NotFound(f"{kind.kind} {meta['namespace']}/{meta['name']}")
        if meta["resourceVersion"] != stored["metadata"]["resourceVersion"]:
            raise Conflict(f"{kind.kind} {meta['namespace']}/{meta['name']}")
        merged = _merged(stored.get("spec") or {}, spec)
        if merged != stored.get("spec"):
            stored["spec"] = merged
            stored["metadata"]["resourceVersion"] = str(next(self._versions))
            stored["metadata"]["generation"] += 1
        self.writes += 1
        return _copied(stored)

    def delete(self, kind: Kind, namespace: str, name: str, uid: str) -> None:
        key = (kind.plural, namespace, name)
        stored = self._objects.get(key)
        if stored is None:
            return
        if stored["metadata"]["uid"] != uid:
            raise Conflict(f"{kind.kind} {namespace}/{name}: another object has the name now")
        del self._objects[key]
        self.writes += 1


def _copied(value: _T) -> _T:
    """A deep copy (several times faster than ``copy.deepcopy`` for a body of a few hundred
    nodes, which lets a test run the controller over simulated days)."""
    # The bodies are the test's own, never untrusted input.
    copied: _T = pickle.loads(pickle.dumps(value, pickle.HIGHEST_PROTOCOL))  # noqa: S301
    return copied


def _merged(target: dict[str, Any], patch: dict[str, Any]) -> dict[str, Any]:
    """A JSON merge patch (RFC 7386): None removes a key, a mapping merges, anything else
    replaces."""
    out = _copied(target)
    for key, value in patch.items():
        if value is None:
            out.pop(key, None)
        elif isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = _merged(out[key], value)
        else:
            out[key] = _copied(value)
    return out


class FakeEvents:
    """Kubernetes Events as a list: (object name, type, reason, message). A reason outside the
    table of ``minds.domain.story.Reason`` fails the test that posted it."""

    def __init__(self) -> None:
        self.posted: list[tuple[str, str, str, str]] = []

    def post(self, body: dict[str, Any], *, type_: str, reason: str, message: str) -> None:
        assert is_reason(reason), f"Event reason {reason!r} is not a CamelCase member of Reason"
        assert type_ in ("Normal", "Warning"), type_
        self.posted.append((body["metadata"]["name"], type_, reason, message))

    def reasons(self, of: str | None = None) -> list[str]:
        """Every reason posted, or only those posted on the object named ``of``."""
        return [reason for name, _, reason, _ in self.posted if of in (None, name)]

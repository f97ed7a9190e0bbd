"""kopf's diff base: the same essence as kopf builds, without copying what kopf drops."""

from __future__ import annotations

from typing import Any

import kopf
import pytest

from minds.controller.persistence import SpecEssenceStorage


class _Uncopyable(dict[str, Any]):
    """Stands for a large stanza: copying it fails the test."""

    def __deepcopy__(self, memo: dict[int, Any]) -> Any:
        raise AssertionError("copied a stanza the essence drops")


def _body(status: dict[str, Any], managed: list[Any]) -> dict[str, Any]:
    return {
        "apiVersion": "minds.dev/v1alpha1",
        "kind": "Plan",
        "metadata": {
            "name": "p",
            "namespace": "shop",
            "uid": "u-1",
            "labels": {"minds.dev/mind": "atlas"},
            "annotations": {"note": "kept", "minds.dev/last-handled-configuration": "{}"},
            "ownerReferences": [{"kind": "Mind", "name": "atlas", "uid": "m-1"}],
            "managedFields": managed,
        },
        "spec": {"mind": "atlas", "steps": [{"key": "a", "parameters": {"x": [1, 2]}}]},
        "status": status,
    }


def _storages() -> tuple[kopf.AnnotationsDiffBaseStorage, SpecEssenceStorage]:
    args: dict[str, Any] = {"prefix": "minds.dev", "key": "last-handled-configuration"}
    return kopf.AnnotationsDiffBaseStorage(**args), SpecEssenceStorage(**args)


@pytest.mark.parametrize(
    "extra_fields",
    [None, ["status.phase"], [("status", "steps")], ["spec.mind"], ["metadata.uid"]],
)
def test_the_essence_is_the_one_kopf_builds(extra_fields: list[Any] | None) -> None:
    body = kopf.Body(_body({"phase": "running", "steps": [{"key": "a"}]}, [{"manager": "m"}]))
    kopfs, ours = _storages()
    assert ours.build(body=body, extra_fields=extra_fields) == kopfs.build(
        body=body, extra_fields=extra_fields
    )


def test_the_status_and_managed_fields_are_never_copied() -> None:
    body = kopf.Body(_body(_Uncopyable(phase="running"), [_Uncopyable(manager="m")]))
    kopfs, ours = _storages()
    with pytest.raises(AssertionError, match="copied a stanza"):
        kopfs.build(body=body)
    assert ours.build(body=body)["spec"]["mind"] == "atlas"


def test_a_level_triggered_kind_has_an_empty_essence() -> None:
    storage = SpecEssenceStorage(
        prefix="minds.dev", key="last-handled-configuration", level_triggered=frozenset({"Plan"})
    )
    body = kopf.Body(_body(_Uncopyable(phase="running"), [_Uncopyable(manager="m")]))
    assert storage.build(body=body) == {}


def test_the_kinds_declared_level_triggered_have_no_change_or_daemon_handlers() -> None:
    """An empty essence is right only while nothing reads it: kopf reads it for change
    handlers (on.create/update/resume/delete) and daemons or timers. The registry is kopf's
    own, filled by importing the handlers; its parts are private, hence the underscores."""
    from minds.controller import handlers
    from minds.domain.resources.kinds import KINDS

    registry = kopf.get_default_registry()
    for kind in KINDS:
        if kind.kind not in handlers.LEVEL_TRIGGERED:
            continue
        resource = kopf.Resource(kind.group, kind.version, kind.plural)
        assert not registry._changing.has_handlers(resource=resource), kind.kind
        assert not registry._spawning.has_handlers(resource=resource), kind.kind
        assert registry._watching.has_handlers(resource=resource), kind.kind

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

"""The watch store keeps the newest body of each object, whoever delivered it first."""

from __future__ import annotations

from types import MappingProxyType
from typing import Any

import pytest

from minds.adapters.kube.selectors import LabelSelector
from minds.adapters.kube.watched import WatchStore
from minds.domain.resources.kinds import PLAN


def body(name: str, rv: str, uid: str = "u1", ns: str = "ns", **labels: str) -> dict[str, Any]:
    return {
        "metadata": {
            "namespace": ns,
            "name": name,
            "uid": uid,
            "resourceVersion": rv,
            "labels": labels,
        },
        "status": {"rv": rv},
    }


def test_a_newer_body_replaces_an_older_one() -> None:
    store = WatchStore(["plans"])
    store.observe("plans", body("p", "5"))
    store.observe("plans", body("p", "7"))
    assert store.get("plans", "ns", "p")["status"] == {"rv": "7"}  # type: ignore[index]


def test_a_late_watch_event_never_rolls_back_our_own_write() -> None:
    store = WatchStore(["plans"])
    store.observe("plans", body("p", "9"))  # what our status write returned
    store.observe("plans", body("p", "8"))  # the watch catching up with an earlier change
    assert store.get("plans", "ns", "p")["status"] == {"rv": "9"}  # type: ignore[index]


def test_a_recreated_object_replaces_its_predecessor_whatever_the_versions() -> None:
    store = WatchStore(["plans"])
    store.observe("plans", body("p", "9", uid="old"))
    store.observe("plans", body("p", "3", uid="new"))
    assert store.get("plans", "ns", "p")["metadata"]["uid"] == "new"  # type: ignore[index]


def test_opaque_versions_are_taken_in_arrival_order() -> None:
    store = WatchStore(["plans"])
    store.observe("plans", body("p", "b"))
    store.observe("plans", body("p", "a"))
    assert store.get("plans", "ns", "p")["status"] == {"rv": "a"}  # type: ignore[index]


def test_forgetting_an_earlier_incarnation_keeps_the_current_one() -> None:
    store = WatchStore(["plans"])
    store.observe("plans", body("p", "9", uid="new"))
    store.forget("plans", "ns", "p", uid="old")
    assert store.get("plans", "ns", "p") is not None
    store.forget("plans", "ns", "p", uid="new")
    assert store.get("plans", "ns", "p") is None


def test_callers_get_copies() -> None:
    store = WatchStore(["plans"])
    store.observe("plans", body("p", "1"))
    got = store.get("plans", "ns", "p")
    assert got is not None
    got["status"]["rv"] = "changed by a caller"
    assert store.get("plans", "ns", "p")["status"] == {"rv": "1"}  # type: ignore[index]


def test_what_it_was_handed_is_copied_views_and_all() -> None:
    # kopf hands bodies as read-only mapping views; the store keeps plain JSON of its own.
    handed = body("p", "1")
    view = MappingProxyType({**handed, "spec": MappingProxyType({"steps": ({"key": "S1"},)})})
    store = WatchStore(["plans"])
    store.observe("plans", view)
    handed["status"]["rv"] = "changed after it was handed over"
    got = store.get("plans", "ns", "p")
    assert got == {**body("p", "1"), "spec": {"steps": [{"key": "S1"}]}}
    listed = store.in_namespace("plans", "ns")
    listed[0]["spec"]["steps"].append("changed by a caller")
    assert store.in_namespace("plans", "ns")[0]["spec"] == {"steps": [{"key": "S1"}]}


def test_listing_is_by_namespace() -> None:
    store = WatchStore(["plans"])
    store.observe("plans", body("a", "1", ns="one"))
    store.observe("plans", body("b", "1", ns="two"))
    assert [b["metadata"]["name"] for b in store.in_namespace("plans", "one")] == ["a"]
    assert len(store.in_namespace("plans", None)) == 2


@pytest.mark.parametrize(
    ("selector", "labels", "matches"),
    [
        ("", {}, True),
        ("a=1", {"a": "1"}, True),
        ("a=1", {"a": "2"}, False),
        ("a==1,b=2", {"a": "1", "b": "2"}, True),
        ("a==1,b=2", {"a": "1"}, False),
        ("a!=1", {}, True),
        ("a!=1", {"a": "1"}, False),
        ("a", {"a": ""}, True),
        ("a", {}, False),
        ("!a", {}, True),
        ("!a", {"a": "x"}, False),
    ],
)
def test_label_selectors_match_as_the_api_server_does(
    selector: str, labels: dict[str, str], matches: bool
) -> None:
    assert LabelSelector.parse(selector).matches(labels) is matches


@pytest.mark.parametrize("selector", ["a in (1,2)", "a notin (1)", "(a)"])
def test_set_based_selectors_are_refused_rather_than_misread(selector: str) -> None:
    with pytest.raises(ValueError, match="unsupported"):
        LabelSelector.parse(selector)


def test_the_watch_echoing_our_own_write_is_no_news() -> None:
    store = WatchStore(["plans"])
    assert store.observe("plans", body("p", "9"))  # our write, as it returned
    assert not store.observe("plans", body("p", "9"))  # the watch delivering the same write
    assert not store.observe("plans", body("p", "8"))  # an older event still in flight
    assert store.observe("plans", body("p", "10"))  # someone else's write


def test_a_scrape_sees_nothing_until_the_store_is_primed() -> None:
    """Half a listing would tell a metrics scrape wrong numbers; none is the truth."""
    store = WatchStore(["plans"])
    store.observe("plans", body("p", "1"))
    assert store.objects(PLAN) == []
    store.primed()
    assert [b["metadata"]["name"] for b in store.objects(PLAN)] == ["p"]

"""Events are posted beside the work: a post never waits for the API server."""

from __future__ import annotations

import threading
from typing import Any

from minds.adapters.kube.posting import BackgroundEvents

DEADLINE = 10.0


class _SlowServer:
    """Posts that wait until the test lets them through, in the order they arrive."""

    def __init__(self) -> None:
        self.open = threading.Event()
        self.posted: list[tuple[str, str]] = []

    def post(self, body: dict[str, Any], *, type_: str, reason: str, message: str) -> None:
        assert self.open.wait(DEADLINE), "the test never opened the server"
        if reason == "Broken":
            raise ConnectionError("the API server went away")
        self.posted.append((body["metadata"]["name"], reason))


def _body(name: str) -> dict[str, Any]:
    return {"apiVersion": "minds.dev/v1alpha1", "kind": "Plan", "metadata": {"name": name}}


def test_a_post_returns_while_the_api_server_has_not_answered() -> None:
    server = _SlowServer()
    events = BackgroundEvents(server)
    events.post(_body("a"), type_="Normal", reason="Validated", message="m")
    events.post(_body("b"), type_="Normal", reason="Executed", message="m")
    assert server.posted == []  # both returned; neither was sent yet
    server.open.set()
    assert events.flush(DEADLINE)
    assert server.posted == [("a", "Validated"), ("b", "Executed")]
    events.close()


def _opened() -> tuple[_SlowServer, BackgroundEvents]:
    server = _SlowServer()
    server.open.set()
    return server, BackgroundEvents(server)


def test_a_failed_post_does_not_stop_the_ones_after_it() -> None:
    server, events = _opened()
    events.post(_body("a"), type_="Warning", reason="Broken", message="m")
    events.post(_body("b"), type_="Normal", reason="Executed", message="m")
    assert events.flush(DEADLINE)
    assert server.posted == [("b", "Executed")]
    events.close()


def test_a_full_queue_drops_events_and_never_blocks_the_caller() -> None:
    server = _SlowServer()
    events = BackgroundEvents(server, capacity=2)
    for n in range(10):  # the thread holds one, the queue two: the rest are dropped
        events.post(_body(f"p{n}"), type_="Normal", reason="Validated", message="m")
    server.open.set()
    assert events.flush(DEADLINE)
    assert 1 <= len(server.posted) <= 3
    assert server.posted[0] == ("p0", "Validated")
    events.close()


def test_the_object_is_named_as_it_was_when_posted() -> None:
    server = _SlowServer()
    events = BackgroundEvents(server)
    body = _body("before")
    events.post(body, type_="Normal", reason="Validated", message="m")
    body["metadata"]["name"] = "after"
    server.open.set()
    assert events.flush(DEADLINE)
    assert server.posted == [("before", "Validated")]
    events.close()


def test_close_sends_what_is_queued() -> None:
    server, events = _opened()
    events.post(_body("a"), type_="Normal", reason="Validated", message="m")
    events.close()
    assert server.posted == [("a", "Validated")]

"""The floor under every reaction: how long the API server takes to deliver a change by watch.

The bench PATCHes an annotation on a ConfigMap nobody else touches and times from sending the
PATCH to the watch event arriving, as the approval phase times from sending the decision to
seeing the step completed. A controller can only react to what the watch delivered, so
approval latency is reported as a multiple of this, measured in the same run on the same
machine.
"""

from __future__ import annotations

import queue
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from kubernetes import client, config, watch
from urllib3.exceptions import ProtocolError

NAME = "bench-watch-latency"
KEY = "bench.minds.dev/seq"


def measure(kubeconfig: Path, namespace: str, samples: int, timeout: float = 10.0) -> list[float]:
    api = client.CoreV1Api(config.new_client_from_config(str(kubeconfig)))  # type: ignore[no-untyped-call]
    body = client.V1ConfigMap(metadata=client.V1ObjectMeta(name=NAME, annotations={KEY: "0"}))
    created = api.create_namespaced_config_map(namespace, body)
    arrivals: queue.Queue[tuple[str, float]] = queue.Queue()
    stop = threading.Event()
    w = watch.Watch()  # type: ignore[no-untyped-call]
    assert created.metadata is not None
    version = created.metadata.resource_version

    def listen() -> None:
        try:
            for event in w.stream(  # type: ignore[no-untyped-call]
                api.list_namespaced_config_map,
                namespace,
                field_selector=f"metadata.name={NAME}",
                resource_version=version,
                timeout_seconds=int(timeout * (samples + 2)),
            ):
                seq = (event["object"].metadata.annotations or {}).get(KEY, "")
                arrivals.put((seq, time.monotonic()))
                if stop.is_set():
                    return
        except ProtocolError:
            if not stop.is_set():
                raise  # a stream cut while measuring; one cut by the teardown is expected

    listener = threading.Thread(target=listen, name="watch-latency", daemon=True)
    listener.start()
    latencies: list[float] = []
    try:
        for i in range(1, samples + 1):
            sent = time.monotonic()
            api.patch_namespaced_config_map(
                NAME, namespace, {"metadata": {"annotations": {KEY: str(i)}}}
            )
            deadline = time.monotonic() + timeout
            while True:
                seq, at = arrivals.get(timeout=max(0.0, deadline - time.monotonic()))
                if seq == str(i):
                    latencies.append(at - sent)
                    break
    finally:
        stop.set()
        w.stop()  # type: ignore[no-untyped-call]
        api.delete_namespaced_config_map(NAME, namespace)
    return latencies


class Stream:
    """A watch in a thread of its own: each event's object (as JSON) goes to ``seen`` with the
    time it arrived. The bench times reactions from watches, as the controller sees the world,
    not from polls whose interval would add up to one period of error."""

    def __init__(
        self,
        list_call: Callable[..., Any],
        *args: Any,
        seen: Callable[[str, dict[str, Any], float], None],
        **kwargs: Any,
    ) -> None:
        self._call, self._args, self._kwargs, self._seen = list_call, args, kwargs, seen
        self._watch = watch.Watch()  # type: ignore[no-untyped-call]
        self._stopped = threading.Event()
        self._thread = threading.Thread(target=self._listen, name="bench-watch", daemon=True)

    def __enter__(self) -> Stream:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stopped.set()
        self._watch.stop()  # type: ignore[no-untyped-call]

    def _listen(self) -> None:
        try:
            for event in self._watch.stream(  # type: ignore[no-untyped-call]
                self._call, *self._args, **self._kwargs
            ):
                self._seen(event["type"], event["raw_object"], time.monotonic())
        except Exception:
            if not self._stopped.is_set():  # stopping closes the connection under the stream
                raise


class FirstSeen:
    """When each object was first seen, by watch, in the state ``reached`` asks for."""

    def __init__(self, reached: Callable[[dict[str, Any]], bool]) -> None:
        self._reached = reached
        self._seen: dict[str, float] = {}
        self._lock = threading.Lock()

    def __call__(self, type_: str, body: dict[str, Any], arrived: float) -> None:
        if type_ in ("ADDED", "MODIFIED") and self._reached(body):
            with self._lock:
                self._seen.setdefault(body["metadata"]["name"], arrived)

    def at(self, name: str) -> float | None:
        with self._lock:
            return self._seen.get(name)


class Changes:
    """When a value of one object changed, by watch: (arrival, new value), in order."""

    def __init__(self, value: Callable[[dict[str, Any]], object]) -> None:
        self._value = value
        self._changes: list[tuple[float, object]] = []
        self._lock = threading.Lock()

    def __call__(self, type_: str, body: dict[str, Any], arrived: float) -> None:
        value = self._value(body)
        with self._lock:
            if not self._changes or self._changes[-1][1] != value:
                self._changes.append((arrived, value))

    def first_after(self, since: float) -> float | None:
        """The first change that arrived after ``since``."""
        with self._lock:
            return next((at for at, _ in self._changes if at > since), None)

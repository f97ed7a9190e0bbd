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


class FirstSeen:
    """When each Plan was first seen, by watch, in the state ``reached`` asks for: the bench
    times reactions from the watch, as the controller sees the world, not from polls whose
    interval would add up to one period of error."""

    def __init__(
        self,
        api: client.CustomObjectsApi,
        kind: tuple[str, str, str],
        namespace: str,
        selector: str,
        reached: Callable[[dict[str, Any]], bool],
    ) -> None:
        self._api, self._kind, self._namespace = api, kind, namespace
        self._selector, self._reached = selector, reached
        self._seen: dict[str, float] = {}
        self._lock = threading.Lock()
        self._watch = watch.Watch()  # type: ignore[no-untyped-call]
        self._stopped = threading.Event()
        self._thread = threading.Thread(target=self._listen, name="first-seen", daemon=True)

    def __enter__(self) -> FirstSeen:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stopped.set()
        self._watch.stop()  # type: ignore[no-untyped-call]

    def at(self, name: str) -> float | None:
        with self._lock:
            return self._seen.get(name)

    def _listen(self) -> None:
        try:
            self._stream()
        except Exception:
            if not self._stopped.is_set():  # stopping closes the connection under the stream
                raise

    def _stream(self) -> None:
        group, version, plural = self._kind
        for event in self._watch.stream(  # type: ignore[no-untyped-call]
            self._api.list_namespaced_custom_object,
            group,
            version,
            self._namespace,
            plural,
            label_selector=self._selector,
        ):
            arrived = time.monotonic()
            body = event["object"]
            if event["type"] in ("ADDED", "MODIFIED") and self._reached(body):
                with self._lock:
                    self._seen.setdefault(body["metadata"]["name"], arrived)

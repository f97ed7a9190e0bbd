"""The chain an approved action cannot skip, timed bare: what approval latency is made of.

An approved restart is carried out only after a chain of round trips, each one there for a
safety rule (docs/execution.md, docs/agency.md):

1. the person's decision reaches the controller by watch;
2. the step is claimed: a conditional write of the Plan's status (the lease);
3. the decision and the write-ahead row are committed together, under the lock of the Mind's
   journal: nothing acts on a decision that is not in the ledger, and a crash can never repeat
   the action;
4. the restart PATCH, conditional on the resourceVersion of the workload as its watch last
   delivered it (a paused Deployment is refused, not patched, so what was checked must be what
   is patched), and its watch event reaching whoever observes the workload. The workload's
   goal watches it, so no GET precedes the PATCH; when the watch is behind the server, the
   PATCH is refused with a conflict and the workload is read by a GET and patched again, as
   the driver does (counted as a stage of its own).

The bench does exactly these, one after the other, with the controller's own clients (its
ServiceAccount, its database role, the real ledger adapter) and none of its logic, and times
the whole chain per sample. Approval latency measured in the same run, divided by this, is
what the controller adds on top of the round trips themselves.
"""

from __future__ import annotations

import queue
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from kubernetes import client, config, watch
from kubernetes.client.exceptions import ApiException
from urllib3.exceptions import ProtocolError

from minds.adapters.drivers.kubernetes import FIELD_MANAGER, STRATEGIC_MERGE, restart_patch
from minds.adapters.kube.client import api_client
from minds.adapters.ledger import Ledger
from minds.domain.ledger import EventRecord, SubjectRef, idempotency_key
from minds.domain.resources.kinds import PLAN

NAME = "bench-floor-decision"
KEY = "bench.minds.dev/floor"
CONFLICT = 409


@dataclass
class Floor:
    """Seconds per bare chain, and per stage in the order they ran."""

    chains: list[float] = field(default_factory=list)
    stages: dict[str, list[float]] = field(default_factory=dict)


class _Laps:
    """Times one chain: each call records the time since the previous one under a stage."""

    def __init__(self, stages: dict[str, list[float]]) -> None:
        self._stages = stages
        self._start = self._last = time.monotonic()

    def __call__(self, stage: str) -> None:
        now = time.monotonic()
        self._stages.setdefault(stage, []).append(now - self._last)
        self._last = now

    def total(self) -> float:
        return self._last - self._start


class _Arrivals:
    """One watch in a thread of its own: (resourceVersion, arrival) for each event."""

    def __init__(self, list_call: Callable[..., Any], namespace: str, name: str) -> None:
        self._call, self._namespace, self._name = list_call, namespace, name
        self._queue: queue.Queue[tuple[str, float]] = queue.Queue()
        self._watch = watch.Watch()  # type: ignore[no-untyped-call]
        self._stopped = threading.Event()
        #: The resourceVersion of the newest event, as a watch store holds it.
        self.latest = ""

    def listen(self, since: str) -> None:
        try:
            for event in self._watch.stream(  # type: ignore[no-untyped-call]
                self._call,
                self._namespace,
                field_selector=f"metadata.name={self._name}",
                resource_version=since,
            ):
                version = event["object"].metadata.resource_version
                self.latest = version
                self._queue.put((version, time.monotonic()))
        except ProtocolError:
            if not self._stopped.is_set():
                raise

    def arrival_of(self, version: str, timeout: float) -> float:
        deadline = time.monotonic() + timeout
        while True:
            seen, at = self._queue.get(timeout=max(0.0, deadline - time.monotonic()))
            if seen == version:
                return at

    def stop(self) -> None:
        self._stopped.set()
        self._watch.stop()  # type: ignore[no-untyped-call]


@contextmanager
def _watching(
    list_call: Callable[..., Any], namespace: str, name: str, since: str
) -> Iterator[_Arrivals]:
    arrivals = _Arrivals(list_call, namespace, name)
    arrivals.latest = since
    thread = threading.Thread(target=arrivals.listen, args=(since,), daemon=True)
    thread.start()
    try:
        yield arrivals
    finally:
        arrivals.stop()


def _version(obj: Any) -> str:
    """The resourceVersion of a typed object the client returned."""
    return str(obj.metadata.resource_version)


def _object(value: object) -> dict[str, Any]:
    """The client types custom objects as ``object``; they are JSON objects."""
    assert isinstance(value, dict), type(value)
    return value


def _row(namespace: str, mind: str, kind: str, seq: int) -> EventRecord:
    return EventRecord(
        mind=mind,
        namespace=namespace,
        type=f"bench_floor_{kind}",
        subject=SubjectRef(kind="Bench", name=NAME),
        payload={"sample": seq},
        occurred_at=datetime.now(UTC),
        idempotency_key=idempotency_key("bench-floor", kind, f"{seq}-{uuid.uuid4()}"),
    )


def _restart(
    apps: client.AppsV1Api,
    deployment: str,
    namespace: str,
    stamp: datetime,
    watched: str,
    lap: _Laps,
) -> Any:
    """The restart PATCH on the body the watch delivered last; a GET and a PATCH on what it
    read when the watch is behind the server (the driver's own fallback)."""
    patch = restart_patch(stamp)
    try:
        return apps.patch_namespaced_deployment(
            deployment,
            namespace,
            {**patch, "metadata": {"resourceVersion": watched}},
            field_manager=FIELD_MANAGER,
            _content_type=STRATEGIC_MERGE,
        )
    except ApiException as error:
        if error.status != CONFLICT:
            raise
    lap("restart PATCH refused: the watch was behind")
    current = apps.read_namespaced_deployment(deployment, namespace)
    lap("Deployment GET (after a conflict)")
    return apps.patch_namespaced_deployment(
        deployment,
        namespace,
        {**patch, "metadata": {"resourceVersion": _version(current)}},
        field_manager=FIELD_MANAGER,
        _content_type=STRATEGIC_MERGE,
    )


def measure(
    *,
    kubeconfig: Path,
    controller_kubeconfig: Path,
    database_url: str,
    namespace: str,
    mind: str,
    plan: str,
    deployment: str,
    samples: int,
    timeout: float = 10.0,
) -> Floor:
    """Seconds per bare chain, and per stage of it, one sample after another. ``plan`` is a
    Plan whose status may be rewritten (a finished one), ``deployment`` one the bench may
    restart."""
    person = client.CoreV1Api(config.new_client_from_config(str(kubeconfig)))  # type: ignore[no-untyped-call]
    controller = api_client(str(controller_kubeconfig))
    plans = client.CustomObjectsApi(controller)
    apps = client.AppsV1Api(controller)
    watcher = client.AppsV1Api(config.new_client_from_config(str(kubeconfig)))  # type: ignore[no-untyped-call]
    ledger = Ledger.from_url(database_url)
    decision = person.create_namespaced_config_map(
        namespace, client.V1ConfigMap(metadata=client.V1ObjectMeta(name=NAME))
    )
    # The controller holds the Plan from its watch; only the write is on the chain.
    body = _object(
        plans.get_namespaced_custom_object(PLAN.group, PLAN.version, namespace, PLAN.plural, plan)
    )
    target = watcher.read_namespaced_deployment(deployment, namespace)
    floor = Floor()
    # A restart stamp has a resolution of one second and an unchanged one writes nothing, so
    # each sample restarts under a stamp of its own.
    stamped = datetime.now(UTC) + timedelta(days=1)
    try:
        with (
            _watching(
                person.list_namespaced_config_map,
                namespace,
                NAME,
                _version(decision),
            ) as decided,
            _watching(
                watcher.list_namespaced_deployment,
                namespace,
                deployment,
                _version(target),
            ) as restarted,
        ):
            for seq in range(1, samples + 1):
                lap = _Laps(floor.stages)
                patched = person.patch_namespaced_config_map(
                    NAME, namespace, {"metadata": {"annotations": {KEY: str(seq)}}}
                )
                decided.arrival_of(_version(patched), timeout)
                lap("decision PATCH -> watch event")
                status = dict(body.get("status") or {})
                status["reason"] = f"bench floor claim {seq}"
                body = _object(
                    plans.replace_namespaced_custom_object_status(
                        PLAN.group,
                        PLAN.version,
                        namespace,
                        PLAN.plural,
                        plan,
                        {**body, "status": status},
                    )
                )
                lap("claim (Plan status PUT)")
                with ledger.transaction():
                    ledger.hold_journal(namespace, mind)
                    ledger.append_events(
                        [
                            _row(namespace, mind, "decision", seq),
                            _row(namespace, mind, "write_ahead", seq),
                        ]
                    )
                lap("decision and write-ahead rows (one transaction)")
                done = _restart(
                    apps,
                    deployment,
                    namespace,
                    stamped + timedelta(seconds=seq),
                    restarted.latest,
                    lap,
                )
                lap("restart PATCH")
                restarted.arrival_of(_version(done), timeout)
                lap("restart's watch event")
                floor.chains.append(lap.total())
    finally:
        person.delete_namespaced_config_map(NAME, namespace)
        ledger.engine.dispose()
    return floor

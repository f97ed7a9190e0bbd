"""Kubernetes workloads: `service.status`, `service.restart` and `logs.query`.

Objects are read as plain JSON (`_preload_content=False`) and judged by pure functions of
that JSON, so the rules below are unit-tested on dictionaries and the e2e tests prove the
wiring against a real API server.

**States** (`service.status`), decided in this order:

- *stopped*: zero replicas desired (a DaemonSet: zero nodes to run on) and none left running;
- *progressing*: the workload controller has not yet observed the latest spec
  (`observedGeneration < generation`), replicas are being added or removed, or a rollout is
  under way (not every replica updated yet, old replicas still terminating, or a Deployment's
  `Progressing` condition still reporting a new ReplicaSet rolling out);
- *degraded*: a Deployment's rollout exceeded its progress deadline or is paused half-way,
  or the rollout finished but fewer replicas are ready or available than desired;
- *running*: every desired replica updated, ready and available.

A missing workload is `ok=False` with `state: absent`.

**Restart** is what `kubectl rollout restart` does: the pod template's
`kubectl.kubernetes.io/restartedAt` annotation is set to now, and the workload controller
replaces the pods. Success means the API server accepted that request; it never means the
pods came back healthy, and the summary says so. A dry run sends the same patch with
`dryRun=All`, so RBAC and admission are checked and nothing is stored.

**Logs** come from the pods the workload's selector matches, every container, newest lines
last, masked unless masking is turned off. The filter is applied to the masked text, so it
cannot be used to probe for a masked value.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from enum import StrEnum
from typing import Any, Final, cast

import urllib3
from kubernetes import client
from kubernetes.client.exceptions import ApiException
from pydantic import JsonValue

from minds.adapters.drivers.masking import LineMasker, MaskCounts, mask_line, merge_counts
from minds.domain.base import Model
from minds.domain.capabilities.registry import (
    LogsQueryParameters,
    WorkloadKind,
    WorkloadParameters,
)
from minds.domain.capabilities.results import DriverResult
from minds.domain.wakeups import WORKLOAD_PLURALS

STATUS: Final = "service.status"
RESTART: Final = "service.restart"
LOGS: Final = "logs.query"

RESTARTED_AT: Final = "kubectl.kubernetes.io/restartedAt"
RESTART_SUMMARY: Final = "restart requested (health not yet verified)"
FIELD_MANAGER: Final = "minds-controller"
STRATEGIC_MERGE: Final = "application/strategic-merge-patch+json"

MAX_PODS: Final = 500
"""Pods listed per workload (for restarts counted and logs read)."""
MAX_LOG_PODS: Final = 20
"""Pods whose logs are read per query; more are named in the output but not read."""
LOG_BYTES_PER_CONTAINER: Final = 1024 * 1024
LOG_BYTES_TOTAL: Final = 4 * 1024 * 1024
LOG_TEXT_FIELD_LINES: Final = 200
REQUEST_TIMEOUT: Final = 15.0

RBAC_RULES: Final[tuple[Mapping[str, Sequence[str]], ...]] = (
    # Read the workload; patch its pod template to restart it (a dry run needs patch too).
    {
        "apiGroups": ["apps"],
        "resources": ["deployments", "statefulsets", "daemonsets"],
        "verbs": ["get", "patch"],
    },
    # Find the workload's pods (restart counts, logs) and read their logs.
    {"apiGroups": [""], "resources": ["pods"], "verbs": ["list"]},
    {"apiGroups": [""], "resources": ["pods/log"], "verbs": ["get"]},
)
"""Exactly what these drivers need from the API; the e2e tests run them under a Role with
these rules and nothing else."""

Clock = Callable[[], datetime]
Json = dict[str, Any]
#: The body a watch last told of a workload (plural, namespace, name), None when unwatched.
Watched = Callable[[str, str, str], Json | None]


class WorkloadState(StrEnum):
    RUNNING = "running"
    PROGRESSING = "progressing"
    DEGRADED = "degraded"
    STOPPED = "stopped"
    ABSENT = "absent"


@dataclass(frozen=True, slots=True)
class Health:
    """What a workload's object says about it."""

    state: WorkloadState
    reason: str
    desired: int
    current: int
    updated: int
    ready: int
    available: int
    conditions: list[Json] = field(default_factory=list)


# --- pure rules ---------------------------------------------------------------------------


def assess(kind: WorkloadKind, obj: Mapping[str, Any]) -> Health:
    """The state of a Deployment, StatefulSet or DaemonSet from its JSON."""
    if kind is WorkloadKind.DEPLOYMENT:
        return _assess_deployment(obj)
    if kind is WorkloadKind.STATEFUL_SET:
        return _assess_stateful_set(obj)
    return _assess_daemon_set(obj)


def _int(mapping: Mapping[str, Any], key: str, default: int = 0) -> int:
    value = mapping.get(key)
    return int(value) if isinstance(value, int) else default


def _parts(obj: Mapping[str, Any]) -> tuple[Json, Json, int, int]:
    spec = obj.get("spec") or {}
    status = obj.get("status") or {}
    generation = _int(obj.get("metadata") or {}, "generation")
    observed = _int(status, "observedGeneration")
    return spec, status, generation, observed


def _conditions(status: Mapping[str, Any]) -> list[Json]:
    keys = ("type", "status", "reason", "message", "lastTransitionTime")
    return [
        {key: condition[key] for key in keys if key in condition}
        for condition in status.get("conditions") or []
        if isinstance(condition, dict)
    ]


def _condition(conditions: Sequence[Json], type_: str) -> Json | None:
    return next((c for c in conditions if c.get("type") == type_), None)


def _assess_deployment(obj: Mapping[str, Any]) -> Health:
    spec, status, generation, observed = _parts(obj)
    conditions = _conditions(status)
    counts = {
        "desired": _int(spec, "replicas", 1),
        "current": _int(status, "replicas"),
        "updated": _int(status, "updatedReplicas"),
        "ready": _int(status, "readyReplicas"),
        "available": _int(status, "availableReplicas"),
    }
    desired, current, updated = counts["desired"], counts["current"], counts["updated"]
    ready, available = counts["ready"], counts["available"]
    progressing = _condition(conditions, "Progressing") or {}

    def health(state: WorkloadState, reason: str) -> Health:
        return Health(state, reason, conditions=conditions, **counts)

    if desired == 0:
        if current == 0:
            return health(WorkloadState.STOPPED, "scaled to zero replicas")
        return health(WorkloadState.PROGRESSING, f"scaling down: {current} replicas remain")
    if observed < generation:
        return health(
            WorkloadState.PROGRESSING,
            f"generation {generation} not yet observed by the controller (at {observed})",
        )
    if progressing.get("reason") == "ProgressDeadlineExceeded":
        return health(WorkloadState.DEGRADED, "the rollout exceeded its progress deadline")
    fully_ready = ready >= desired and available >= desired
    if spec.get("paused") and not (fully_ready and updated >= desired):
        return health(WorkloadState.DEGRADED, "the rollout is paused before completing")
    if updated < desired:
        return health(WorkloadState.PROGRESSING, f"rollout: {updated}/{desired} replicas updated")
    if current > updated:
        return health(
            WorkloadState.PROGRESSING, f"rollout: {current - updated} old replicas terminating"
        )
    if fully_ready:
        return health(WorkloadState.RUNNING, f"{ready}/{desired} replicas ready and available")
    if progressing.get("status") == "True" and progressing.get("reason") != (
        "NewReplicaSetAvailable"
    ):
        return health(
            WorkloadState.PROGRESSING,
            f"rollout: waiting for replicas to become available ({available}/{desired})",
        )
    return health(
        WorkloadState.DEGRADED, f"{ready}/{desired} ready, {available}/{desired} available"
    )


def _assess_stateful_set(obj: Mapping[str, Any]) -> Health:
    spec, status, generation, observed = _parts(obj)
    conditions = _conditions(status)
    ready = _int(status, "readyReplicas")
    counts = {
        "desired": _int(spec, "replicas", 1),
        "current": _int(status, "replicas"),
        "updated": _int(status, "updatedReplicas"),
        "ready": ready,
        # Older API servers do not report availableReplicas; readiness is the next best.
        "available": _int(status, "availableReplicas", ready),
    }
    desired, current, updated = counts["desired"], counts["current"], counts["updated"]

    def health(state: WorkloadState, reason: str) -> Health:
        return Health(state, reason, conditions=conditions, **counts)

    if desired == 0:
        if current == 0:
            return health(WorkloadState.STOPPED, "scaled to zero replicas")
        return health(WorkloadState.PROGRESSING, f"scaling down: {current} replicas remain")
    if observed < generation:
        return health(
            WorkloadState.PROGRESSING,
            f"generation {generation} not yet observed by the controller (at {observed})",
        )
    if current != desired:
        return health(WorkloadState.PROGRESSING, f"scaling: {current}/{desired} replicas")
    strategy = spec.get("updateStrategy") or {}
    if strategy.get("type", "RollingUpdate") == "RollingUpdate":
        # A partition holds the replicas below it back on purpose; they are not "behind".
        partition = _int(strategy.get("rollingUpdate") or {}, "partition")
        target = max(desired - partition, 0)
        revision_behind = partition == 0 and status.get("currentRevision") != status.get(
            "updateRevision"
        )
        if updated < target or (revision_behind and status.get("updateRevision")):
            return health(
                WorkloadState.PROGRESSING, f"rollout: {updated}/{target} replicas updated"
            )
    if ready >= desired and counts["available"] >= desired:
        return health(WorkloadState.RUNNING, f"{ready}/{desired} replicas ready and available")
    return health(
        WorkloadState.DEGRADED,
        f"{ready}/{desired} ready, {counts['available']}/{desired} available",
    )


def _assess_daemon_set(obj: Mapping[str, Any]) -> Health:
    spec, status, generation, observed = _parts(obj)
    conditions = _conditions(status)
    counts = {
        "desired": _int(status, "desiredNumberScheduled"),
        "current": _int(status, "currentNumberScheduled"),
        "updated": _int(status, "updatedNumberScheduled"),
        "ready": _int(status, "numberReady"),
        "available": _int(status, "numberAvailable"),
    }
    desired, updated, ready = counts["desired"], counts["updated"], counts["ready"]

    def health(state: WorkloadState, reason: str) -> Health:
        return Health(state, reason, conditions=conditions, **counts)

    # A DaemonSet's desired count is itself status, so an unobserved spec comes first.
    if observed < generation:
        return health(
            WorkloadState.PROGRESSING,
            f"generation {generation} not yet observed by the controller (at {observed})",
        )
    if desired == 0:
        if counts["current"] == 0:
            return health(WorkloadState.STOPPED, "no nodes to run on")
        return health(WorkloadState.PROGRESSING, f"removing: {counts['current']} pods remain")
    strategy = (spec.get("updateStrategy") or {}).get("type", "RollingUpdate")
    if strategy == "RollingUpdate" and updated < desired:
        return health(WorkloadState.PROGRESSING, f"rollout: {updated}/{desired} pods updated")
    if ready >= desired and counts["available"] >= desired:
        return health(WorkloadState.RUNNING, f"{ready}/{desired} pods ready and available")
    return health(
        WorkloadState.DEGRADED,
        f"{ready}/{desired} ready, {counts['available']}/{desired} available",
    )


def label_selector(selector: Mapping[str, Any] | None) -> str:
    """A `LabelSelector` as the query string the API takes. Empty selects everything, which
    is never what a workload means, so it is refused."""
    selector = selector or {}
    terms = [f"{key}={value}" for key, value in sorted((selector.get("matchLabels") or {}).items())]
    for expression in selector.get("matchExpressions") or []:
        key, operator = expression["key"], expression["operator"]
        values = ",".join(sorted(expression.get("values") or []))
        if operator == "In":
            terms.append(f"{key} in ({values})")
        elif operator == "NotIn":
            terms.append(f"{key} notin ({values})")
        elif operator == "Exists":
            terms.append(key)
        elif operator == "DoesNotExist":
            terms.append(f"!{key}")
        else:
            raise ValueError(f"unknown selector operator {operator!r}")
    if not terms:
        raise ValueError("the workload has an empty selector")
    return ",".join(terms)


def restart_patch(now: datetime) -> Json:
    """The patch `kubectl rollout restart` sends (in UTC)."""
    stamp = now.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    return {"spec": {"template": {"metadata": {"annotations": {RESTARTED_AT: stamp}}}}}


def restart_count(pods: Iterable[Mapping[str, Any]]) -> int:
    """Container restarts across `pods` (init containers included: a crash-looping init
    container is as much a sign of trouble)."""
    total = 0
    for pod in pods:
        status = pod.get("status") or {}
        for key in ("containerStatuses", "initContainerStatuses"):
            for container in status.get(key) or []:
                total += _int(container, "restartCount")
    return total


@dataclass(frozen=True, slots=True)
class LogChunk:
    """The raw output of one container's log request (with kubelet timestamps)."""

    pod: str
    container: str
    text: str


@dataclass(frozen=True, slots=True)
class LogSelection:
    lines: list[str]
    masked: MaskCounts
    matched: int
    """Lines that passed the filter, before the limit."""


def select_log_lines(
    chunks: Iterable[LogChunk], *, limit: int, filter_text: str | None, mask: bool
) -> LogSelection:
    """The newest `limit` lines across containers, oldest first, each masked (unless `mask`
    is off), filtered on its masked text, and prefixed with its timestamp and source."""
    entries: list[tuple[tuple[str, str], str, MaskCounts]] = []
    for chunk in chunks:
        masker = LineMasker()
        for raw in chunk.text.splitlines():
            stamp, _, message = raw.partition(" ")
            if not _looks_like_timestamp(stamp):
                stamp, message = "", raw
            counts: MaskCounts = {}
            if mask:
                message, counts = mask_line(message, masker=masker)
            if filter_text and filter_text not in message:
                continue
            line = f"{stamp} {chunk.pod}/{chunk.container}: {message}".lstrip()
            entries.append((_timestamp_key(stamp), line, counts))
    # Stable sort: lines of one container keep their order when timestamps tie or are absent.
    entries.sort(key=lambda entry: entry[0])
    kept = entries[-limit:] if limit > 0 else []
    masked: MaskCounts = {}
    for _, _, counts in kept:
        merge_counts(masked, counts)
    return LogSelection(lines=[line for _, line, _ in kept], masked=masked, matched=len(entries))


def _looks_like_timestamp(stamp: str) -> bool:
    return len(stamp) >= 20 and stamp[4] == "-" and stamp[10] == "T" and stamp.endswith("Z")


def _timestamp_key(stamp: str) -> tuple[str, str]:
    """RFC 3339 with nanoseconds whose trailing zeros Go drops: compare the fraction padded."""
    if not stamp:
        return ("", "")
    whole, _, fraction = stamp.rstrip("Z").partition(".")
    return (whole, fraction.ljust(9, "0"))


# --- the driver ---------------------------------------------------------------------------


class _Failed(Exception):
    """An API call failed; carries the one-line reason for the result."""


class KubernetesDriver:
    """Workload capabilities through the Kubernetes API, as the controller's identity."""

    capabilities: Final = frozenset({STATUS, RESTART, LOGS})

    def __init__(
        self,
        api: client.ApiClient,
        *,
        clock: Clock | None = None,
        request_timeout: float = REQUEST_TIMEOUT,
        watched: Watched | None = None,
    ) -> None:
        self._apps = client.AppsV1Api(api)
        self._core = client.CoreV1Api(api)
        self._clock = clock or (lambda: datetime.now(UTC))
        self._timeout = request_timeout
        self._watched = watched or _unwatched

    def supports_dry_run(self, capability: str) -> bool:
        return capability == RESTART

    def invoke(
        self,
        capability: str,
        parameters: Model,
        *,
        mind_allowed_hosts: Sequence[str] = (),
        dry_run: bool = False,
    ) -> DriverResult:
        if capability == STATUS:
            assert isinstance(parameters, WorkloadParameters)
            return self.status(parameters)
        if capability == RESTART:
            assert isinstance(parameters, WorkloadParameters)
            return self.restart(parameters, dry_run=dry_run)
        if capability == LOGS:
            assert isinstance(parameters, LogsQueryParameters)
            return self.logs(parameters)
        raise LookupError(f"the Kubernetes driver does not serve {capability}")

    # -- service.status --

    def status(self, target: WorkloadParameters) -> DriverResult:
        try:
            obj = self._read(target)
            if obj is None:
                return _absent(target, observed=True)
            health = assess(target.kind, obj)
            pods = self._pods(target.namespace, obj)
        except _Failed as failed:
            return DriverResult.failure(str(failed))
        restarts = restart_count(pods)
        fields = {
            "state": health.state.value,
            "ready": health.state is WorkloadState.RUNNING,
            "readyReplicas": health.ready,
            "desiredReplicas": health.desired,
            "availableReplicas": health.available,
            "restarts": restarts,
        }
        status = obj.get("status") or {}
        return DriverResult.success(
            f"{_name(target)} is {health.state.value}: {health.reason}",
            fields=fields,
            output={
                **_identity(target),
                "state": health.state.value,
                "reason": health.reason,
                "generation": _int(obj.get("metadata") or {}, "generation"),
                "observedGeneration": _int(status, "observedGeneration"),
                "replicas": {
                    "desired": health.desired,
                    "current": health.current,
                    "updated": health.updated,
                    "ready": health.ready,
                    "available": health.available,
                },
                "restarts": restarts,
                "pods": len(pods),
                "conditions": list(health.conditions),
            },
        )

    # -- service.restart --

    def restart(self, target: WorkloadParameters, *, dry_run: bool = False) -> DriverResult:
        """Request a rollout restart; with `dry_run`, only ask the server whether it would.

        A workload a goal watches is read from that watch, and the patch carries the body's
        resourceVersion: the API server applies it only to exactly what was checked (not
        paused, its generation). A copy the watch has not caught up with yet is refused with a
        conflict, and the workload is then read as an unwatched one is, by a GET."""
        plural = WORKLOAD_PLURALS[target.kind.value]
        try:
            watched = self._watched(plural, target.namespace, target.name)
            if watched is not None:
                try:
                    return self._restart(target, watched, dry_run=dry_run, precondition=True)
                except _Conflict:
                    pass  # the watch is behind the server: read it as an unwatched one
            return self._restart(target, self._read(target), dry_run=dry_run, precondition=False)
        except _Failed as failed:
            return DriverResult.failure(str(failed))

    def _restart(
        self, target: WorkloadParameters, obj: Json | None, *, dry_run: bool, precondition: bool
    ) -> DriverResult:
        if obj is None:
            return _absent(target)
        if target.kind is WorkloadKind.DEPLOYMENT and (obj.get("spec") or {}).get("paused"):
            return DriverResult.failure(
                f"{_name(target)} is paused; resume its rollout before restarting it"
            )
        patch = restart_patch(self._clock())
        body: Json = patch
        if precondition:
            version = (obj.get("metadata") or {}).get("resourceVersion")
            body = {**patch, "metadata": {"resourceVersion": version}}
        patched = self._call(
            _name(target),
            self._patcher(target.kind),
            target.name,
            target.namespace,
            body,
            dry_run="All" if dry_run else None,
            field_manager=FIELD_MANAGER,
            _content_type=STRATEGIC_MERGE,
        )
        stamp = patch["spec"]["template"]["metadata"]["annotations"][RESTARTED_AT]
        strategy = ((obj.get("spec") or {}).get("updateStrategy") or {}).get("type")
        output = {
            **_identity(target),
            "restartedAt": stamp,
            "dryRun": dry_run,
            "generation": _int(patched.get("metadata") or {}, "generation"),
            "previousGeneration": _int(obj.get("metadata") or {}, "generation"),
        }
        if strategy == "OnDelete":
            output["note"] = "updateStrategy OnDelete: pods restart only when they are deleted"
        if dry_run:
            summary = f"dry run: the API server would accept a restart of {_name(target)}"
        else:
            summary = RESTART_SUMMARY
        return DriverResult.success(summary, output=output)

    # -- logs.query --

    def logs(self, query: LogsQueryParameters) -> DriverResult:
        try:
            obj = self._read(query)
            if obj is None:
                return _absent(query)
            pods = sorted(self._pods(query.namespace, obj), key=_pod_name)
        except _Failed as failed:
            return DriverResult.failure(str(failed))
        read_pods = pods[:MAX_LOG_PODS]
        chunks, errors = self._log_chunks(query, read_pods)
        selection = select_log_lines(
            chunks, limit=query.limit, filter_text=query.filter, mask=query.mask
        )
        return DriverResult.success(
            _logs_summary(query, len(pods), selection, errors),
            fields={
                "lineCount": len(selection.lines),
                "text": "\n".join(selection.lines[-LOG_TEXT_FIELD_LINES:]),
            },
            output={
                **_identity(query),
                "selector": _selector_of(obj),
                "pods": cast(list[JsonValue], [_pod_name(pod) for pod in pods]),
                "podsRead": len(read_pods),
                "lines": cast(list[JsonValue], selection.lines),
                "matched": selection.matched,
                "masking": query.mask,
                "masked": dict(selection.masked),
                "errors": cast(list[JsonValue], errors),
            },
        )

    def _log_chunks(
        self, query: LogsQueryParameters, pods: Sequence[Json]
    ) -> tuple[list[LogChunk], list[Json]]:
        chunks: list[LogChunk] = []
        errors: list[Json] = []
        budget = LOG_BYTES_TOTAL
        for pod in pods:
            name = _pod_name(pod)
            for container in (pod.get("spec") or {}).get("containers") or []:
                if budget <= 0:
                    errors.append({"pod": name, "error": "log byte budget exhausted"})
                    return chunks, errors
                try:
                    response = self._call(
                        f"logs of pod {query.namespace}/{name}",
                        self._core.read_namespaced_pod_log,
                        name,
                        query.namespace,
                        container=container["name"],
                        since_seconds=query.since_seconds,
                        # With a filter the newest matching lines may be older than the
                        # newest `limit` lines, so the whole window is read (byte-bounded).
                        tail_lines=None if query.filter else query.limit,
                        limit_bytes=min(LOG_BYTES_PER_CONTAINER, budget),
                        timestamps=True,
                        raw=True,
                    )
                except _Failed as failed:
                    errors.append(
                        {"pod": name, "container": container["name"], "error": str(failed)}
                    )
                    continue
                text = response.decode("utf-8", errors="replace")
                budget -= len(response)
                chunks.append(LogChunk(name, container["name"], text))
        return chunks, errors

    # -- API access --

    def _patcher(self, kind: WorkloadKind) -> Callable[..., Any]:
        return {
            WorkloadKind.DEPLOYMENT: self._apps.patch_namespaced_deployment,
            WorkloadKind.STATEFUL_SET: self._apps.patch_namespaced_stateful_set,
            WorkloadKind.DAEMON_SET: self._apps.patch_namespaced_daemon_set,
        }[kind]

    def _reader(self, kind: WorkloadKind) -> Callable[..., Any]:
        return {
            WorkloadKind.DEPLOYMENT: self._apps.read_namespaced_deployment,
            WorkloadKind.STATEFUL_SET: self._apps.read_namespaced_stateful_set,
            WorkloadKind.DAEMON_SET: self._apps.read_namespaced_daemon_set,
        }[kind]

    def _read(self, target: WorkloadParameters) -> Json | None:
        """The workload's JSON, or None when it does not exist."""
        try:
            obj: Json = self._call(
                _name(target), self._reader(target.kind), target.name, target.namespace
            )
        except _NotFound:
            return None
        return obj

    def _pods(self, namespace: str, workload: Mapping[str, Any]) -> list[Json]:
        try:
            selector = _selector_of(workload)
        except ValueError as error:
            raise _Failed(f"cannot select the workload's pods: {error}") from error
        listed = self._call(
            f"pods of {namespace} ({selector})",
            self._core.list_namespaced_pod,
            namespace,
            label_selector=selector,
            limit=MAX_PODS,
        )
        return [pod for pod in listed.get("items") or [] if isinstance(pod, dict)]

    def _call(
        self, what: str, method: Callable[..., Any], *args: Any, raw: bool = False, **kwargs: Any
    ) -> Any:
        """Call the API and return the decoded JSON (or the raw bytes); map failures to one
        line that says what could not be done and why."""
        try:
            response = method(
                *args, _preload_content=False, _request_timeout=self._timeout, **kwargs
            )
            data: bytes = response.data
        except ApiException as error:
            if error.status == 404:
                raise _NotFound(what) from error
            if error.status == 409:
                raise _Conflict(_api_error(what, error)) from error
            raise _Failed(_api_error(what, error)) from error
        except (urllib3.exceptions.HTTPError, OSError) as error:
            raise _Failed(f"cannot reach the API server for {what}: {error}") from error
        if raw:
            return data
        try:
            decoded = json.loads(data)
        except ValueError as error:
            raise _Failed(f"the API server sent invalid JSON for {what}") from error
        if not isinstance(decoded, dict):
            raise _Failed(f"the API server sent an unexpected answer for {what}")
        return decoded


class _NotFound(_Failed):
    pass


class _Conflict(_Failed):
    """A precondition the server checked did not hold: what was read is out of date."""


def _unwatched(plural: str, namespace: str, name: str) -> Json | None:
    return None


def _api_error(what: str, error: ApiException) -> str:
    message = error.reason or ""
    try:
        body = json.loads(error.body or "{}")
        if isinstance(body, dict) and body.get("message"):
            message = str(body["message"])
    except (TypeError, ValueError):
        pass
    labels = {401: "unauthorised", 403: "forbidden", 409: "conflict", 422: "invalid"}
    label = labels.get(error.status or 0, f"API error {error.status}")
    return f"{label} ({what}): {message}"[:500]


def _name(target: WorkloadParameters) -> str:
    return f"{target.kind.value} {target.namespace}/{target.name}"


def _identity(target: WorkloadParameters) -> Json:
    return {"kind": target.kind.value, "namespace": target.namespace, "name": target.name}


def _absent(target: WorkloadParameters, *, observed: bool = False) -> DriverResult:
    """A missing workload; as an observation (`service.status`) its state is `absent`."""
    return DriverResult.failure(
        f"{_name(target)} not found",
        fields={"state": WorkloadState.ABSENT.value, "ready": False} if observed else None,
        output=_identity(target),
    )


def _selector_of(workload: Mapping[str, Any]) -> str:
    return label_selector((workload.get("spec") or {}).get("selector"))


def _pod_name(pod: Mapping[str, Any]) -> str:
    return str((pod.get("metadata") or {}).get("name", ""))


def _logs_summary(
    query: LogsQueryParameters, pod_count: int, selection: LogSelection, errors: Sequence[Json]
) -> str:
    if pod_count == 0:
        return f"no pods of {_name(query)}: no log lines"
    parts = [
        f"{_count(len(selection.lines), 'log line')} from {_count(pod_count, 'pod')} "
        f"of {_name(query)}"
    ]
    if query.filter:
        parts.append(f"{selection.matched} matched the filter")
    if selection.masked:
        masked = ", ".join(f"{count} {kind}" for kind, count in sorted(selection.masked.items()))
        parts.append(f"masked: {masked}")
    elif not query.mask:
        parts.append("unmasked")
    if pod_count > MAX_LOG_PODS:
        parts.append(f"only the first {MAX_LOG_PODS} pods read")
    if errors:
        parts.append(f"{_count(len(errors), 'container')} unreadable")
    return "; ".join(parts)


def _count(number: int, noun: str) -> str:
    return f"{number} {noun}" if number == 1 else f"{number} {noun}s"

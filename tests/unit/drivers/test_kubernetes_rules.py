"""The Kubernetes driver's pure rules: workload states, pod selection, restarts, log lines.

The devcluster runs no kubelets, so real pod logs cannot be produced there; the log path
(selection across pods and containers, ordering, limit, filter, masking) is proven here on
the exact text the API returns with `timestamps=true`.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone
from typing import Any

import pytest

from minds.adapters.drivers.kubernetes import (
    RESTARTED_AT,
    LogChunk,
    WorkloadState,
    assess,
    label_selector,
    restart_count,
    restart_patch,
    select_log_lines,
)
from minds.domain.capabilities.registry import WorkloadKind

RUNNING, PROGRESSING, DEGRADED, STOPPED = (
    WorkloadState.RUNNING,
    WorkloadState.PROGRESSING,
    WorkloadState.DEGRADED,
    WorkloadState.STOPPED,
)


def deployment(
    desired: int = 3, generation: int = 2, paused: bool = False, **status: Any
) -> dict[str, Any]:
    spec: dict[str, Any] = {"replicas": desired, "selector": {"matchLabels": {"app": "atlas"}}}
    if paused:
        spec["paused"] = True
    return {"metadata": {"generation": generation}, "spec": spec, "status": status}


def progressing(reason: str, status: str = "True") -> list[dict[str, str]]:
    return [{"type": "Progressing", "status": status, "reason": reason}]


FULL = {
    "observedGeneration": 2,
    "replicas": 3,
    "updatedReplicas": 3,
    "readyReplicas": 3,
    "availableReplicas": 3,
}


@pytest.mark.parametrize(
    ("obj", "state"),
    [
        (deployment(**FULL, conditions=progressing("NewReplicaSetAvailable")), RUNNING),
        (deployment(desired=0, observedGeneration=2), STOPPED),
        (deployment(**{**FULL, "observedGeneration": 1}), PROGRESSING),
        (deployment(**{**FULL, "updatedReplicas": 1}), PROGRESSING),
        (deployment(**{**FULL, "replicas": 4}), PROGRESSING),
        (
            deployment(
                **{**FULL, "readyReplicas": 2, "availableReplicas": 2},
                conditions=progressing("ReplicaSetUpdated"),
            ),
            PROGRESSING,
        ),
        (
            deployment(
                **{**FULL, "readyReplicas": 2, "availableReplicas": 2},
                conditions=progressing("NewReplicaSetAvailable"),
            ),
            DEGRADED,
        ),
        (
            deployment(
                **{**FULL, "updatedReplicas": 1},
                conditions=progressing("ProgressDeadlineExceeded", "False"),
            ),
            DEGRADED,
        ),
        (deployment(paused=True, **{**FULL, "updatedReplicas": 1}), DEGRADED),
        (deployment(paused=True, **FULL), RUNNING),
        (deployment(**{**FULL, "readyReplicas": 0, "availableReplicas": 0}), DEGRADED),
    ],
    ids=[
        "all-ready",
        "scaled-to-zero",
        "generation-not-observed",
        "rollout-updating",
        "old-replicas-terminating",
        "waiting-for-availability",
        "rollout-done-but-unready",
        "deadline-exceeded",
        "paused-half-way",
        "paused-but-complete",
        "nothing-ready",
    ],
)
def test_deployment_states(obj: dict[str, Any], state: WorkloadState) -> None:
    assert assess(WorkloadKind.DEPLOYMENT, obj).state is state


def test_a_deployment_scaling_down_to_zero_is_progressing() -> None:
    obj = deployment(desired=0, observedGeneration=2)
    obj["status"]["replicas"] = 2
    assert assess(WorkloadKind.DEPLOYMENT, obj).state is PROGRESSING


def test_a_deployment_without_replicas_defaults_to_one() -> None:
    obj = deployment(**{**FULL, "replicas": 1, "updatedReplicas": 1, "readyReplicas": 1,
                        "availableReplicas": 1})  # fmt: skip
    del obj["spec"]["replicas"]
    health = assess(WorkloadKind.DEPLOYMENT, obj)
    assert (health.state, health.desired, health.ready) == (RUNNING, 1, 1)


def test_health_reports_counts_and_conditions() -> None:
    conditions = [
        {"type": "Available", "status": "False", "reason": "MinimumReplicasUnavailable",
         "message": "Deployment does not have minimum availability.", "extra": "dropped"},
    ]  # fmt: skip
    health = assess(
        WorkloadKind.DEPLOYMENT,
        deployment(**{**FULL, "readyReplicas": 1, "availableReplicas": 1}, conditions=conditions),
    )
    assert (health.desired, health.ready, health.available, health.updated) == (3, 1, 1, 3)
    assert health.conditions == [{k: v for k, v in conditions[0].items() if k != "extra"}]
    assert "1/3 ready" in health.reason


def stateful_set(
    desired: int = 2, partition: int = 0, strategy: str = "RollingUpdate", **status: Any
) -> dict[str, Any]:
    update: dict[str, Any] = {"type": strategy}
    if partition:
        update["rollingUpdate"] = {"partition": partition}
    return {
        "metadata": {"generation": 1},
        "spec": {"replicas": desired, "updateStrategy": update},
        "status": {"observedGeneration": 1, **status},
    }


STS_FULL = {
    "replicas": 2,
    "readyReplicas": 2,
    "availableReplicas": 2,
    "updatedReplicas": 2,
    "currentRevision": "r1",
    "updateRevision": "r1",
}


@pytest.mark.parametrize(
    ("obj", "state"),
    [
        (stateful_set(**STS_FULL), RUNNING),
        (stateful_set(desired=0), STOPPED),
        (stateful_set(**{**STS_FULL, "replicas": 1}), PROGRESSING),
        (stateful_set(**{**STS_FULL, "updatedReplicas": 1, "updateRevision": "r2"}), PROGRESSING),
        (stateful_set(**{**STS_FULL, "updateRevision": "r2", "updatedReplicas": 2}), PROGRESSING),
        (stateful_set(partition=1, **{**STS_FULL, "updatedReplicas": 1, "updateRevision": "r2"}),
         RUNNING),
        (stateful_set(strategy="OnDelete", **{**STS_FULL, "updatedReplicas": 0,
                                               "updateRevision": "r2"}), RUNNING),
        (stateful_set(**{**STS_FULL, "readyReplicas": 1, "availableReplicas": 1}), DEGRADED),
    ],
    ids=[
        "all-ready",
        "scaled-to-zero",
        "scaling",
        "rolling",
        "revision-behind",
        "partition-holds-back",
        "on-delete-is-not-rolling",
        "unready",
    ],
)  # fmt: skip
def test_stateful_set_states(obj: dict[str, Any], state: WorkloadState) -> None:
    assert assess(WorkloadKind.STATEFUL_SET, obj).state is state


def test_a_stateful_set_without_available_count_uses_readiness() -> None:
    status = {k: v for k, v in STS_FULL.items() if k != "availableReplicas"}
    health = assess(WorkloadKind.STATEFUL_SET, stateful_set(**status))
    assert (health.state, health.available) == (RUNNING, 2)


def daemon_set(generation: int = 1, **status: Any) -> dict[str, Any]:
    return {
        "metadata": {"generation": generation},
        "spec": {"updateStrategy": {"type": "RollingUpdate"}},
        "status": {"observedGeneration": 1, **status},
    }


DS_FULL = {
    "desiredNumberScheduled": 3,
    "currentNumberScheduled": 3,
    "updatedNumberScheduled": 3,
    "numberReady": 3,
    "numberAvailable": 3,
}


@pytest.mark.parametrize(
    ("obj", "state"),
    [
        (daemon_set(**DS_FULL), RUNNING),
        (daemon_set(), STOPPED),
        (daemon_set(generation=2, **DS_FULL), PROGRESSING),
        (daemon_set(**{**DS_FULL, "updatedNumberScheduled": 1}), PROGRESSING),
        (daemon_set(**{**DS_FULL, "numberReady": 2, "numberAvailable": 2}), DEGRADED),
    ],
    ids=["all-ready", "no-nodes", "not-observed", "rolling", "unready"],
)
def test_daemon_set_states(obj: dict[str, Any], state: WorkloadState) -> None:
    assert assess(WorkloadKind.DAEMON_SET, obj).state is state


def test_an_object_without_status_is_judged_not_crashed_on() -> None:
    health = assess(WorkloadKind.DEPLOYMENT, {"metadata": {"generation": 1}, "spec": {}})
    assert health.state is PROGRESSING
    assert assess(WorkloadKind.DAEMON_SET, {"metadata": {}, "spec": {}}).state is STOPPED


# --- pods, restarts -------------------------------------------------------------------------


def test_label_selector_renders_labels_and_expressions() -> None:
    selector = {
        "matchLabels": {"app": "atlas", "tier": "web"},
        "matchExpressions": [
            {"key": "env", "operator": "In", "values": ["prod", "canary"]},
            {"key": "track", "operator": "NotIn", "values": ["legacy"]},
            {"key": "owner", "operator": "Exists"},
            {"key": "debug", "operator": "DoesNotExist"},
        ],
    }
    assert label_selector(selector) == (
        "app=atlas,tier=web,env in (canary,prod),track notin (legacy),owner,!debug"
    )


@pytest.mark.parametrize("selector", [None, {}, {"matchLabels": {}}])
def test_an_empty_selector_is_refused_because_it_selects_every_pod(selector: Any) -> None:
    with pytest.raises(ValueError, match="empty selector"):
        label_selector(selector)


def test_restart_patch_is_what_kubectl_sends_in_utc() -> None:
    now = datetime(2030, 1, 2, 4, 5, 6, tzinfo=timezone(timedelta(hours=1)))
    assert restart_patch(now) == {
        "spec": {"template": {"metadata": {"annotations": {RESTARTED_AT: "2030-01-02T03:05:06Z"}}}}
    }
    assert restart_patch(datetime.now(UTC))["spec"]["template"]["metadata"]["annotations"]


def test_restart_count_sums_containers_and_init_containers() -> None:
    pods = [
        {"status": {"containerStatuses": [{"restartCount": 2}, {"restartCount": 1}]}},
        {"status": {"initContainerStatuses": [{"restartCount": 4}]}},
        {"status": {}},
        {},
    ]
    assert restart_count(pods) == 7


# --- log lines ------------------------------------------------------------------------------


def chunk(pod: str, container: str, *lines: str) -> LogChunk:
    return LogChunk(pod, container, "".join(f"{line}\n" for line in lines))


WEB_0 = chunk(
    "atlas-0",
    "web",
    "2030-01-01T00:00:01.5Z GET / from 203.0.113.7",
    "2030-01-01T00:00:03Z login alice@example.com ok",
    "2030-01-01T00:00:05.000000001Z error: token=abc123 rejected",
)
WEB_1 = chunk(
    "atlas-1",
    "web",
    "2030-01-01T00:00:02Z GET /healthz",
    "2030-01-01T00:00:04.25Z error: card 4111 1111 1111 1111 declined",
)
SIDECAR = chunk("atlas-0", "proxy", "2030-01-01T00:00:01.25Z upstream ready")


def test_lines_from_all_pods_are_merged_oldest_first_and_masked() -> None:
    selection = select_log_lines([WEB_0, WEB_1, SIDECAR], limit=10, filter_text=None, mask=True)
    assert selection.lines == [
        "2030-01-01T00:00:01.25Z atlas-0/proxy: upstream ready",
        "2030-01-01T00:00:01.5Z atlas-0/web: GET / from [ip]",
        "2030-01-01T00:00:02Z atlas-1/web: GET /healthz",
        "2030-01-01T00:00:03Z atlas-0/web: login [email] ok",
        "2030-01-01T00:00:04.25Z atlas-1/web: error: card [card] declined",
        "2030-01-01T00:00:05.000000001Z atlas-0/web: error: token=[secret] rejected",
    ]
    assert selection.masked == {"ip": 1, "email": 1, "card": 1, "secret": 1}
    assert selection.matched == 6


def test_the_limit_keeps_the_newest_lines_and_counts_only_what_is_kept() -> None:
    selection = select_log_lines([WEB_0, WEB_1, SIDECAR], limit=2, filter_text=None, mask=True)
    assert [line.split(" ", 1)[0] for line in selection.lines] == [
        "2030-01-01T00:00:04.25Z",
        "2030-01-01T00:00:05.000000001Z",
    ]
    assert selection.masked == {"card": 1, "secret": 1}


def test_the_filter_applies_to_masked_text_so_it_cannot_probe_masked_values() -> None:
    errors = select_log_lines([WEB_0, WEB_1], limit=10, filter_text="error", mask=True)
    assert len(errors.lines) == 2
    probe = select_log_lines([WEB_0, WEB_1], limit=10, filter_text="alice", mask=True)
    assert probe.lines == []
    assert probe.matched == 0


def test_masking_can_be_turned_off() -> None:
    selection = select_log_lines([WEB_0], limit=10, filter_text="alice", mask=False)
    assert selection.lines == ["2030-01-01T00:00:03Z atlas-0/web: login alice@example.com ok"]
    assert selection.masked == {}


def test_lines_without_timestamps_keep_their_order() -> None:
    plain = LogChunk("p", "c", "first\nsecond 198.51.100.1\nthird")
    selection = select_log_lines([plain], limit=10, filter_text=None, mask=True)
    assert selection.lines == ["p/c: first", "p/c: second [ip]", "p/c: third"]


def test_no_chunks_give_no_lines() -> None:
    selection = select_log_lines([], limit=10, filter_text=None, mask=True)
    assert (selection.lines, selection.masked, selection.matched) == ([], {}, 0)

"""The metric catalogue: every name the controller exports, its type, help and labels.

One table serves the Prometheus adapter (which builds its collectors from it), the generated
catalogue in docs/observability.md and the tests, so a metric is declared once. Labels come
only from a bounded set: a plan, step, approval or person name as a label would grow without
limit, and would put who decided what into a monitoring system that is not the ledger.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from typing import Final

from minds.domain.workqueue import Work

#: The only label names a metric may carry.
LABELS: Final = frozenset(
    {
        "namespace",
        "mind",
        "capability",
        "phase",
        "outcome",
        "reason",
        "resource",
        "kind",
        "version",
        "work",
    }
)


class MetricType(StrEnum):
    GAUGE = "gauge"
    COUNTER = "counter"
    HISTOGRAM = "histogram"


class Scope(StrEnum):
    #: Computed at scrape time from the cluster and the ledger: identical after a restart.
    STATE = "state"
    #: Counted by this process: starts again from zero when the controller restarts.
    PROCESS = "process"


@dataclass(frozen=True)
class MetricSpec:
    name: str
    type: MetricType
    help: str
    labels: tuple[str, ...]
    scope: Scope
    #: Histogram bucket bounds, in the metric's unit.
    buckets: tuple[float, ...] = ()


def _state(name: str, help: str, *labels: str) -> MetricSpec:
    return MetricSpec(f"minds_{name}", MetricType.GAUGE, help, labels, Scope.STATE)


def _process(
    name: str, type: MetricType, help: str, *labels: str, buckets: tuple[float, ...] = ()
) -> MetricSpec:
    return MetricSpec(f"minds_{name}", type, help, labels, Scope.PROCESS, buckets)


#: The labels of a metric about one Mind, first in its label names.
MIND_LABELS: Final = ("namespace", "mind")
_MIND = MIND_LABELS

BUDGET_LIMIT = _state(
    "budget_limit",
    "The Mind's per-plan budget limit for a resource (absent when the resource is unlimited).",
    *_MIND,
    "resource",
)
BUDGET_USED_RATIO = _state(
    "budget_used_ratio",
    "The highest used/limit ratio of a budget resource over the Mind's open plans "
    "(0 when none is open).",
    *_MIND,
    "resource",
)
PLANS_BUDGET_EXHAUSTED = _state(
    "plans_budget_exhausted",
    "Open plans of the Mind with a step blocked on an exhausted budget.",
    *_MIND,
)
ATTENTION_OPEN = _state(
    "attention_open_requests",
    "Pending Approvals (action approvals and capability requests) the Mind asked for.",
    *_MIND,
)
ATTENTION_MAX = _state(
    "attention_max_open_requests",
    "The Mind's operator-attention cap (spec.attention.maxOpenRequests).",
    *_MIND,
)
ATTENTION_WAITING = _state(
    "attention_waiting_at_cap",
    "Steps of the Mind's open plans waiting because the operator-attention cap is reached.",
    *_MIND,
)
ATTENTION_OLDEST = _state(
    "attention_oldest_pending_request_timestamp_seconds",
    "Creation time of the Mind's oldest pending Approval (absent when none is pending).",
    *_MIND,
)
PLANS = _state("plans", "Plans of the Mind by phase.", *_MIND, "phase")
STEPS = _state("steps", "Steps of the Mind's open plans by step status.", *_MIND, "phase")
STEPS_OUTCOME_UNKNOWN = _state(
    "steps_outcome_unknown",
    "Steps blocked because an action's outcome is unknown: a person must check and release.",
    *_MIND,
)
BRIER = _state(
    "calibration_brier_score",
    "Brier score of the Mind's confirmed and refuted predictions (0 is perfect; absent "
    "before any is resolved).",
    *_MIND,
)
PREDICTIONS = _state(
    "predictions",
    "The Mind's predictions by outcome (confirmed, refuted, expired, pending).",
    *_MIND,
    "outcome",
)
LAST_CYCLE = _state(
    "mind_last_cycle_timestamp_seconds",
    "When the Mind's last cycle completed (absent before its first).",
    *_MIND,
)
LEDGER_UP = _state("ledger_up", "1 when the last ledger query succeeded, else 0.")
BUILD_INFO = _state("build_info", "The controller's version; always 1.", "version")

#: Approval waits range from seconds (an approver at the desk) to the default expiry of a day.
WAIT_BUCKETS: Final = (10.0, 30.0, 60.0, 300.0, 900.0, 1800.0, 3600.0, 4 * 3600.0, 86400.0)
#: A ledger transaction on a healthy database takes milliseconds; seconds mean trouble.
WRITE_BUCKETS: Final = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0)

APPROVAL_DECISIONS = _process(
    "approval_decisions_total",
    MetricType.COUNTER,
    "Approvals that reached a decision, by outcome (approved, denied, expired, withdrawn).",
    *_MIND,
    "outcome",
)
APPROVAL_WAIT = _process(
    "approval_wait_seconds",
    MetricType.HISTOGRAM,
    "Time from an Approval's creation to its decision.",
    *_MIND,
    buckets=WAIT_BUCKETS,
)
EXECUTIONS = _process(
    "executions_total",
    MetricType.COUNTER,
    "Capability invocations by capability and outcome (executed, pending, denied, failed, "
    "deferred).",
    *_MIND,
    "capability",
    "outcome",
)
REPLANS = _process(
    "replans_total", MetricType.COUNTER, "Failed plans replaced by a new revision.", *_MIND
)
ABANDONED = _process(
    "intentions_abandoned_total", MetricType.COUNTER, "Intentions abandoned.", *_MIND
)
EARLY_WAKEUPS = _process(
    "cycle_early_wakeups_total",
    MetricType.COUNTER,
    "Cycles woken before their interval by a change of a goal's subject, by what changed "
    "(appeared, gone, generation, availability, replicas, conditions).",
    *_MIND,
    "reason",
)
RECONCILE_ERRORS = _process(
    "reconcile_errors_total",
    MetricType.COUNTER,
    "Failures of the controller's handlers (kopf's and the work queue's) by resource kind.",
    "kind",
)
#: The values of the ``work`` label: the kinds of work of the controller's one queue
#: (``minds.controller.queue``).
RETRIED_WORK: Final = tuple(work.value for work in Work)
RETRIES = _process(
    "retries_total",
    MetricType.COUNTER,
    "Work that failed and was set to be tried again, by what work (a Mind's cycle, admission "
    "or tick of a Plan, decision or expiry of an Approval, ...).",
    "work",
)
#: A handler's run takes milliseconds when it reads only the watch, seconds when it acts or a
#: Mind's cycle asks a model.
WORK_BUCKETS: Final = (0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1.0, 5.0, 10.0, 60.0)
QUEUE_DEPTH = _process(
    "workqueue_depth",
    MetricType.GAUGE,
    "Work ready to run and not yet taken by a worker.",
    "work",
)
QUEUE_ADDS = _process(
    "workqueue_adds_total",
    MetricType.COUNTER,
    "Work added to the queue (an add of work that is already waiting is not counted).",
    "work",
)
QUEUE_LATENCY = _process(
    "workqueue_queue_duration_seconds",
    MetricType.HISTOGRAM,
    "Time work waited, ready, before a worker took it.",
    "work",
    buckets=WORK_BUCKETS,
)
WORK_DURATION = _process(
    "workqueue_work_duration_seconds",
    MetricType.HISTOGRAM,
    "Time a handler took to run.",
    "work",
    buckets=WORK_BUCKETS,
)
#: By kind as well as by work: controller-runtime's ``controller_runtime_reconcile_time_seconds``
#: is by controller, and a platform engineer asks "how slow are Plans" before "which work".
RECONCILE_DURATION = _process(
    "reconcile_duration_seconds",
    MetricType.HISTOGRAM,
    "Time a reconcile of a resource kind took: every run of the work queue's handlers of that "
    "kind, and the kopf handlers that do their work themselves (the deletion of a Mind or a "
    "CapabilityGrant, the release of a Plan's step).",
    "kind",
    buckets=WORK_BUCKETS,
)
UNFINISHED_WORK = _process(
    "workqueue_unfinished_work_seconds",
    MetricType.GAUGE,
    "Seconds of work being run and not yet finished, summed over the handlers running now "
    "(a large value with few workers busy is a stuck handler).",
    "work",
)
LONGEST_RUNNING = _process(
    "workqueue_longest_running_processor_seconds",
    MetricType.GAUGE,
    "How long the longest-running handler of the work has been running.",
    "work",
)
LEDGER_ERRORS = _process(
    "ledger_errors_total", MetricType.COUNTER, "Ledger transactions that failed in the database."
)
LEDGER_WRITE = _process(
    "ledger_write_seconds",
    MetricType.HISTOGRAM,
    "Duration of ledger transactions that wrote.",
    buckets=WRITE_BUCKETS,
)
LEDGER_SEALED = _process(
    "ledger_sealed",
    MetricType.GAUGE,
    "1 when the controller seals what it appends to the ledger with a key, 0 when it runs "
    "unsealed (no key: development only, docs/ledger.md).",
)

CATALOGUE: Final[tuple[MetricSpec, ...]] = (
    BUDGET_LIMIT,
    BUDGET_USED_RATIO,
    PLANS_BUDGET_EXHAUSTED,
    ATTENTION_OPEN,
    ATTENTION_MAX,
    ATTENTION_WAITING,
    ATTENTION_OLDEST,
    PLANS,
    STEPS,
    STEPS_OUTCOME_UNKNOWN,
    BRIER,
    PREDICTIONS,
    LAST_CYCLE,
    LEDGER_UP,
    BUILD_INFO,
    APPROVAL_DECISIONS,
    APPROVAL_WAIT,
    EXECUTIONS,
    REPLANS,
    ABANDONED,
    EARLY_WAKEUPS,
    RECONCILE_ERRORS,
    RECONCILE_DURATION,
    RETRIES,
    QUEUE_DEPTH,
    QUEUE_ADDS,
    QUEUE_LATENCY,
    WORK_DURATION,
    UNFINISHED_WORK,
    LONGEST_RUNNING,
    LEDGER_ERRORS,
    LEDGER_WRITE,
    LEDGER_SEALED,
)


def of_a_mind(spec: MetricSpec) -> bool:
    """Whether the metric's series are each about one Mind: they exist only while it does."""
    return spec.labels[: len(MIND_LABELS)] == MIND_LABELS


@dataclass(frozen=True)
class StandardMetric:
    """A series of prometheus_client's standard collectors (process, platform, garbage
    collector): not ours to name or label, listed so the docs name every series we serve."""

    name: str
    type: MetricType
    help: str
    labels: tuple[str, ...]
    #: The prometheus_client collector that exports it.
    collector: str


def _standard(
    collector: str, name: str, type: MetricType, help: str, *labels: str
) -> StandardMetric:
    return StandardMetric(name, type, help, labels, collector)


_GENERATION = "generation"

STANDARD: Final[tuple[StandardMetric, ...]] = (
    _standard(
        "process",
        "process_cpu_seconds_total",
        MetricType.COUNTER,
        "User and system CPU time the controller used.",
    ),
    _standard(
        "process", "process_resident_memory_bytes", MetricType.GAUGE, "Resident memory size."
    ),
    _standard("process", "process_virtual_memory_bytes", MetricType.GAUGE, "Virtual memory size."),
    _standard(
        "process",
        "process_start_time_seconds",
        MetricType.GAUGE,
        "When the controller's process started, in seconds since the epoch.",
    ),
    _standard("process", "process_open_fds", MetricType.GAUGE, "Open file descriptors."),
    _standard(
        "process", "process_max_fds", MetricType.GAUGE, "The limit on open file descriptors."
    ),
    _standard(
        "platform",
        "python_info",
        MetricType.GAUGE,
        "The Python implementation and version; always 1.",
        "implementation",
        "major",
        "minor",
        "patchlevel",
        "version",
    ),
    _standard(
        "gc",
        "python_gc_objects_collected_total",
        MetricType.COUNTER,
        "Objects the garbage collector collected, by generation.",
        _GENERATION,
    ),
    _standard(
        "gc",
        "python_gc_objects_uncollectable_total",
        MetricType.COUNTER,
        "Uncollectable objects the garbage collector found, by generation.",
        _GENERATION,
    ),
    _standard(
        "gc",
        "python_gc_collections_total",
        MetricType.COUNTER,
        "Collections of each generation.",
        _GENERATION,
    ),
)

"""The process-local counters and histograms, told by the engine, the ledger and kopf.

``ProcessMetrics`` is at once the engine's ``Telemetry``, the ledger's ``LedgerObserver`` and a
logging handler for kopf's per-object log: every way the controller learns that something
happened ends in one of the catalogue's metrics.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping, Sequence
from typing import Final

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram

from minds.domain.intentions import IntentionStatus, intention_event_type
from minds.domain.ledger import EventRecord
from minds.domain.metrics import catalogue as m
from minds.domain.metrics.catalogue import CATALOGUE, MetricSpec, MetricType, Scope, of_a_mind
from minds.domain.resources.kinds import APPROVAL, CAPABILITY_GRANT, MIND, PLAN
from minds.domain.workqueue import QueueState

#: The kinds kopf runs handlers for.
KINDS: Final = (MIND, PLAN, APPROVAL, CAPABILITY_GRANT)

#: Ledger events that a counter counts, each once: the ledger reports only new rows.
EVENT_COUNTERS: Final[Mapping[str, MetricSpec]] = {
    "plan_replanned": m.REPLANS,
    intention_event_type(IntentionStatus.ABANDONED): m.ABANDONED,
}

#: kopf logs a failed handler or daemon under this logger, naming the object it was about.
KOPF_OBJECTS_LOGGER: Final = "kopf.objects"


Metric = Counter | Histogram | Gauge


def _counter(spec: MetricSpec, registry: CollectorRegistry) -> Metric:
    return Counter(spec.name, spec.help, spec.labels, registry=registry)


def _histogram(spec: MetricSpec, registry: CollectorRegistry) -> Metric:
    return Histogram(spec.name, spec.help, spec.labels, registry=registry, buckets=spec.buckets)


def _gauge(spec: MetricSpec, registry: CollectorRegistry) -> Metric:
    return Gauge(spec.name, spec.help, spec.labels, registry=registry)


_BUILDERS: Final = {
    MetricType.COUNTER: _counter,
    MetricType.HISTOGRAM: _histogram,
    MetricType.GAUGE: _gauge,
}

#: The work queue's metrics, each labelled by the kind of work alone.
_BY_WORK: Final = (
    m.RETRIES,
    m.QUEUE_DEPTH,
    m.QUEUE_ADDS,
    m.QUEUE_LATENCY,
    m.WORK_DURATION,
    m.UNFINISHED_WORK,
    m.LONGEST_RUNNING,
)


def _label_sets(metric: Metric, spec: MetricSpec) -> set[tuple[str, ...]]:
    """The label values of every series the metric has now (a histogram's ``le`` aside)."""
    return {
        tuple(sample.labels[name] for name in spec.labels)
        for family in metric.collect()
        for sample in family.samples
    }


class ProcessMetrics(logging.Handler):
    def __init__(self, registry: CollectorRegistry) -> None:
        super().__init__(level=logging.ERROR)
        self._metrics = {
            spec: _BUILDERS[spec.type](spec, registry)
            for spec in CATALOGUE
            if spec.scope is Scope.PROCESS
        }
        # Every kind the controller handles is known: each starts at 0, so that the first
        # failure is an increase that rate() and increase() see.
        for spec in (m.RECONCILE_ERRORS, m.RECONCILE_DURATION):
            for kind in KINDS:
                self._metrics[spec].labels(kind.kind)
        # Each kind of work starts at 0 too, so the first retry is an increase.
        for spec in _BY_WORK:
            for work in m.RETRIED_WORK:
                self._metrics[spec].labels(work)

    def minds_present(self, minds: Iterable[tuple[str, str]]) -> None:
        """Told every Mind there is, at each scrape. Each one's event counters start at 0 (its
        first replan is then an increase rate() sees, and a dashboard shows 0 rather than no
        data); every series of any other Mind is removed, so a deleted Mind's series end with
        it. Told at the scrape rather than at the deletion: work that finishes after a Mind is
        gone (its Approvals withdrawn as its Plans go) would otherwise bring them back."""
        present = set(minds)
        for spec in EVENT_COUNTERS.values():
            counter = self._metrics[spec]
            for namespace, mind in present:
                counter.labels(namespace, mind)
        for spec, metric in self._metrics.items():
            if not of_a_mind(spec):
                continue
            for labels in _label_sets(metric, spec):
                if labels[:2] not in present:
                    metric.remove(*labels)

    def __getitem__(self, spec: MetricSpec) -> Metric:
        return self._metrics[spec]

    def _inc(self, spec: MetricSpec, *labels: str) -> None:
        metric = self._metrics[spec]
        assert isinstance(metric, Counter)
        (metric.labels(*labels) if labels else metric).inc()

    def _observe(self, spec: MetricSpec, value: float, *labels: str) -> None:
        metric = self._metrics[spec]
        assert isinstance(metric, Histogram)
        (metric.labels(*labels) if labels else metric).observe(value)

    def ledger_sealed(self, sealed: bool) -> None:
        """Whether the ledger seals what the controller appends (0: unsealed mode)."""
        metric = self._metrics[m.LEDGER_SEALED]
        assert isinstance(metric, Gauge)
        metric.set(1 if sealed else 0)

    # -- the engine's Telemetry -----------------------------------------------------------------

    def approval_decided(
        self, namespace: str, mind: str, outcome: str, waited_seconds: float | None
    ) -> None:
        self._inc(m.APPROVAL_DECISIONS, namespace, mind, outcome)
        if waited_seconds is not None:
            self._observe(m.APPROVAL_WAIT, waited_seconds, namespace, mind)

    def invoked(self, namespace: str, mind: str, capability: str, outcome: str) -> None:
        self._inc(m.EXECUTIONS, namespace, mind, capability, outcome)

    # -- the controller's goal watch ----------------------------------------------------------

    def woken(self, namespace: str, mind: str, reason: str) -> None:
        self._inc(m.EARLY_WAKEUPS, namespace, mind, reason)

    # -- the controller's work queue ----------------------------------------------------------

    def retried(self, work: str, kind: str) -> None:
        """Work failed and is set to be tried again: a reconcile error of the ``kind`` it was
        about, as kopf's own failures are."""
        self._inc(m.RETRIES, work)
        self._inc(m.RECONCILE_ERRORS, kind)

    def added(self, work: str) -> None:
        self._inc(m.QUEUE_ADDS, work)

    def taken(self, work: str, waited: float) -> None:
        self._observe(m.QUEUE_LATENCY, waited, work)

    def worked(self, work: str, kind: str, seconds: float) -> None:
        self._observe(m.WORK_DURATION, seconds, work)
        self.reconciled(kind, seconds)

    # -- the controller's kopf handlers that do their work themselves -------------------------

    def reconciled(self, kind: str, seconds: float) -> None:
        self._observe(m.RECONCILE_DURATION, seconds, kind)

    def queue_state(self, state: QueueState) -> None:
        """The queue as it is now, every kind of work told (0 when it has none)."""
        for spec, values in (
            (m.QUEUE_DEPTH, state.depth),
            (m.UNFINISHED_WORK, state.unfinished),
            (m.LONGEST_RUNNING, state.longest),
        ):
            gauge = self._metrics[spec]
            assert isinstance(gauge, Gauge)
            for work in m.RETRIED_WORK:
                gauge.labels(work).set(values.get(work, 0))

    # -- the ledger's LedgerObserver ------------------------------------------------------------

    def committed(self, appended: Sequence[EventRecord], seconds: float, wrote: bool) -> None:
        if wrote:
            self._observe(m.LEDGER_WRITE, seconds)
        for record in appended:
            spec = EVENT_COUNTERS.get(record.type)
            if spec is not None:
                self._inc(spec, record.namespace, record.mind)

    def failed(self) -> None:
        self._inc(m.LEDGER_ERRORS)

    # -- kopf's log -------------------------------------------------------------------------------

    def emit(self, record: logging.LogRecord) -> None:
        ref = getattr(record, "k8s_ref", None)
        kind = ref.get("kind") if isinstance(ref, Mapping) else None
        if kind:
            self._inc(m.RECONCILE_ERRORS, str(kind))

    def watch_kopf(self) -> None:
        """Count every handler or daemon failure kopf reports, by the kind it was about."""
        logging.getLogger(KOPF_OBJECTS_LOGGER).addHandler(self)

    def unwatch_kopf(self) -> None:
        logging.getLogger(KOPF_OBJECTS_LOGGER).removeHandler(self)

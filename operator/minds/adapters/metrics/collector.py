"""The state gauges, computed at each scrape from a source of objects and the ledger.

The source is a small Protocol: the controller hands in its watch store, so a scrape reads
what the watch delivered and costs the API server nothing.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from datetime import datetime
from typing import Any, Protocol

from prometheus_client.core import GaugeMetricFamily, Metric
from prometheus_client.registry import Collector
from sqlalchemy.exc import SQLAlchemyError

from minds.domain.metrics.catalogue import CATALOGUE, MetricType, Scope
from minds.domain.metrics.state import ClusterState, PredictionSummary, Sample, state_samples
from minds.domain.resources.kinds import APPROVAL, MIND, PLAN, Kind

log = logging.getLogger(__name__)

STATE_GAUGES = tuple(
    spec for spec in CATALOGUE if spec.scope is Scope.STATE and spec.type is MetricType.GAUGE
)


class ObjectSource(Protocol):
    def objects(self, kind: Kind) -> Iterable[Mapping[str, Any]]:
        """Every object of ``kind`` in the namespaces the controller watches."""
        ...


class PredictionSource(Protocol):
    def prediction_summaries(self) -> Sequence[PredictionSummary]:
        """Every Mind's predictions, counted by the ledger. Raises when it cannot be asked."""
        ...


class StateCollector(Collector):
    """A failing object listing fails the scrape, so Prometheus sees the target down rather
    than a Mind whose gauges silently vanished; a failing ledger only sets ``ledger_up`` 0."""

    def __init__(
        self,
        objects: ObjectSource,
        predictions: PredictionSource,
        clock: Callable[[], datetime],
        version: str,
        minds_seen: Callable[[Iterable[tuple[str, str]]], None] | None = None,
    ) -> None:
        self._objects = objects
        self._predictions = predictions
        self._clock = clock
        self._version = version
        #: Told every Mind at each scrape (the process counters start theirs at 0 and drop
        #: those of Minds that are gone).
        self._minds_seen = minds_seen

    def _summaries(self) -> Sequence[PredictionSummary] | None:
        try:
            return self._predictions.prediction_summaries()
        except SQLAlchemyError as exc:
            log.warning("metrics: the ledger did not answer: %s", type(exc).__name__)
            return None

    def collect(self) -> Iterator[Metric]:
        state = ClusterState(
            minds=list(self._objects.objects(MIND)),
            plans=list(self._objects.objects(PLAN)),
            approvals=list(self._objects.objects(APPROVAL)),
        )
        if self._minds_seen is not None:
            self._minds_seen(
                (body["metadata"]["namespace"], body["metadata"]["name"]) for body in state.minds
            )
        samples = state_samples(state, self._summaries(), self._clock(), self._version)
        yield from families(samples)


def families(samples: Iterable[Sample]) -> Iterator[Metric]:
    """One family per state gauge of the catalogue, even when it has no sample: its HELP and
    TYPE still say it exists."""
    built = {
        spec: GaugeMetricFamily(spec.name, spec.help, labels=list(spec.labels))
        for spec in STATE_GAUGES
    }
    for sample in samples:
        built[sample.metric].add_metric(list(sample.labels), sample.value)
    yield from built.values()

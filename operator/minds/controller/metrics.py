"""The controller's metrics: one registry, its collectors, and the endpoint serving them."""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import datetime

from prometheus_client import CollectorRegistry

from minds import __version__
from minds.adapters.metrics import (
    MetricsServer,
    ObjectSource,
    PredictionSource,
    ProcessMetrics,
    StateCollector,
    parse_bind_address,
    register_standard_collectors,
)

log = logging.getLogger(__name__)


@dataclass
class ControllerMetrics:
    registry: CollectorRegistry
    #: The engine's Telemetry and the ledger's observer.
    process: ProcessMetrics
    server: MetricsServer | None = None

    def close(self) -> None:
        self.process.unwatch_kopf()
        if self.server is not None:
            self.server.stop()


def start_metrics(
    bind_address: str,
    objects: ObjectSource,
    predictions: PredictionSource,
    clock: Callable[[], datetime],
) -> ControllerMetrics:
    """Build the collectors and serve them on ``bind_address`` (none when it is empty)."""
    where = parse_bind_address(bind_address)
    registry = CollectorRegistry()
    counters: list[ProcessMetrics] = []

    def minds_seen(minds: Iterable[tuple[str, str]]) -> None:
        for process in counters:
            process.minds_present(minds)

    # Registered first, so that a scrape starts every Mind's counters at 0, and removes those
    # of Minds that are gone, before it collects them: the same scrape shows it.
    registry.register(StateCollector(objects, predictions, clock, __version__, minds_seen))
    process = ProcessMetrics(registry)
    register_standard_collectors(registry)
    counters.append(process)
    metrics = ControllerMetrics(registry, process)
    if where is not None:
        metrics.server = MetricsServer.start(*where, registry)
        log.info("serving metrics on %s:%d/metrics", where[0], metrics.server.port)
    process.watch_kopf()
    return metrics

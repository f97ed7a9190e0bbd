"""The collectors every Python exporter has, in the controller's own registry: what the
process costs (CPU, memory, file descriptors, since when it runs), which Python runs it, and
what its garbage collector does. The catalogue lists their series (``STANDARD``)."""

from __future__ import annotations

from prometheus_client import CollectorRegistry, GCCollector, PlatformCollector, ProcessCollector


def register_standard_collectors(registry: CollectorRegistry) -> None:
    # The process collector reads /proc: on another system it exports nothing, and says so
    # by the series' absence rather than by failing the scrape.
    ProcessCollector(registry=registry)
    PlatformCollector(registry=registry)
    GCCollector(registry=registry)

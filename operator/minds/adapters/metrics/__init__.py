"""Prometheus metrics: the collectors built from the catalogue, and the HTTP endpoint."""

from minds.adapters.metrics.collector import (
    ObjectSource,
    PredictionSource,
    StateCollector,
)
from minds.adapters.metrics.counters import ProcessMetrics
from minds.adapters.metrics.serve import (
    BIND_ENV,
    DEFAULT_BIND_ADDRESS,
    BindAddressError,
    MetricsServer,
    parse_bind_address,
)
from minds.adapters.metrics.standard import register_standard_collectors

__all__ = [
    "BIND_ENV",
    "DEFAULT_BIND_ADDRESS",
    "BindAddressError",
    "MetricsServer",
    "ObjectSource",
    "PredictionSource",
    "ProcessMetrics",
    "StateCollector",
    "parse_bind_address",
    "register_standard_collectors",
]

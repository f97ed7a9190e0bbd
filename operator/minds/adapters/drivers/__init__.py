"""Capability drivers: the only code that acts on the world for a mind.

`default_drivers(api)` is the complete set the controller uses: one driver per capability
family, together serving every capability in the registry.
"""

from __future__ import annotations

from kubernetes import client

from minds.adapters.drivers.base import (
    FIELD_TEXT_LIMIT,
    OUTPUT_LIMIT_BYTES,
    Driver,
    DriverContractError,
    Drivers,
)
from minds.adapters.drivers.browser import BrowserDriver
from minds.adapters.drivers.host import HostDriver
from minds.adapters.drivers.kubernetes import RESTART_SUMMARY, KubernetesDriver, WorkloadState
from minds.domain.capabilities.results import DriverResult

__all__ = [
    "FIELD_TEXT_LIMIT",
    "OUTPUT_LIMIT_BYTES",
    "RESTART_SUMMARY",
    "BrowserDriver",
    "Driver",
    "DriverContractError",
    "DriverResult",
    "Drivers",
    "HostDriver",
    "KubernetesDriver",
    "WorkloadState",
    "default_drivers",
]


def default_drivers(
    api: client.ApiClient,
    *,
    kubernetes: KubernetesDriver | None = None,
    host: HostDriver | None = None,
    browser: BrowserDriver | None = None,
) -> Drivers:
    """Every capability's driver; any family can be replaced (tests pass their own)."""
    return Drivers(
        [kubernetes or KubernetesDriver(api), host or HostDriver(), browser or BrowserDriver()]
    )

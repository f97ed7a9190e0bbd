"""Controller configuration, read once from the environment at start-up."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Final

from minds.adapters.kube.checkpoints import CHECKPOINT_CONFIGMAP_ENV, NAMESPACE_ENV
from minds.adapters.ledger.keys import LedgerKeyError, LedgerKeys, keys_from_env
from minds.adapters.metrics import (
    BIND_ENV,
    DEFAULT_BIND_ADDRESS,
    BindAddressError,
    parse_bind_address,
)
from minds.adapters.model_endpoints import ENV as MODEL_ENDPOINTS_ENV
from minds.adapters.model_endpoints import EndpointsFileError, ModelEndpoints
from minds.domain.approvals import DEFAULT_TTL
from minds.domain.capabilities.registry import (
    REGISTRY,
    CapabilityRegistry,
    PriceError,
    priced_by,
)

#: The chart's ``capabilities.prices``: a JSON object, capability -> price per invocation.
PRICES_ENV: Final = "MINDS_CAPABILITY_PRICES"
#: The chart's ``approvals.ttlSeconds``: how long the controller's requests wait for a person.
APPROVAL_TTL_ENV: Final = "MINDS_APPROVAL_TTL_SECONDS"
#: A person needs time to read a request; a week-old request no longer describes the world.
APPROVAL_TTL_BOUNDS: Final = (timedelta(minutes=1), timedelta(days=7))
#: The chart's ``ledger.checkpoint.intervalSeconds``: how often the chains' heads are written
#: to the checkpoint ConfigMap (``CHECKPOINT_CONFIGMAP_ENV``) when they moved.
CHECKPOINT_SECONDS_ENV: Final = "MINDS_LEDGER_CHECKPOINT_SECONDS"
DEFAULT_CHECKPOINT_INTERVAL: Final = timedelta(minutes=5)


class ConfigError(RuntimeError):
    """The controller cannot start with this configuration; the message says what to set."""


@dataclass(frozen=True)
class ControllerConfig:
    database_url: str
    kubeconfig: str | None = None
    context: str | None = None
    model_endpoints: ModelEndpoints = field(default_factory=ModelEndpoints)
    metrics_bind_address: str = DEFAULT_BIND_ADDRESS
    #: The vocabulary with the operator's prices (docs/capabilities.md#prices).
    registry: CapabilityRegistry = REGISTRY
    approval_ttl: timedelta = DEFAULT_TTL
    #: The ledger's sealing keys (docs/ledger.md#the-key); None: unsealed, for development.
    ledger_keys: LedgerKeys | None = None
    #: Where the chains' heads are kept outside the database: (namespace, ConfigMap name);
    #: None: no checkpoints.
    checkpoint_object: tuple[str, str] | None = None
    checkpoint_interval: timedelta = DEFAULT_CHECKPOINT_INTERVAL

    @classmethod
    def from_env(cls) -> ControllerConfig:
        url = os.environ.get("MINDS_DATABASE_URL", "").strip()
        if not url:
            raise ConfigError(
                "MINDS_DATABASE_URL is not set: the controller needs the Postgres ledger "
                "(for example postgresql://minds@127.0.0.1:5432/minds)"
            )
        try:
            endpoints = ModelEndpoints.load(os.environ.get(MODEL_ENDPOINTS_ENV, "").strip())
        except EndpointsFileError as exc:
            raise ConfigError(str(exc)) from exc
        metrics = os.environ.get(BIND_ENV, DEFAULT_BIND_ADDRESS)
        try:
            parse_bind_address(metrics)
        except BindAddressError as exc:
            raise ConfigError(f"{BIND_ENV}: {exc}") from exc
        try:
            keys = keys_from_env()
        except LedgerKeyError as exc:
            raise ConfigError(str(exc)) from exc
        return cls(
            ledger_keys=keys,
            checkpoint_object=checkpoint_object(
                os.environ.get(NAMESPACE_ENV, ""), os.environ.get(CHECKPOINT_CONFIGMAP_ENV, "")
            ),
            checkpoint_interval=checkpoint_interval(os.environ.get(CHECKPOINT_SECONDS_ENV, "")),
            database_url=url,
            kubeconfig=os.environ.get("KUBECONFIG") or None,
            context=os.environ.get("MINDS_KUBE_CONTEXT") or None,
            model_endpoints=endpoints,
            metrics_bind_address=metrics,
            registry=priced_registry(os.environ.get(PRICES_ENV, "")),
            approval_ttl=approval_ttl(os.environ.get(APPROVAL_TTL_ENV, "")),
        )


def priced_registry(raw: str) -> CapabilityRegistry:
    """The vocabulary with the prices ``raw`` (JSON) sets; empty sets none."""
    try:
        return priced_by(raw)
    except PriceError as exc:
        key = f"capabilities.prices.{exc}" if exc.capability is not None else str(exc)
        raise ConfigError(f"{PRICES_ENV}: {key}") from exc


def approval_ttl(raw: str) -> timedelta:
    """How long a request waits for a person: whole seconds within the bounds; empty, a day."""
    if not raw.strip():
        return DEFAULT_TTL
    low, high = APPROVAL_TTL_BOUNDS
    try:
        ttl = timedelta(seconds=int(raw))
    except ValueError as exc:
        raise ConfigError(f"{APPROVAL_TTL_ENV}: {raw!r} is not a whole number of seconds") from exc
    if not low <= ttl <= high:
        raise ConfigError(
            f"{APPROVAL_TTL_ENV}: {raw} is outside {int(low.total_seconds())}.."
            f"{int(high.total_seconds())} seconds"
        )
    return ttl


def checkpoint_object(namespace: str, name: str) -> tuple[str, str] | None:
    """Where checkpoints go: both a namespace and a name, or neither (no checkpoints)."""
    namespace, name = namespace.strip(), name.strip()
    if not name:
        return None
    if not namespace:
        raise ConfigError(f"{CHECKPOINT_CONFIGMAP_ENV} is set but {NAMESPACE_ENV} is not")
    return namespace, name


def checkpoint_interval(raw: str) -> timedelta:
    """Whole seconds, at least 1; empty: five minutes."""
    if not raw.strip():
        return DEFAULT_CHECKPOINT_INTERVAL
    try:
        seconds = int(raw)
    except ValueError as exc:
        raise ConfigError(
            f"{CHECKPOINT_SECONDS_ENV}: {raw!r} is not a whole number of seconds"
        ) from exc
    if seconds < 1:
        raise ConfigError(f"{CHECKPOINT_SECONDS_ENV}: {raw} is not a positive number of seconds")
    return timedelta(seconds=seconds)

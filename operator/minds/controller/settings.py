"""Controller configuration, read once from the environment at start-up."""

from __future__ import annotations

import os
from dataclasses import dataclass, field

from minds.adapters.metrics import (
    BIND_ENV,
    DEFAULT_BIND_ADDRESS,
    BindAddressError,
    parse_bind_address,
)
from minds.adapters.model_endpoints import ENV as MODEL_ENDPOINTS_ENV
from minds.adapters.model_endpoints import EndpointsFileError, ModelEndpoints


class ConfigError(RuntimeError):
    """The controller cannot start with this configuration; the message says what to set."""


@dataclass(frozen=True)
class ControllerConfig:
    database_url: str
    kubeconfig: str | None = None
    context: str | None = None
    model_endpoints: ModelEndpoints = field(default_factory=ModelEndpoints)
    metrics_bind_address: str = DEFAULT_BIND_ADDRESS

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
        return cls(
            database_url=url,
            kubeconfig=os.environ.get("KUBECONFIG") or None,
            context=os.environ.get("MINDS_KUBE_CONTEXT") or None,
            model_endpoints=endpoints,
            metrics_bind_address=metrics,
        )

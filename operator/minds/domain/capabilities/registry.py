"""The capability vocabulary: every action a mind can take, typed and described.

The registry is built once, at import, from the definitions below and then frozen: it has no
register function and its mapping is read-only, so no capability can be added at runtime and
there is no general command capability to hide one behind. Plans, policy and the capability
service all read this one vocabulary.

Prices are the platform team's, not the vocabulary's: every capability costs 0 here, and
`priced` gives a copy in which the capabilities the controller's configuration names cost
what it says (docs/capabilities.md#prices). The controller builds that copy once, at start, and
hands it to every service; nothing else about a capability can be configured.

Targets are what policy, commitments and approvals talk about, so each capability says how its
target is derived from its parameters:

- workloads (`service.*`, `logs.query`): `namespace/name`;
- the controller's host (`host.*`): the literal `host`;
- browsing (`browser.*`): the URL's host name, lower case.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, replace
from enum import StrEnum
from types import MappingProxyType
from typing import Annotated, Any, Final
from urllib.parse import urlsplit

from pydantic import Field, ValidationError, field_validator

from minds.domain.base import Model
from minds.domain.resources.mind import PolicyDecision

HOST_TARGET: Final = "host"

DNS_LABEL = r"^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$"
DNS_SUBDOMAIN = r"^[a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?$"
HOUR_SECONDS = 3600


class WorkloadKind(StrEnum):
    DEPLOYMENT = "Deployment"
    STATEFUL_SET = "StatefulSet"
    DAEMON_SET = "DaemonSet"


class WorkloadParameters(Model):
    """A workload in the cluster. The namespace is explicit: a plan says where it acts."""

    namespace: Annotated[str, Field(pattern=DNS_LABEL, max_length=63)]
    kind: WorkloadKind = WorkloadKind.DEPLOYMENT
    name: Annotated[str, Field(pattern=DNS_SUBDOMAIN, max_length=253)]


class LogsQueryParameters(WorkloadParameters):
    """Recent log lines of a workload. Masking of personal identifiers is on unless turned off,
    and a grant's parameter limits can pin it on."""

    since_seconds: Annotated[int, Field(ge=1, le=7 * 24 * HOUR_SECONDS)] = HOUR_SECONDS
    limit: Annotated[int, Field(ge=1, le=5000)] = 200
    filter: Annotated[str, Field(max_length=200)] | None = None
    mask: bool = True


class NoParameters(Model):
    """A capability that takes no parameters; any parameter given is unknown and refused."""


class DiskUsageParameters(Model):
    path: Annotated[str, Field(pattern=r"^/[^\x00]*$", max_length=4096)] = "/"


class ProcessListParameters(Model):
    limit: Annotated[int, Field(ge=1, le=200)] = 20


class UrlParameters(Model):
    url: Annotated[str, Field(max_length=2048, pattern=r"^https?://")]

    @field_validator("url")
    @classmethod
    def _has_host(cls, url: str) -> str:
        try:
            host = urlsplit(url).hostname
        except ValueError as error:
            raise ValueError(f"not a valid URL: {error}") from error
        if not host:
            raise ValueError("the URL names no host")
        return url


class BrowserReadParameters(UrlParameters):
    max_chars: Annotated[int, Field(ge=1, le=100_000)] = 20_000


class BrowserLinksParameters(UrlParameters):
    limit: Annotated[int, Field(ge=1, le=500)] = 100


class Targeting(StrEnum):
    """How a capability's target is derived from its parameters."""

    WORKLOAD = "workload"
    HOST = "host"
    URL_HOST = "url_host"


class ObservationType(StrEnum):
    """The JSON type of a field a read-only capability reports, for typing checks."""

    STRING = "string"
    NUMBER = "number"
    BOOLEAN = "boolean"


@dataclass(frozen=True, slots=True)
class CapabilitySpec:
    """Metadata of one capability.

    `default_decision` is what policy answers when no rule of the mind matches. Bounded reads of
    system state are allowed; reads that may expose personal data or leave the cluster, and
    every writing capability, ask for approval. `network` means reaching beyond the cluster and
    the host (the Kubernetes API is not counted). `expected_seconds` is a typical duration used
    only for estimates; `timeout_seconds` bounds one invocation. `money` is the price of one
    invocation, 0 unless the controller's configuration prices it (`CapabilityRegistry.priced`).
    """

    name: str
    summary: str
    parameters: type[Model]
    targeting: Targeting
    read_only: bool
    idempotent: bool
    timeout_seconds: int
    expected_seconds: int
    network: bool
    money: float
    default_decision: PolicyDecision
    observation_fields: Mapping[str, ObservationType]

    @property
    def target_parameters(self) -> tuple[str, ...]:
        """The parameters that name the target (as spelled in a plan)."""
        if self.targeting is Targeting.WORKLOAD:
            return ("namespace", "name")
        if self.targeting is Targeting.URL_HOST:
            return ("url",)
        return ()

    @property
    def usable_as_check(self) -> bool:
        return self.read_only and bool(self.observation_fields)

    def parse(self, raw: Mapping[str, Any] | None) -> Model:
        """Typed parameters; raises `pydantic.ValidationError`, unknown parameters included."""
        return self.parameters.model_validate(dict(raw or {}))

    def target_of(self, parameters: Model) -> str:
        """The target named by already-parsed parameters."""
        if self.targeting is Targeting.WORKLOAD:
            assert isinstance(parameters, WorkloadParameters)
            return workload_target(parameters.namespace, parameters.name)
        if self.targeting is Targeting.URL_HOST:
            assert isinstance(parameters, UrlParameters)
            return (urlsplit(parameters.url).hostname or "").lower()
        return HOST_TARGET


def workload_target(namespace: str, name: str) -> str:
    return f"{namespace}/{name}"


@dataclass(frozen=True, slots=True)
class ParameterProblem:
    """One way parameters failed their schema: the parameter path and what is wrong."""

    path: str
    message: str


def parameter_problems(
    spec: CapabilitySpec, raw: Mapping[str, Any] | None
) -> list[ParameterProblem]:
    """Every problem with `raw` against the capability's schema; empty when it passes."""
    try:
        spec.parse(raw)
    except ValidationError as error:
        return [
            ParameterProblem(
                ".".join(str(part) for part in problem["loc"]) or "(parameters)",
                "unknown parameter" if problem["type"] == "extra_forbidden" else problem["msg"],
            )
            for problem in error.errors()
        ]
    return []


class CapabilityRegistry:
    """A read-only view of the capability vocabulary. There is deliberately no way to add to
    it: `REGISTRY` is built from this module's definitions at import, and `priced` copies it
    with other prices and nothing else changed."""

    __slots__ = ("_specs",)
    _specs: Mapping[str, CapabilitySpec]

    def __init__(self, specs: Mapping[str, CapabilitySpec]) -> None:
        object.__setattr__(self, "_specs", MappingProxyType(dict(specs)))

    def __setattr__(self, name: str, value: object) -> None:
        raise AttributeError("the capability registry is frozen")

    def __delattr__(self, name: str) -> None:
        raise AttributeError("the capability registry is frozen")

    @property
    def specs(self) -> Mapping[str, CapabilitySpec]:
        return self._specs

    def get(self, name: str) -> CapabilitySpec | None:
        return self._specs.get(name)

    def __getitem__(self, name: str) -> CapabilitySpec:
        return self._specs[name]

    def __contains__(self, name: object) -> bool:
        return name in self._specs

    def __iter__(self) -> Iterator[str]:
        return iter(self._specs)

    def __len__(self) -> int:
        return len(self._specs)

    def names(self) -> tuple[str, ...]:
        return tuple(self._specs)

    def priced(self, prices: Mapping[str, float]) -> CapabilityRegistry:
        """The same vocabulary with these prices per invocation (the others keep theirs).
        Raises `PriceError` naming the first capability that is unknown or whose price is not
        a finite number >= 0."""
        for name, money in prices.items():
            if name not in self._specs:
                raise PriceError(name, f"no such capability (known: {', '.join(self._specs)})")
            if isinstance(money, bool) or not isinstance(money, int | float):
                raise PriceError(name, f"{money!r} is not a number")
            if not math.isfinite(money) or money < 0:
                raise PriceError(name, f"{money!r} is not a price (a finite number >= 0)")
        return CapabilityRegistry(
            {
                name: replace(spec, money=float(prices[name])) if name in prices else spec
                for name, spec in self._specs.items()
            }
        )


class PriceError(ValueError):
    """Prices the registry refuses; ``capability`` is the key the configuration used, None
    when the prices as a whole are unreadable."""

    def __init__(self, capability: str | None, problem: str) -> None:
        super().__init__(f"{capability}: {problem}" if capability is not None else problem)
        self.capability = capability


_SERVICE_FIELDS: Mapping[str, ObservationType] = MappingProxyType(
    {
        # running, progressing, degraded or stopped; absent when the workload does not exist
        "state": ObservationType.STRING,
        "ready": ObservationType.BOOLEAN,
        "readyReplicas": ObservationType.NUMBER,
        "desiredReplicas": ObservationType.NUMBER,
        "availableReplicas": ObservationType.NUMBER,
        "restarts": ObservationType.NUMBER,
    }
)
_NONE: Mapping[str, ObservationType] = MappingProxyType({})


def _spec(
    name: str,
    summary: str,
    parameters: type[Model],
    targeting: Targeting,
    *,
    read_only: bool = True,
    idempotent: bool = True,
    timeout_seconds: int = 30,
    expected_seconds: int = 2,
    network: bool = False,
    default_decision: PolicyDecision = PolicyDecision.ALLOW,
    observation_fields: Mapping[str, ObservationType] = _NONE,
) -> CapabilitySpec:
    return CapabilitySpec(
        name=name,
        summary=summary,
        parameters=parameters,
        targeting=targeting,
        read_only=read_only,
        idempotent=idempotent,
        timeout_seconds=timeout_seconds,
        expected_seconds=expected_seconds,
        network=network,
        money=0.0,
        default_decision=default_decision,
        observation_fields=MappingProxyType(dict(observation_fields)),
    )


def _definitions() -> tuple[CapabilitySpec, ...]:
    return (
        _spec(
            "service.status",
            "Read a workload's rollout and readiness state.",
            WorkloadParameters,
            Targeting.WORKLOAD,
            timeout_seconds=15,
            observation_fields=_SERVICE_FIELDS,
        ),
        _spec(
            "service.restart",
            "Request a rolling restart of a workload (health is verified separately).",
            WorkloadParameters,
            Targeting.WORKLOAD,
            read_only=False,
            # A second request restarts the pods again, so it is not safe to repeat blindly.
            idempotent=False,
            timeout_seconds=60,
            expected_seconds=10,
            default_decision=PolicyDecision.APPROVE,
        ),
        _spec(
            "logs.query",
            "Read recent log lines of a workload, masked by default.",
            LogsQueryParameters,
            Targeting.WORKLOAD,
            timeout_seconds=30,
            expected_seconds=5,
            # Logs may contain personal identifiers.
            default_decision=PolicyDecision.APPROVE,
            observation_fields={
                "lineCount": ObservationType.NUMBER,
                "text": ObservationType.STRING,
            },
        ),
        _spec(
            "host.disk.usage",
            "Read disk usage of a path on the controller's host.",
            DiskUsageParameters,
            Targeting.HOST,
            timeout_seconds=10,
            observation_fields={
                "usedPercent": ObservationType.NUMBER,
                "freeBytes": ObservationType.NUMBER,
                "totalBytes": ObservationType.NUMBER,
            },
        ),
        _spec(
            "host.memory.status",
            "Read memory use of the controller's host.",
            NoParameters,
            Targeting.HOST,
            timeout_seconds=10,
            observation_fields={
                "usedPercent": ObservationType.NUMBER,
                "availableBytes": ObservationType.NUMBER,
                "totalBytes": ObservationType.NUMBER,
            },
        ),
        _spec(
            "host.process.list",
            "List the busiest processes on the controller's host.",
            ProcessListParameters,
            Targeting.HOST,
            timeout_seconds=10,
            # Command lines can carry secrets.
            default_decision=PolicyDecision.APPROVE,
            observation_fields={"count": ObservationType.NUMBER},
        ),
        _spec(
            "browser.navigate",
            "Load a page and report its status and title.",
            UrlParameters,
            Targeting.URL_HOST,
            timeout_seconds=30,
            expected_seconds=5,
            network=True,
            default_decision=PolicyDecision.APPROVE,
            observation_fields={
                "statusCode": ObservationType.NUMBER,
                "title": ObservationType.STRING,
                "finalUrl": ObservationType.STRING,
            },
        ),
        _spec(
            "browser.read",
            "Read a page's text.",
            BrowserReadParameters,
            Targeting.URL_HOST,
            timeout_seconds=30,
            expected_seconds=5,
            network=True,
            default_decision=PolicyDecision.APPROVE,
            observation_fields={"text": ObservationType.STRING, "length": ObservationType.NUMBER},
        ),
        _spec(
            "browser.links",
            "List a page's links.",
            BrowserLinksParameters,
            Targeting.URL_HOST,
            timeout_seconds=30,
            expected_seconds=5,
            network=True,
            default_decision=PolicyDecision.APPROVE,
            observation_fields={"count": ObservationType.NUMBER},
        ),
    )


REGISTRY: Final = CapabilityRegistry({spec.name: spec for spec in _definitions()})


def priced_by(raw: str) -> CapabilityRegistry:
    """`REGISTRY` with the prices ``raw`` sets: a JSON object of capability: price, as the
    controller's configuration and ``minds plan validate --prices`` spell them. Empty: none."""
    if not raw.strip():
        return REGISTRY
    try:
        prices = json.loads(raw)
    except json.JSONDecodeError as exc:
        raise PriceError(None, f"not JSON ({exc.msg})") from exc
    if not isinstance(prices, dict):
        raise PriceError(None, "expected an object of capability: price")
    return REGISTRY.priced(prices)

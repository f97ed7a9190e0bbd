"""The driver contract: how a capability reaches the world, and what comes back.

A driver is the only code that touches the world on a mind's behalf. It receives parameters
already parsed by the capability's schema and returns a `DriverResult`; it never raises for
an operational failure (a missing workload, a refused address, a timeout) but says so in the
result, because the capability service records every outcome and a raised error would lose
it. A bug may still raise: hiding one behind `ok=False` would make it look like the world's
fault.

`Drivers` is the dispatch table the capability service holds. It refuses to be built with a
capability the registry does not know, and it enforces two promises of every result: a
successful read reports exactly the observation fields the registry declares, typed as
declared, so checks can compare them; and output is bounded, so a chatty page or log cannot
fill the ledger.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from typing import Final, Protocol, runtime_checkable

from pydantic import JsonValue

from minds.domain.base import Model
from minds.domain.capabilities.registry import REGISTRY, CapabilitySpec, ObservationType
from minds.domain.capabilities.results import DriverResult, FieldValue

OUTPUT_LIMIT_BYTES: Final = 64 * 1024
"""The largest `output` a result may carry, as compact UTF-8 JSON."""

FIELD_TEXT_LIMIT: Final = 8 * 1024
"""The longest text one observation field may carry (characters)."""


@runtime_checkable
class Driver(Protocol):
    """One family of capabilities (Kubernetes workloads, the host, the browser)."""

    @property
    def capabilities(self) -> frozenset[str]:
        """The registry names this driver serves."""
        ...

    def supports_dry_run(self, capability: str) -> bool:
        """Whether `invoke(..., dry_run=True)` can check `capability` without effect."""
        ...

    def invoke(
        self,
        capability: str,
        parameters: Model,
        *,
        mind_allowed_hosts: Sequence[str] = (),
        dry_run: bool = False,
    ) -> DriverResult: ...


class DriverContractError(RuntimeError):
    """A driver broke the contract (wrong fields, wrong types): a bug, so it is raised."""


class Drivers:
    """Dispatch from capability name to the driver that serves it."""

    def __init__(
        self, drivers: Iterable[Driver], *, output_limit: int = OUTPUT_LIMIT_BYTES
    ) -> None:
        table: dict[str, Driver] = {}
        for driver in drivers:
            for name in driver.capabilities:
                if name not in REGISTRY:
                    raise ValueError(f"driver {driver!r} serves unregistered capability {name}")
                if name in table:
                    raise ValueError(f"capability {name} is served by two drivers")
                table[name] = driver
        self._table = table
        self._output_limit = output_limit

    @property
    def capabilities(self) -> frozenset[str]:
        return frozenset(self._table)

    def missing(self) -> tuple[str, ...]:
        """Registered capabilities no driver serves (empty for a complete set)."""
        return tuple(name for name in REGISTRY if name not in self._table)

    def supports_dry_run(self, capability_name: str) -> bool:
        driver = self._table.get(capability_name)
        return driver is not None and driver.supports_dry_run(capability_name)

    def invoke(
        self,
        capability_name: str,
        parameters: Model,
        *,
        mind_allowed_hosts: Sequence[str] = (),
        dry_run: bool = False,
    ) -> DriverResult:
        """Run one capability. Parameters must come from `CapabilitySpec.parse`.

        `dry_run` asks the server to check a write without making it (Kubernetes
        `dryRun=All`); it is refused for capabilities without a server-side dry run, because
        "nothing happened" must never be mistaken for "it would work".
        """
        spec = REGISTRY.get(capability_name)
        driver = self._table.get(capability_name)
        if spec is None or driver is None:
            raise LookupError(f"no driver for capability {capability_name!r}")
        if not isinstance(parameters, spec.parameters):
            raise TypeError(
                f"{capability_name} takes {spec.parameters.__name__}, "
                f"not {type(parameters).__name__}"
            )
        if dry_run and not driver.supports_dry_run(capability_name):
            raise ValueError(f"{capability_name} has no dry run")
        result = driver.invoke(
            capability_name, parameters, mind_allowed_hosts=mind_allowed_hosts, dry_run=dry_run
        )
        check_fields(spec, result)
        return bound_result(result, self._output_limit)


def check_fields(spec: CapabilitySpec, result: DriverResult) -> None:
    """A successful result reports exactly the declared observation fields, typed as declared.
    A failed one may report some of them (a missing workload's state is `absent`), no others."""
    declared = spec.observation_fields
    unknown = set(result.fields) - set(declared)
    missing = set(declared) - set(result.fields) if result.ok else set()
    if unknown or missing:
        raise DriverContractError(
            f"{spec.name} reported fields {sorted(result.fields)}, declared {sorted(declared)}"
        )
    for name, value in result.fields.items():
        if not _has_type(value, declared[name]):
            raise DriverContractError(
                f"{spec.name} field {name}={value!r} is not a {declared[name].value}"
            )


def _has_type(value: FieldValue, expected: ObservationType) -> bool:
    if expected is ObservationType.BOOLEAN:
        return isinstance(value, bool)
    if expected is ObservationType.NUMBER:
        return isinstance(value, int | float) and not isinstance(value, bool)
    return isinstance(value, str)


def bound_result(result: DriverResult, output_limit: int = OUTPUT_LIMIT_BYTES) -> DriverResult:
    """`result` with long text fields cut and its output shrunk to `output_limit` bytes."""
    fields: dict[str, FieldValue] = {}
    cut = False
    for name, value in result.fields.items():
        if isinstance(value, str) and len(value) > FIELD_TEXT_LIMIT:
            value = value[:FIELD_TEXT_LIMIT]
            cut = True
        fields[name] = value
    output, shrunk = bound_json(result.output, output_limit)
    if not (cut or shrunk):
        return result
    return result.model_copy(update={"fields": fields, "output": output, "truncated": True})


def json_size(value: JsonValue) -> int:
    """Bytes of `value` as compact UTF-8 JSON: what the ledger will store."""
    return len(json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode())


def bound_json(value: JsonValue, limit: int) -> tuple[JsonValue, bool]:
    """`value` shrunk to at most `limit` bytes of JSON, and whether anything was cut.

    Shrinking keeps the shape: strings are shortened, lists lose their tail, and a mapping
    shares its budget among its values so one huge value cannot starve the small ones (a
    status line survives next to a long log).
    """
    if json_size(value) <= limit:
        return value, False
    budget = limit
    while budget > 0:
        shrunk = _shrink(value, budget)
        if json_size(shrunk) <= limit:
            return shrunk, True
        budget = budget * 3 // 4
    return None, True


def _shrink(value: JsonValue, budget: int) -> JsonValue:
    size = json_size(value)
    if size <= budget:
        return value
    if isinstance(value, str):
        return _shrink_text(value, budget)
    if isinstance(value, list):
        return _shrink_list(value, budget)
    if isinstance(value, dict):
        return _shrink_mapping(value, budget)
    # A number, boolean or null larger than the budget: nothing sensible to keep.
    return None


def _shrink_text(text: str, budget: int) -> str:
    low, high = 0, len(text)
    while low < high:
        middle = (low + high + 1) // 2
        if json_size(text[:middle]) <= budget:
            low = middle
        else:
            high = middle - 1
    return text[:low]


def _shrink_list(items: list[JsonValue], budget: int) -> list[JsonValue]:
    kept: list[JsonValue] = []
    used = 2
    for item in items:
        size = json_size(item) + 1
        if used + size <= budget:
            kept.append(item)
            used += size
            continue
        # Keep part of the first item that does not fit, when there is room worth using.
        room = budget - used - 1
        if room >= 32:
            kept.append(_shrink(item, room))
        break
    return kept


def _shrink_mapping(mapping: dict[str, JsonValue], budget: int) -> dict[str, JsonValue]:
    keys_cost = sum(json_size(key) + 2 for key in mapping) + 2
    remaining = max(budget - keys_cost, 0)
    by_size = sorted(mapping, key=lambda key: json_size(mapping[key]))
    shrunk: dict[str, JsonValue] = {}
    for index, key in enumerate(by_size):
        share = remaining // (len(by_size) - index)
        shrunk[key] = _shrink(mapping[key], share)
        remaining -= json_size(shrunk[key])
    return {key: shrunk[key] for key in mapping}

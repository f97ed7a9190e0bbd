"""The controller's own host, read through psutil: disk, memory, busiest processes.

"Host" is wherever the controller runs (in a cluster, its container). Nothing here writes.
Process command lines can carry passwords and tokens, so each one is masked and shortened
before it leaves the driver; process names are kept as they are (they are executable names).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final, cast

import psutil
from pydantic import JsonValue

from minds.adapters.drivers.masking import mask_command
from minds.domain.base import Model
from minds.domain.capabilities.registry import DiskUsageParameters, ProcessListParameters
from minds.domain.capabilities.results import DriverResult

DISK: Final = "host.disk.usage"
MEMORY: Final = "host.memory.status"
PROCESSES: Final = "host.process.list"

COMMAND_CHARS: Final = 512
_ATTRS: Final = ["pid", "name", "username", "memory_info", "memory_percent", "cpu_times", "cmdline"]


class HostDriver:
    """`host.disk.usage`, `host.memory.status` and `host.process.list`."""

    capabilities: Final = frozenset({DISK, MEMORY, PROCESSES})

    def __init__(self, *, command_chars: int = COMMAND_CHARS) -> None:
        self._command_chars = command_chars

    def supports_dry_run(self, capability: str) -> bool:
        return False

    def invoke(
        self,
        capability: str,
        parameters: Model,
        *,
        mind_allowed_hosts: Sequence[str] = (),
        dry_run: bool = False,
    ) -> DriverResult:
        if capability == DISK:
            assert isinstance(parameters, DiskUsageParameters)
            return disk_usage(parameters.path)
        if capability == MEMORY:
            return memory_status()
        if capability == PROCESSES:
            assert isinstance(parameters, ProcessListParameters)
            return process_list(parameters.limit, command_chars=self._command_chars)
        raise LookupError(f"the host driver does not serve {capability}")


def disk_usage(path: str) -> DriverResult:
    try:
        usage = psutil.disk_usage(path)
    except FileNotFoundError:
        return DriverResult.failure(f"no such path on the host: {path}")
    except OSError as error:
        return DriverResult.failure(f"cannot read disk usage of {path}: {error.strerror or error}")
    return DriverResult.success(
        f"{path}: {usage.percent:.1f}% used, {_size(usage.free)} free of {_size(usage.total)}",
        fields={"usedPercent": usage.percent, "freeBytes": usage.free, "totalBytes": usage.total},
        output={
            "path": path,
            "totalBytes": usage.total,
            "usedBytes": usage.used,
            "freeBytes": usage.free,
            "usedPercent": usage.percent,
        },
    )


def memory_status() -> DriverResult:
    try:
        memory = psutil.virtual_memory()
        swap = psutil.swap_memory()
    except (OSError, RuntimeError) as error:
        return DriverResult.failure(f"cannot read memory status: {error}")
    return DriverResult.success(
        f"memory {memory.percent:.1f}% used, {_size(memory.available)} available "
        f"of {_size(memory.total)}",
        fields={
            "usedPercent": memory.percent,
            "availableBytes": memory.available,
            "totalBytes": memory.total,
        },
        output={
            "totalBytes": memory.total,
            "availableBytes": memory.available,
            "usedBytes": memory.used,
            "usedPercent": memory.percent,
            "swap": {"totalBytes": swap.total, "usedBytes": swap.used, "usedPercent": swap.percent},
        },
    )


def process_list(limit: int, *, command_chars: int = COMMAND_CHARS) -> DriverResult:
    """The `limit` processes using the most resident memory, command lines masked."""
    rows: list[dict[str, str | int | float | None]] = []
    try:
        for process in psutil.process_iter(_ATTRS, ad_value=None):
            rows.append(_row(process.info, command_chars))
    except (OSError, psutil.Error) as error:
        return DriverResult.failure(f"cannot list processes: {error}")
    rows.sort(key=lambda row: (-int(row["rssBytes"] or 0), int(row["pid"] or 0)))
    top = rows[:limit]
    return DriverResult.success(
        f"{len(top)} of {len(rows)} processes, by resident memory",
        fields={"count": len(top)},
        output={
            "sortedBy": "rssBytes",
            "total": len(rows),
            "processes": cast(list[JsonValue], top),
        },
    )


def _row(info: dict[str, object], command_chars: int) -> dict[str, str | int | float | None]:
    memory = info.get("memory_info")
    cpu = info.get("cpu_times")
    argv = info.get("cmdline")
    percent = info.get("memory_percent")
    return {
        "pid": int(str(info["pid"])),
        "name": str(info.get("name") or ""),
        "user": str(info["username"]) if info.get("username") else None,
        "rssBytes": int(getattr(memory, "rss", 0)),
        "memoryPercent": round(float(percent), 2) if isinstance(percent, int | float) else None,
        "cpuSeconds": (
            round(float(getattr(cpu, "user", 0.0)) + float(getattr(cpu, "system", 0.0)), 2)
            if cpu is not None
            else None
        ),
        # None when the command line cannot be read (another user's process, a zombie).
        "command": (
            mask_command([str(arg) for arg in argv], command_chars)
            if isinstance(argv, list)
            else None
        ),
    }


def _size(count: float) -> str:
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if abs(count) < 1024 or unit == "TiB":
            return f"{count:.1f} {unit}" if unit != "B" else f"{int(count)} B"
        count /= 1024
    return f"{count:.1f} PiB"

"""The host driver reads this machine through psutil: real reads, no fakes."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator

import psutil
import pytest

from minds.adapters.drivers import Drivers, HostDriver
from minds.adapters.drivers.host import _ATTRS, _row, disk_usage
from minds.domain.capabilities.registry import REGISTRY
from tests.fixtures.waiting import eventually


@pytest.fixture
def drivers() -> Drivers:
    return Drivers([HostDriver()])


def invoke(drivers: Drivers, name: str, raw: dict[str, object] | None = None):  # type: ignore[no-untyped-def]
    return drivers.invoke(name, REGISTRY[name].parse(raw or {}))


def test_disk_usage_of_the_root(drivers: Drivers) -> None:
    result = invoke(drivers, "host.disk.usage", {"path": "/"})
    assert result.ok, result.error
    usage = psutil.disk_usage("/")
    assert result.fields["totalBytes"] == usage.total
    assert 0 <= float(result.fields["usedPercent"]) <= 100
    assert result.summary.startswith("/: ")


def test_disk_usage_of_a_missing_path_is_a_clear_failure(drivers: Drivers) -> None:
    result = invoke(drivers, "host.disk.usage", {"path": "/no/such/place"})
    assert not result.ok
    assert result.error == "no such path on the host: /no/such/place"


def test_disk_usage_of_a_file_is_its_filesystem(tmp_path) -> None:  # type: ignore[no-untyped-def]
    target = tmp_path / "file"
    target.write_text("x")
    assert disk_usage(str(target)).ok


def test_memory_status(drivers: Drivers) -> None:
    result = invoke(drivers, "host.memory.status")
    assert result.ok
    assert result.fields["totalBytes"] == psutil.virtual_memory().total
    assert 0 < int(result.fields["availableBytes"]) <= int(result.fields["totalBytes"])


@pytest.fixture
def process_with_a_secret() -> Iterator[subprocess.Popen[bytes]]:
    child = subprocess.Popen(
        [sys.executable, "-c", "import time; time.sleep(60)", "--password", "hunter2",
         "--db=postgres://app:pa55word@db/x", "--notify=ops@example.com"]
    )  # fmt: skip
    # The kernel may show an empty command line for a moment after exec on a loaded machine.
    eventually(lambda: psutil.Process(child.pid).cmdline(), timeout=10, what="the child's argv")
    yield child
    child.kill()
    child.wait()


def test_process_list_is_bounded_and_sorted_by_memory(drivers: Drivers) -> None:
    result = invoke(drivers, "host.process.list", {"limit": 5})
    assert result.ok
    assert isinstance(result.output, dict)
    processes = result.output["processes"]
    assert isinstance(processes, list)
    assert result.fields["count"] == len(processes) <= 5
    memory = [int(str(process["rssBytes"])) for process in processes]  # type: ignore[index]
    assert memory == sorted(memory, reverse=True)


def test_command_lines_are_masked(process_with_a_secret: subprocess.Popen[bytes]) -> None:
    info = psutil.Process(process_with_a_secret.pid).as_dict(attrs=_ATTRS, ad_value=None)
    row = _row(info, 512)
    assert row["pid"] == process_with_a_secret.pid
    command = str(row["command"])
    assert "hunter2" not in command
    assert "pa55word" not in command
    assert "ops@example.com" not in command
    assert "--password [secret]" in command


def test_no_listed_command_line_carries_the_secret(
    drivers: Drivers, process_with_a_secret: subprocess.Popen[bytes]
) -> None:
    result = invoke(drivers, "host.process.list", {"limit": 200})
    assert "hunter2" not in result.model_dump_json()

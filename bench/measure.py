"""What the benchmark measures with: API server request counters, process CPU and memory, the
machine it ran on, and percentiles. Nothing here knows about plans."""

from __future__ import annotations

import os
import platform
import re
import subprocess
import threading
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

import psutil

from minds.devenv.kubectl import kubectl

# apiserver_request_total{code="200",component="apiserver",...,verb="PUT",version="v1alpha1"} 12
_SAMPLE = re.compile(r"^apiserver_request_total\{(?P<labels>[^}]*)\}\s+(?P<value>\S+)")
_LABEL = re.compile(r'(\w+)="((?:[^"\\]|\\.)*)"')

#: Verbs that change something. Server-side apply is counted by the API server as APPLY.
WRITE_VERBS = ("POST", "PUT", "PATCH", "DELETE", "APPLY")
READ_VERBS = ("GET", "LIST")


@dataclass(frozen=True)
class RequestKey:
    group: str
    resource: str
    subresource: str
    verb: str
    code: str


@dataclass(frozen=True)
class ApiCounters:
    """``apiserver_request_total`` summed over the labels we care about."""

    counts: dict[RequestKey, float] = field(default_factory=dict)

    @classmethod
    def parse(cls, text: str) -> ApiCounters:
        counts: dict[RequestKey, float] = {}
        for line in text.splitlines():
            match = _SAMPLE.match(line)
            if match is None:
                continue
            labels = dict(_LABEL.findall(match.group("labels")))
            key = RequestKey(
                group=labels.get("group", ""),
                resource=labels.get("resource", ""),
                subresource=labels.get("subresource", ""),
                verb=labels.get("verb", ""),
                code=labels.get("code", ""),
            )
            counts[key] = counts.get(key, 0.0) + float(match.group("value"))
        return cls(counts)

    def __sub__(self, before: ApiCounters) -> ApiCounters:
        keys = set(self.counts) | set(before.counts)
        return ApiCounters({k: self.counts.get(k, 0.0) - before.counts.get(k, 0.0) for k in keys})

    def __add__(self, other: ApiCounters) -> ApiCounters:
        keys = set(self.counts) | set(other.counts)
        return ApiCounters({k: self.counts.get(k, 0.0) + other.counts.get(k, 0.0) for k in keys})

    def total(
        self,
        *,
        verbs: Iterable[str] = WRITE_VERBS,
        resource: str | None = None,
        subresource: str | None = None,
        group: str | None = None,
        code: str | None = None,
        exclude_resources: Iterable[str] = (),
    ) -> int:
        wanted = set(verbs)
        excluded = set(exclude_resources)
        return round(
            sum(
                n
                for k, n in self.counts.items()
                if k.verb in wanted
                and (resource is None or k.resource == resource)
                and (subresource is None or k.subresource == subresource)
                and (group is None or k.group == group)
                and (code is None or k.code == code)
                and k.resource not in excluded
            )
        )


def scrape(kubeconfig: Path) -> ApiCounters:
    """The API server's request counters, read as the cluster administrator."""
    return ApiCounters.parse(kubectl(kubeconfig, "get", "--raw", "/metrics", timeout=60).stdout)


# -- processes -------------------------------------------------------------------------------


def cpu_seconds(pid: int | None, *, children: bool = True) -> float:
    """User + system CPU of a process, with its live and reaped children unless told not to;
    0 if it is gone. (Postgres works in child processes; the bench's children are the very
    processes it measures separately.)"""
    if pid is None:
        return 0.0
    try:
        proc = psutil.Process(pid)
        times = proc.cpu_times()
        total = times.user + times.system
        if children:
            total += times.children_user + times.children_system
            for child in proc.children(recursive=True):
                try:
                    ct = child.cpu_times()
                except psutil.Error:
                    continue
                total += ct.user + ct.system
    except psutil.Error:
        return 0.0
    return float(total)


def machine_cpu() -> tuple[float, float, float]:
    """CPU seconds of the whole machine so far, all cores: (busy, stolen, total). Busy is
    everything but idle and I/O wait; stolen is time a hypervisor gave to other guests."""
    t = psutil.cpu_times()
    total = float(sum(t))
    idle = t.idle + getattr(t, "iowait", 0.0)
    steal = float(getattr(t, "steal", 0.0))
    return total - idle - steal, steal, total


class RssSampler:
    """Samples a process's resident memory from a background thread; the peak is what counts
    (a controller that holds no plan state in memory should not grow with the number of plans).
    """

    def __init__(self, pid: int, interval: float = 0.2) -> None:
        self._pid = pid
        self._interval = interval
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self._samples: list[tuple[float, int]] = []
        self._threads: list[tuple[float, int]] = []
        self._thread = threading.Thread(target=self._run, name="rss-sampler", daemon=True)

    def start(self) -> RssSampler:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=5)

    def _run(self) -> None:
        try:
            proc = psutil.Process(self._pid)
        except psutil.Error:
            return
        while not self._stop.is_set():
            try:
                rss = proc.memory_info().rss
                threads = proc.num_threads()
            except psutil.Error:
                return
            now = time.monotonic()
            with self._lock:
                self._samples.append((now, rss))
                self._threads.append((now, threads))
            self._stop.wait(self._interval)

    def peak(self, since: float = 0.0, until: float = float("inf")) -> int:
        with self._lock:
            values = [rss for t, rss in self._samples if since <= t <= until]
        return max(values, default=0)

    def peak_threads(self, since: float = 0.0, until: float = float("inf")) -> int:
        with self._lock:
            values = [n for t, n in self._threads if since <= t <= until]
        return max(values, default=0)

    def latest(self) -> int:
        with self._lock:
            return self._samples[-1][1] if self._samples else 0


# -- the machine -----------------------------------------------------------------------------


def cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def machine() -> dict[str, str]:
    memory = psutil.virtual_memory().total
    load = os.getloadavg() if hasattr(os, "getloadavg") else (0.0, 0.0, 0.0)
    return {
        "CPU": cpu_model(),
        "Cores (logical)": str(os.cpu_count() or 0),
        "Memory": f"{memory / 2**30:.1f} GiB",
        "Python": platform.python_version(),
        "OS": f"{platform.system()} {platform.release()}",
        "Load average at start (1/5/15 min)": " / ".join(f"{x:.2f}" for x in load),
    }


def git_revision(root: Path) -> str:
    try:
        rev = subprocess.run(
            ["git", "rev-parse", "--short=12", "HEAD"],
            cwd=root,
            capture_output=True,
            text=True,
            check=True,
            timeout=10,
        ).stdout.strip()
        dirty = subprocess.run(
            ["git", "status", "--porcelain", "--untracked-files=no"],
            cwd=root,
            capture_output=True,
            text=True,
            check=True,
            timeout=10,
        ).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return "unknown"
    return f"{rev} (with uncommitted changes)" if dirty else rev


# -- statistics ------------------------------------------------------------------------------


def percentile(values: Iterable[float], q: float) -> float:
    """Linear interpolation between closest ranks (numpy's default); NaN for no values."""
    data = sorted(values)
    if not data:
        return float("nan")
    if len(data) == 1:
        return data[0]
    pos = (len(data) - 1) * q / 100.0
    lo = int(pos)
    hi = min(lo + 1, len(data) - 1)
    return data[lo] + (data[hi] - data[lo]) * (pos - lo)

"""The scale phase of ``make bench``: what open and finished plans cost a controller at rest.

For each level (10, 100 and 1,000 open plans by default, 5,000 with ``BENCH_SCALE``) the bench
tops the namespace up with plans that wait a day (one ``wait`` step), lets the controller
settle, and then measures over a quiet window: API requests per second (every resource request
but watches, as the API server counts them), the controller's CPU as a fraction of one core,
its resident memory, and the plan ticks it ran (its ``minds_workqueue_work_duration_seconds``
count for ``tick``), so that requests and CPU per tick can be read. Healthy watched workloads
(goals of active Minds, bench/watched.py) are in place throughout. After the quiet window, at
each level, the read-only rounds run again with those plans open: steps per second, and the
controller's peak RSS while they run. Then the watched workloads go, and the bench restarts the
controller with the open plans in place, and once more after (at most 1,000) plans have run to
completion, counting the API requests the restart makes until the controller is quiet again:
the number to compare with the number of plans.

Nothing here synchronises by sleeping: the window is what is measured, and every wait for the
controller is a wait for a condition with a deadline.
"""

from __future__ import annotations

import re
import time
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import psutil

from bench.measure import READ_VERBS, WRITE_VERBS, ApiCounters, RssSampler, cpu_seconds, scrape

if TYPE_CHECKING:
    from bench.executor_bench import Env

#: A day: far beyond the window, so a plan waits for the whole measurement.
WAIT_SECONDS = 86400
#: Creating plans goes this many at a time (one request each); listing shows progress.
CREATE_CHUNK = 50
#: The restart with finished plans runs at most this many to completion first.
FINISHED_PLANS = 1000
#: The controller's count of plan ticks run (a tick answered from memory included).
TICKS = "minds_workqueue_work_duration_seconds_count"
_METRIC = re.compile(r"^(?P<name>[a-zA-Z_:][\w:]*)(?:\{(?P<labels>[^}]*)\})?\s+(?P<value>\S+)")
_LABEL = re.compile(r'(\w+)="((?:[^"\\]|\\.)*)"')


@dataclass
class ScalePoint:
    open_plans: int
    window: float
    requests: int  # API requests (no watches) the whole cluster served in the window
    cpu_core_fraction: float  # the controller's CPU over the window, as a fraction of one core
    rss_bytes: int
    ticks: int = 0  # plan ticks the controller ran in the window (from its metrics)
    watched: int = 0  # healthy watched workloads in place
    #: The read-only rounds run at this level, steps/s each, and the controller's peak RSS then.
    steps_per_second: list[float] = field(default_factory=list)
    rss_running: int = 0

    @property
    def requests_per_second(self) -> float:
        return self.requests / self.window if self.window else 0.0

    @property
    def requests_per_tick(self) -> float:
        return self.requests / self.ticks if self.ticks else float("nan")

    @property
    def cpu_ms_per_tick(self) -> float:
        cpu = self.cpu_core_fraction * self.window
        return 1000 * cpu / self.ticks if self.ticks else float("nan")


@dataclass(frozen=True)
class RestartCost:
    plans: int
    state: str  # "open" or "finished"
    requests: int  # API requests from the controller's start to quiet
    writes: int
    seconds: float


@dataclass(frozen=True)
class ScaleResult:
    points: list[ScalePoint]
    restarts: list[RestartCost]
    watched: int = 0
    watched_cycle: int = 0  # seconds between the cycles of the watched workloads' Minds


def controller_metrics(env: Env, name: str) -> list[tuple[dict[str, str], float]]:
    """One metric of the controller's ``/metrics``: (labels, value) per sample."""
    with urllib.request.urlopen(env.controller.metrics_url, timeout=30) as answer:  # noqa: S310
        text = answer.read().decode()
    found = []
    for line in text.splitlines():
        match = _METRIC.match(line)
        if match is None or match.group("name") != name:
            continue
        found.append(
            (dict(_LABEL.findall(match.group("labels") or "")), float(match.group("value")))
        )
    return found


def ticks_run(env: Env) -> int:
    return round(
        sum(v for labels, v in controller_metrics(env, TICKS) if labels.get("work") == "tick")
    )


def requests_of(api: ApiCounters) -> int:
    """Resource requests, reads and writes; watches are streams, not requests per second, and
    non-resource requests (``/metrics``) are the bench's own scrapes."""
    return api.total(verbs=READ_VERBS + WRITE_VERBS, exclude_resources=("",))


def waiting_plan(namespace: str, name: str, mind: str, label: str) -> dict[str, Any]:
    from bench.executor_bench import plan_object

    body = plan_object(
        namespace,
        name,
        [{"key": "W1", "title": "wait a day", "kind": "wait", "waitSeconds": WAIT_SECONDS}],
        5,
        label,
    )
    body["spec"]["mind"] = mind
    return body


def finished_plan(namespace: str, name: str, mind: str) -> dict[str, Any]:
    from bench.executor_bench import plan_object, readonly_steps

    body = plan_object(namespace, name, readonly_steps(namespace, 1, "chain"), 5, "done")
    body["spec"]["mind"] = mind
    return body


def _top_up(env: Env, namespace: str, names: list[str], make: Any) -> None:
    from bench.executor_bench import create_plan

    for name in names:
        create_plan(env, make(name))


def _settled(
    env: Env, namespace: str, selector: str, count: int, phases: frozenset[str], timeout: float
) -> None:
    from bench.executor_bench import list_plans, wait_for

    def ready() -> bool:
        plans = list_plans(env, namespace, selector)
        done = [p for p in plans.values() if (p.get("status") or {}).get("phase") in phases]
        return len(done) >= count

    wait_for(ready, timeout=timeout, what=f"{count} plans {'/'.join(sorted(phases))}", interval=1.0)


def _quiet(env: Env, limit: float) -> ApiCounters:
    """Counters once two scrapes two seconds apart see no new request."""
    from bench.executor_bench import deadline_after

    deadline = deadline_after(limit)
    last = scrape(env.kubeconfig)
    while time.monotonic() < deadline:
        time.sleep(2.0)
        now = scrape(env.kubeconfig)
        if requests_of(now - last) <= 2:  # the bench's own LIST at most
            return now
        last = now
    return last


def measure_idle(env: Env, open_plans: int, window: float, watched: int = 0) -> ScalePoint:
    pid = env.controller.pid
    api0, cpu0, t0 = scrape(env.kubeconfig), cpu_seconds(pid, children=False), time.monotonic()
    ticks0 = ticks_run(env)
    time.sleep(window)  # the window itself is the measurement
    api1, cpu1, t1 = scrape(env.kubeconfig), cpu_seconds(pid, children=False), time.monotonic()
    ticks1 = ticks_run(env)
    rss = psutil.Process(pid).memory_info().rss if pid else 0
    return ScalePoint(
        open_plans=open_plans,
        window=t1 - t0,
        requests=requests_of(api1 - api0),
        cpu_core_fraction=(cpu1 - cpu0) / (t1 - t0),
        rss_bytes=rss,
        ticks=ticks1 - ticks0,
        watched=watched,
    )


def restart_cost(env: Env, plans: int, state: str, limit: float) -> RestartCost:
    from minds.devenv.controller import start_controller, stop_controller

    stop_controller(env.controller)
    before, t0 = scrape(env.kubeconfig), time.monotonic()
    env.controller = start_controller(
        kubeconfig=env.stack.controller_kubeconfig,
        database_url=env.stack.database_url,
        state_dir=env.stack.state_dir,
    )
    env.pids["controller"] = env.controller.pid
    env.controller.wait_ready(timeout=180)
    after = _quiet(env, limit)
    spent = after - before
    return RestartCost(
        plans=plans,
        state=state,
        requests=requests_of(spent),
        writes=spent.total(verbs=WRITE_VERBS, exclude_resources=("",)),
        seconds=time.monotonic() - t0,
    )


def scale_phase(
    env: Env,
    namespace: str,
    mind: str,
    levels: list[int],
    window: float,
    timeout: float,
    *,
    watched: int = 0,
    watched_cycle: int = 3600,
    throughput: Callable[[int], list[float]] | None = None,
) -> ScaleResult:
    """``throughput(level)`` runs the read-only rounds with ``level`` plans open and returns
    their steps/s."""
    from bench.watched import IDLE_NAMESPACE, remove_namespace, watched_world

    points: list[ScalePoint] = []
    made = 0
    if watched:
        watched_world(env, watched, watched_cycle, timeout)
    sampler = RssSampler(env.controller.pid).start()
    try:
        for level in levels:
            names = [f"idle-{i:04d}" for i in range(made, level)]
            print(f"bench: scale: {len(names)} more waiting plans ({level} open)", flush=True)
            _top_up(env, namespace, names, lambda n: waiting_plan(namespace, n, mind, "idle"))
            made = level
            _settled(env, namespace, "minds.dev/bench=idle", level, frozenset({"waiting"}), timeout)
            _quiet(env, timeout)
            point = measure_idle(env, level, window, watched)
            print(
                f"bench: scale: {level} open plans: {point.requests_per_second:.2f} requests/s, "
                f"{100 * point.cpu_core_fraction:.2f}% of a core, "
                f"{point.rss_bytes / 2**20:.0f} MiB, {point.ticks} ticks",
                flush=True,
            )
            if throughput is not None:
                since = time.monotonic()
                point.steps_per_second.extend(throughput(level))
                point.rss_running = sampler.peak(since)
                print(
                    f"bench: scale: {level} open plans: read-only steps/s "
                    + ", ".join(f"{x:.1f}" for x in point.steps_per_second)
                    + f"; controller RSS peak {point.rss_running / 2**20:.0f} MiB",
                    flush=True,
                )
            points.append(point)
    finally:
        sampler.stop()
    if watched:
        # A restarted controller runs every Mind's cycle, which observes each goal: the restart
        # is measured against plans alone.
        remove_namespace(env, IDLE_NAMESPACE, timeout)
    restarts = [restart_cost(env, made, "open", timeout)]
    _report(restarts[-1])
    _clear(env, namespace, "minds.dev/bench=idle", timeout)
    made = min(made, FINISHED_PLANS)
    names = [f"done-{i:04d}" for i in range(made)]
    print(f"bench: scale: {made} plans run to completion", flush=True)
    _top_up(env, namespace, names, lambda n: finished_plan(namespace, n, mind))
    _settled(env, namespace, "minds.dev/bench=done", made, frozenset({"completed"}), timeout)
    _quiet(env, timeout)
    restarts.append(restart_cost(env, made, "finished", timeout))
    _report(restarts[-1])
    return ScaleResult(
        points=points, restarts=restarts, watched=watched, watched_cycle=watched_cycle
    )


def _report(cost: RestartCost) -> None:
    print(
        f"bench: scale: restart with {cost.plans} {cost.state} plans: {cost.requests} requests "
        f"({cost.writes} writes) in {cost.seconds:.0f} s",
        flush=True,
    )


def _clear(env: Env, namespace: str, selector: str, timeout: float) -> None:
    from bench.executor_bench import list_plans, wait_for

    env.kubectl("delete", "plans", "-n", namespace, "-l", selector, "--wait=false")
    wait_for(
        lambda: not list_plans(env, namespace, selector),
        timeout=timeout,
        what=f"plans {selector} deleted",
        interval=1.0,
    )


def render(result: ScaleResult, plot_name: str | None) -> list[str]:
    """The doc's scale section: one row per level, the restarts, and the plot."""
    import statistics

    lines = [
        "| Open waiting plans | API requests/s (idle) | Controller CPU (% of one core) "
        "| Controller RSS | Plan ticks/s | Requests per tick | CPU per tick "
        "| Read-only steps/s, median (rounds) | Controller RSS, rounds running |",
        "|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for p in result.points:
        rates = p.steps_per_second
        steps = (
            f"{statistics.median(rates):.1f} ({', '.join(f'{x:.1f}' for x in rates)})"
            if rates
            else "n/a"
        )
        per_tick = "n/a" if not p.ticks else f"{p.requests_per_tick:.4f}"
        cpu_tick = "n/a" if not p.ticks else f"{1000 * p.cpu_ms_per_tick:.0f} µs"
        running = f"{p.rss_running / 2**20:.0f} MiB" if p.rss_running else "n/a"
        lines.append(
            f"| {p.open_plans} | {p.requests_per_second:.2f} | {100 * p.cpu_core_fraction:.2f} "
            f"| {p.rss_bytes / 2**20:.0f} MiB | {p.ticks / p.window:.1f} | {per_tick} "
            f"| {cpu_tick} | {steps} | {running} |"
        )
    lines += [
        "",
        "| Controller restart with | API requests until quiet | of which writes | Seconds |",
        "|---|---:|---:|---:|",
    ]
    for c in result.restarts:
        lines.append(f"| {c.plans} {c.state} plans | {c.requests} | {c.writes} | {c.seconds:.0f} |")
    if plot_name:
        lines += ["", f"![API requests/s and controller RSS against open plans]({plot_name})"]
    return lines


def plot(result: ScaleResult, path: Any) -> bool:
    """Requests/s and RSS against open plans, as a PNG beside the doc; False without matplotlib
    (the table says the same)."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return False
    xs = [p.open_plans for p in result.points]
    fig, left = plt.subplots(figsize=(6.4, 3.6), dpi=100)
    left.plot(xs, [p.requests_per_second for p in result.points], "o-", color="tab:blue")
    left.set_xscale("log")
    left.set_xlabel("open waiting plans")
    left.set_ylabel("API requests/s while idle", color="tab:blue")
    right = left.twinx()
    right.plot(xs, [p.rss_bytes / 2**20 for p in result.points], "s--", color="tab:red")
    right.set_ylabel("controller RSS (MiB)", color="tab:red")
    right.set_ylim(bottom=0)
    left.set_ylim(bottom=0)
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)
    return True

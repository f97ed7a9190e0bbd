"""``make bench``: the executor against a fresh local stack, with a baseline from the same run.

One run starts its own devcluster, embedded Postgres and controller process (under its
ServiceAccount, exactly as ``minds dev up`` does), then:

1. **read-only plans**: N operator-authored plans of K ``service.status`` steps on a Deployment
   the bench marks healthy; measures completed steps per second (first plan applied to last plan
   completed), API writes per step (``apiserver_request_total`` before and after, as the
   administrator), ledger rows per step, CPU per process and the controller's peak RSS;
2. **approvals**: M plans of one ``service.restart`` that needs approval; the bench decides each
   Approval as the ``approver`` user and measures from sending the decision to a watch on the
   Plans delivering the step as ``completed``;
3. **baseline**: with the controller stopped, a plain client (configured as the controller's,
   under its ServiceAccount) doing what the executor does per transition (GET the Plan, PUT its
   status with that resourceVersion) as fast as it can, on the same Plan objects, once with one
   thread and once with several.

It prints a table and rewrites ``docs/benchmarks.md``. The machine is shared and noisy, so the
numbers that mean something are ratios against the baseline measured in the same run.
Everything is torn down at the end, also on failure or Ctrl-C; a failed run keeps its state
directory (logs) and says where it is.
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import shutil
import signal
import sys
import tempfile
import threading
import time
import traceback
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import psycopg
from kubernetes import client, config
from kubernetes.client.exceptions import ApiException

from bench.floor import Floor
from bench.floor import measure as measure_floor
from bench.measure import (
    ApiCounters,
    RssSampler,
    cpu_seconds,
    git_revision,
    machine,
    machine_cpu,
    percentile,
    scrape,
)
from bench.scale import ScaleResult, plot, scale_phase
from bench.watch_latency import Changes, FirstSeen, Stream
from bench.watch_latency import measure as measure_watch_latency
from bench.watched import BurstResult, DetectionResult, detection_phase, running
from minds.adapters.drivers.kubernetes import RESTARTED_AT
from minds.adapters.kube.client import COMPONENT, api_client
from minds.controller.workers import WORKERS
from minds.devenv import cluster as devcluster
from minds.devenv import postgres
from minds.devenv.controller import ControllerHandle, start_controller, stop_controller
from minds.devenv.install import manage_namespace, repo_root
from minds.devenv.kubectl import kubectl
from minds.devenv.stack import Stack, down, up
from minds.domain.resources.kinds import APPROVAL, MIND, PLAN

MIND_NAME = "bench"
TARGET = "bench-target"
#: One namespace and one Mind for every phase: each Mind's daemon holds one of the
#: controller's workers for good, so the bench keeps to one.
NAMESPACE = "bench"
#: The Mind's own cycle is not what is measured: keep it from running during the phases.
MIND_CYCLE_SECONDS = 3600
LABEL = "minds.dev/bench"
ROUND_LABEL = "minds.dev/bench-round"
#: How long an approved restart may take before the bench calls the run failed.
APPROVAL_DEADLINE_SECONDS = 60.0
#: How often the read-only phase lists its plans: the resolution of "last plan completed".
READONLY_POLL_SECONDS = 0.1
#: The controller's threads for plan ticks, read from the code that defines them.
CONTROLLER_WORKERS = WORKERS.tick_threads

#: The scale phase's plot, written beside the doc.
SCALE_PLOT = "benchmarks-scale.png"

BAD_PHASES = frozenset({"failed", "blocked", "draft", "superseded", "abandoned", "replanning"})
BAD_STEPS = frozenset({"failed", "cancelled", "blocked"})


class BenchError(RuntimeError):
    """The benchmark could not measure what it set out to; the message says why."""


# -- parameters ------------------------------------------------------------------------------


@dataclass(frozen=True)
class Option:
    flag: str
    env: str
    default: Any
    kind: Callable[[str], Any]
    help: str


OPTIONS = (
    Option("plans", "BENCH_PLANS", 20, int, "read-only plans applied at once (N)"),
    Option("steps", "BENCH_STEPS", 5, int, "service.status steps per plan (K, at most 30)"),
    Option(
        "shape",
        "BENCH_SHAPE",
        "chain",
        str,
        "chain: each step depends on the one before; parallel: no dependencies",
    ),
    Option(
        "rounds",
        "BENCH_ROUNDS",
        3,
        int,
        "rounds of the read-only phase (fresh plans each) and of each baseline variant; "
        "medians are reported",
    ),
    Option("approvals", "BENCH_APPROVALS", 10, int, "plans with one approved restart (M)"),
    Option(
        "approval_concurrency",
        "BENCH_APPROVAL_CONCURRENCY",
        1,
        int,
        "approval plans in flight at once (1: one after another, on an otherwise idle controller)",
    ),
    Option(
        "baseline_writes",
        "BENCH_BASELINE_WRITES",
        0,
        int,
        "conditional status writes per baseline variant (0: as many as the controller made on "
        "Plans in the read-only phase, at least 200)",
    ),
    Option(
        "baseline_threads",
        "BENCH_BASELINE_THREADS",
        8,
        int,
        "threads of the second baseline variant (0: skip it)",
    ),
    Option(
        "probe_plans",
        "BENCH_PROBE_PLANS",
        "20,100",
        str,
        "saturation probe: plans awaiting approval at once, all approved together, one variant "
        "per number, comma-separated ('' skips the probe)",
    ),
    Option(
        "probe_window",
        "BENCH_PROBE_WINDOW",
        45.0,
        float,
        "saturation probe: how long after the decisions the plans have to complete, seconds "
        "(for 20 plans; a variant of more plans has proportionally longer)",
    ),
    Option(
        "detections",
        "BENCH_DETECTIONS",
        10,
        int,
        "detection: trials, each a Mind at the default cycle whose watched Deployment gets the "
        "fault label (0: skip)",
    ),
    Option(
        "burst",
        "BENCH_BURST",
        20,
        int,
        "burst: changes to one watched workload within 2 s, counted in its Mind's cycles (0: skip)",
    ),
    Option(
        "watched",
        "BENCH_WATCHED",
        100,
        int,
        "scale phase: healthy watched workloads (goals of active Minds) in place (0: none)",
    ),
    Option(
        "scale",
        "BENCH_SCALE",
        "10,100,1000",
        str,
        "scale phase: numbers of open waiting plans to measure the idle controller and the "
        "read-only rounds at, comma-separated ('' skips the phase; add 5000 for the largest "
        "level, which takes many minutes more)",
    ),
    Option("scale_window", "BENCH_SCALE_WINDOW", 60.0, float, "scale phase: idle window, seconds"),
    Option("poll", "BENCH_POLL_SECONDS", 0.05, float, "interval of status polls, seconds"),
    Option("timeout", "BENCH_TIMEOUT", 240.0, float, "deadline of each phase, seconds"),
)


@dataclass(frozen=True)
class Params:
    plans: int
    steps: int
    shape: str
    rounds: int
    approvals: int
    approval_concurrency: int
    baseline_writes: int
    baseline_threads: int
    probe_plans: str
    probe_window: float
    detections: int
    burst: int
    watched: int
    scale: str
    scale_window: float
    poll: float
    timeout: float
    doc: Path | None
    keep_state: bool

    def check(self) -> None:
        if not 1 <= self.plans <= 500:
            raise BenchError("BENCH_PLANS must be between 1 and 500")
        if not 1 <= self.steps <= 30:
            raise BenchError("BENCH_STEPS must be between 1 and 30 (a plan has at most 30 steps)")
        if self.shape not in ("chain", "parallel"):
            raise BenchError("BENCH_SHAPE must be chain or parallel")
        if not 1 <= self.rounds <= 20:
            raise BenchError("BENCH_ROUNDS must be between 1 and 20")
        if not 0 <= self.approvals <= 200:
            raise BenchError("BENCH_APPROVALS must be between 0 and 200")
        if self.approval_concurrency < 1:
            raise BenchError("BENCH_APPROVAL_CONCURRENCY must be at least 1")
        if self.baseline_writes < 0 or self.baseline_threads < 0:
            raise BenchError("BENCH_BASELINE_WRITES and BENCH_BASELINE_THREADS must be >= 0")
        if any(not 1 <= n <= 100 for n in self.probe_sizes):
            raise BenchError("BENCH_PROBE_PLANS must be numbers between 1 and 100")
        if not 0 <= self.detections <= 30:
            raise BenchError("BENCH_DETECTIONS must be between 0 and 30")
        if not 0 <= self.burst <= 40:
            raise BenchError("BENCH_BURST must be between 0 and 40 (changes within 2 s)")
        if not 0 <= self.watched <= 300:
            raise BenchError("BENCH_WATCHED must be between 0 and 300")
        if not 1 <= self.probe_window <= 600:
            raise BenchError("BENCH_PROBE_WINDOW must be between 1 and 600 seconds")
        if any(n < 1 or n > 5000 for n in self.scale_levels) or self.scale_levels != sorted(
            self.scale_levels
        ):
            raise BenchError("BENCH_SCALE must be increasing numbers between 1 and 5000")
        if not 5 <= self.scale_window <= 600:
            raise BenchError("BENCH_SCALE_WINDOW must be between 5 and 600 seconds")
        if not 0.005 <= self.poll <= 5:
            raise BenchError("BENCH_POLL_SECONDS must be between 0.005 and 5")
        if self.timeout < 10:
            raise BenchError("BENCH_TIMEOUT must be at least 10 seconds")

    def values(self) -> dict[str, Any]:
        return {o.flag: getattr(self, o.flag) for o in OPTIONS}

    @property
    def scale_levels(self) -> list[int]:
        return _numbers(self.scale, "BENCH_SCALE")

    @property
    def probe_sizes(self) -> list[int]:
        return _numbers(self.probe_plans, "BENCH_PROBE_PLANS")


def _numbers(text: str, name: str) -> list[int]:
    try:
        return [int(x) for x in str(text).split(",") if x.strip()]
    except ValueError as exc:
        raise BenchError(f"{name} must be comma-separated numbers") from exc


def parse_args(argv: list[str] | None = None) -> Params:
    parser = argparse.ArgumentParser(
        prog="python -m bench.executor_bench",
        description="Benchmark the executor against a fresh devcluster (see docs/benchmarks.md).",
    )
    for o in OPTIONS:
        raw = os.environ.get(o.env)
        try:
            default = o.kind(raw) if raw not in (None, "") else o.default
        except ValueError:
            parser.error(f"{o.env}={raw!r} is not a valid {o.kind.__name__}")
        parser.add_argument(
            f"--{o.flag.replace('_', '-')}",
            dest=o.flag,
            type=o.kind,
            default=default,
            help=f"{o.help} [{o.env}, default {o.default}]",
        )
    parser.add_argument(
        "--doc",
        default=os.environ.get("BENCH_DOC") or str(repo_root() / "docs" / "benchmarks.md"),
        help="where to write the report [BENCH_DOC, default docs/benchmarks.md]",
    )
    parser.add_argument("--no-doc", action="store_true", help="print the table only")
    parser.add_argument(
        "--keep-state",
        action="store_true",
        help="keep the state directory (logs, etcd and Postgres data) even after a good run",
    )
    ns = parser.parse_args(argv)
    params = Params(
        **{o.flag: getattr(ns, o.flag) for o in OPTIONS},
        doc=None if ns.no_doc else Path(ns.doc),
        keep_state=ns.keep_state,
    )
    params.check()
    return params


def command_line(params: Params) -> str:
    """The exact command that reproduces this run's parameters: ``make bench`` with the ones
    that differ from the defaults."""
    changed = [o for o in OPTIONS if getattr(params, o.flag) != o.default]
    env = "".join(f"{o.env}={getattr(params, o.flag)} " for o in changed)
    return f"{env}make bench"


# -- results ---------------------------------------------------------------------------------

PROCESSES = ("controller", "API server + etcd", "Postgres", "bench client")


@dataclass
class Cost:
    """What a phase cost: wall time, API requests, CPU per process, ledger rows."""

    seconds: float
    api: ApiCounters
    cpu: dict[str, float]  # CPU seconds per process ...
    cpu_seconds: float  # ... over this much wall time
    machine: tuple[float, float, float]  # whole machine, same window: busy, stolen, total
    ledger: dict[str, int]


@dataclass
class ReadOnlyResult:
    round: int
    plans: int
    steps_per_plan: int
    completed_steps: int
    attempts: int
    seconds: float  # first plan applied -> last plan completed
    apply_seconds: float
    plan_seconds: list[float]
    max_executing: int
    cost: Cost
    rss_idle: int
    rss_peak: int
    threads_peak: int
    plan_bytes: int  # size of one completed Plan object as JSON

    @property
    def steps_per_second(self) -> float:
        return self.completed_steps / self.seconds if self.seconds > 0 else 0.0


@dataclass
class ApprovalResult:
    plans: int
    concurrency: int
    latencies: list[float]  # decision sent -> step completed, by watch
    acted: list[float]  # decision sent -> the restart seen on the Deployment, by watch
    raised: list[float]  # plan applied -> step awaiting_approval
    cost: Cost
    rss_peak: int
    #: Events the controller posted during the phase (objects; a repeat counted on its first
    #: is one): the API server's counters count every client's, a rollout's included.
    controller_events: int = 0


@dataclass
class ProbeResult:
    plans: int
    window: float
    raised: int  # steps that reached awaiting_approval with an Approval
    decided: int  # Approvals the bench approved
    pending: int  # Approvals the controller had shown to people (phase set) by the end
    executed: int  # Approvals the controller carried out by the end
    latencies: list[float]  # decision -> step completed, for those that completed
    states: dict[str, int]  # "plan phase/step status" -> plans, at the end


@dataclass
class BaselineResult:
    round: int
    threads: int
    writes: int
    seconds: float
    conflicts: int
    api: ApiCounters

    @property
    def writes_per_second(self) -> float:
        return self.writes / self.seconds if self.seconds > 0 else 0.0


@dataclass
class Results:
    params: Params
    machine: dict[str, str]
    revision: str
    versions: dict[str, str]
    setup_seconds: float
    readonly: list[ReadOnlyResult]
    approvals: ApprovalResult | None
    probes: list[ProbeResult]
    baselines: list[BaselineResult] = field(default_factory=list)
    scale: ScaleResult | None = None
    #: PATCH returned -> watch event arrived, seconds: the floor under any reaction.
    watch_latencies: list[float] = field(default_factory=list)
    #: The bare chain of round trips an approved action needs (bench/floor.py), same run.
    floor: Floor = field(default_factory=Floor)
    detection: DetectionResult | None = None
    burst: BurstResult | None = None


# -- the running stack -----------------------------------------------------------------------


@dataclass
class Env:
    stack: Stack
    controller: ControllerHandle
    admin: client.CustomObjectsApi
    approver: client.CustomObjectsApi
    pids: dict[str, int | None]
    sampler: RssSampler

    @property
    def kubeconfig(self) -> Path:
        return self.stack.kubeconfig

    def kubectl(self, *args: str, input_: str | None = None) -> str:
        return kubectl(self.kubeconfig, *args, input_=input_).stdout

    def cpu(self) -> dict[str, float]:
        # The bench started the controller and the devcluster, so they are its children:
        # count the bench process alone.
        return {
            name: cpu_seconds(self.pids.get(name), children=name != "bench client")
            for name in PROCESSES
        }

    def ledger_rows(self) -> dict[str, int]:
        tables = ("events", "executions", "execution_outcomes", "intentions")
        counts: dict[str, int] = {}
        with psycopg.connect(self.stack.database_url, connect_timeout=10) as conn:
            for table in tables:
                row = conn.execute(f"SELECT count(*) FROM {table}").fetchone()  # noqa: S608
                counts[table] = int(row[0]) if row else 0
        return counts

    def ensure_controller(self) -> None:
        if not self.controller.alive():
            raise BenchError(f"the controller exited\n{controller_log_tail(self.controller)}")


def controller_log_tail(handle: ControllerHandle, lines: int = 40) -> str:
    tail = "\n".join(handle.log().splitlines()[-lines:])
    return f"--- last lines of {handle.log_path} ---\n{tail}"


def as_dict(value: object) -> dict[str, Any]:
    """The kubernetes client types custom objects as ``object``; they are JSON objects."""
    if not isinstance(value, dict):
        raise BenchError(f"the API server answered {type(value).__name__}, not an object")
    return value


def custom_api(kubeconfig: Path, context: str | None = None) -> client.CustomObjectsApi:
    api = config.new_client_from_config(  # type: ignore[no-untyped-call]
        config_file=str(kubeconfig), context=context
    )
    return client.CustomObjectsApi(api)


def deadline_after(seconds: float) -> float:
    return time.monotonic() + seconds


def wait_for(probe: Callable[[], Any], *, timeout: float, what: str, interval: float = 0.2) -> Any:
    """Poll ``probe`` until it returns something truthy; BenchError at the deadline."""
    deadline = deadline_after(timeout)
    while True:
        value = probe()
        if value:
            return value
        if time.monotonic() > deadline:
            raise BenchError(f"{what}: not within {timeout:.0f} s")
        time.sleep(interval)


def quiesce(env: Env, *, quiet: float = 1.0, limit: float = 20.0) -> ApiCounters:
    """Counters once the controller stopped writing (trailing Events, conclusions): two scrapes
    ``quiet`` seconds apart that agree on the writes to Plans, Approvals and Events."""
    deadline = deadline_after(limit)
    watched = ("plans", "approvals", "events")

    def writes(c: ApiCounters) -> int:
        return sum(c.total(resource=r) for r in watched)

    last = scrape(env.kubeconfig)
    while time.monotonic() < deadline:
        time.sleep(quiet)
        now = scrape(env.kubeconfig)
        if writes(now) == writes(last):
            return now
        last = now
    return last


@contextmanager
def measured(env: Env) -> Iterator[Callable[[float], Cost]]:
    """Snapshot counters around a phase; the caller finishes with ``cost(seconds)`` as soon as
    the phase is over. CPU is read at that moment (its window is ``cpu_seconds`` of wall time);
    API requests and ledger rows once the controller has stopped writing, so that trailing
    work (conclusions, Events) is counted."""
    api0, rows0 = scrape(env.kubeconfig), env.ledger_rows()
    cpu0, wall0, all0 = env.cpu(), time.monotonic(), machine_cpu()

    def cost(seconds: float) -> Cost:
        cpu1, wall1, all1 = env.cpu(), time.monotonic(), machine_cpu()
        api1 = quiesce(env)
        rows1 = env.ledger_rows()
        return Cost(
            seconds=seconds,
            api=api1 - api0,
            cpu={k: cpu1[k] - cpu0.get(k, 0.0) for k in cpu1},
            cpu_seconds=wall1 - wall0,
            machine=(all1[0] - all0[0], all1[1] - all0[1], all1[2] - all0[2]),
            ledger={k: rows1[k] - rows0.get(k, 0) for k in rows1},
        )

    yield cost


def start(state_dir: Path) -> Env:
    print(f"bench: starting devcluster, Postgres and the controller in {state_dir}", flush=True)
    stack = up(state_dir, with_controller=False)
    handle = start_controller(
        kubeconfig=stack.controller_kubeconfig, database_url=stack.database_url, state_dir=state_dir
    )
    sampler = RssSampler(handle.pid).start()
    cluster = devcluster.cluster_running(state_dir / "cluster")
    pg = postgres.postgres_handle(state_dir / "postgres")
    env = Env(
        stack=stack,
        controller=handle,
        admin=custom_api(stack.kubeconfig),
        approver=custom_api(stack.kubeconfig, context="approver"),
        pids={
            "controller": handle.pid,
            "API server + etcd": cluster.pid if cluster else None,
            "Postgres": pg.pid if pg else None,
            "bench client": os.getpid(),
        },
        sampler=sampler,
    )
    handle.wait_ready(timeout=120)
    return env


def versions(env: Env) -> dict[str, str]:
    server = json.loads(env.kubectl("version", "-o", "json")).get("serverVersion", {})
    with psycopg.connect(env.stack.database_url, connect_timeout=10) as conn:
        row = conn.execute("SHOW server_version").fetchone()
    kopf_version = "unknown"
    with suppress(ImportError):
        from importlib.metadata import version

        kopf_version = version("kopf")
    return {
        "Kubernetes API server": f"{server.get('gitVersion', 'unknown')} (devcluster, embedded "
        "etcd)",
        "Postgres": f"{row[0] if row else 'unknown'} (embedded, durable: fsync on)",
        "kopf": kopf_version,
    }


# -- setup of the world ----------------------------------------------------------------------


def apply(env: Env, *objects: dict[str, Any]) -> None:
    env.kubectl(
        "apply",
        "-f",
        "-",
        input_=json.dumps({"apiVersion": "v1", "kind": "List", "items": list(objects)}),
    )


def world(env: Env, namespace: str, mind_spec: dict[str, Any]) -> None:
    """A namespace with the bench's Mind and a Deployment whose status says it runs."""
    apply(
        env,
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}},
    )
    # The controller may touch workloads only where a platform team lets the minds manage them.
    manage_namespace(env.kubeconfig, namespace)
    apply(
        env,
        {
            "apiVersion": f"{MIND.group}/{MIND.version}",
            "kind": MIND.kind,
            "metadata": {"name": MIND_NAME, "namespace": namespace},
            # The devcluster's approver decides the bench's Approvals (docs/approvals.md).
            "spec": {"approvers": {"groups": ["minds:approvers"]}, **mind_spec},
        },
    )
    workload(env, namespace, TARGET)

    def registered() -> bool:
        obj = as_dict(
            env.admin.get_namespaced_custom_object(
                MIND.group, MIND.version, namespace, MIND.plural, MIND_NAME, _request_timeout=30
            )
        )
        return bool((obj.get("status") or {}).get("observedGeneration"))

    wait_for(registered, timeout=60, what=f"the controller to register Mind {namespace}/bench")


def workload(env: Env, namespace: str, name: str) -> None:
    """A Deployment whose status says it runs, so a restart of it can be verified."""
    apply(
        env,
        {
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "metadata": {"name": name, "namespace": namespace},
            "spec": {
                "replicas": 1,
                "selector": {"matchLabels": {"app": name}},
                "template": {
                    "metadata": {"labels": {"app": name}},
                    "spec": {"containers": [{"name": "w", "image": "busybox"}]},
                },
            },
        },
    )
    deployment = json.loads(env.kubectl("get", "deployment", name, "-n", namespace, "-o", "json"))
    status = {
        "observedGeneration": deployment["metadata"]["generation"],
        "replicas": 1,
        "updatedReplicas": 1,
        "readyReplicas": 1,
        "availableReplicas": 1,
        "conditions": [
            {"type": "Progressing", "status": "True", "reason": "NewReplicaSetAvailable"},
            {"type": "Available", "status": "True", "reason": "MinimumReplicasAvailable"},
        ],
    }
    env.kubectl(
        "patch",
        "deployment",
        name,
        "-n",
        namespace,
        "--subresource=status",
        "--type=merge",
        "-p",
        json.dumps({"status": status}),
    )


def plan_object(
    namespace: str, name: str, steps: list[dict[str, Any]], budget: int, kind: str
) -> dict[str, Any]:
    return {
        "apiVersion": f"{PLAN.group}/{PLAN.version}",
        "kind": PLAN.kind,
        "metadata": {"name": name, "namespace": namespace, "labels": {LABEL: kind}},
        "spec": {
            "objective": f"bench: {kind}",
            "origin": "operator",
            "author": "admin",  # who applies it (admission checks the name)
            "strategy": "authored",
            "mind": MIND_NAME,
            "budget": {"invocations": budget},
            "steps": steps,
        },
    }


def readonly_steps(namespace: str, count: int, shape: str) -> list[dict[str, Any]]:
    steps = []
    for i in range(1, count + 1):
        step: dict[str, Any] = {
            "key": f"S{i}",
            "title": f"read the status of {TARGET} ({i})",
            "kind": "capability",
            "capability": "service.status",
            "parameters": {"namespace": namespace, "name": TARGET},
        }
        if shape == "chain" and i > 1:
            step["dependsOn"] = [f"S{i - 1}"]
        steps.append(step)
    return steps


def restart_steps(namespace: str, target: str = TARGET) -> list[dict[str, Any]]:
    return [
        {
            "key": "P1",
            "title": f"restart {target}",
            "kind": "capability",
            "capability": "service.restart",
            "parameters": {"namespace": namespace, "name": target},
            "target": f"{namespace}/{target}",
            "requiresApproval": True,
        }
    ]


def list_plans(env: Env, namespace: str, selector: str = "") -> dict[str, dict[str, Any]]:
    found = as_dict(
        env.admin.list_namespaced_custom_object(
            PLAN.group,
            PLAN.version,
            namespace,
            PLAN.plural,
            label_selector=selector,
            _request_timeout=30,
        )
    )
    return {item["metadata"]["name"]: item for item in found.get("items", [])}


def plan_stream(
    env: Env, namespace: str, seen: Callable[[str, dict[str, Any], float], None], **kw: Any
) -> Stream:
    """A watch on the Plans of ``namespace`` (not yet started: enter it)."""
    return Stream(
        env.admin.list_namespaced_custom_object,
        PLAN.group,
        PLAN.version,
        namespace,
        PLAN.plural,
        seen=seen,
        **kw,
    )


def create_plan(env: Env, body: dict[str, Any]) -> None:
    env.admin.create_namespaced_custom_object(
        PLAN.group,
        PLAN.version,
        body["metadata"]["namespace"],
        PLAN.plural,
        body,
        _request_timeout=30,
    )


def describe(plans: dict[str, dict[str, Any]], names: list[str]) -> str:
    """Where the plans are, for an error message: phases counted, one unfinished status."""
    phases: dict[str, int] = {}
    example = None
    for name in names:
        status = (plans.get(name) or {}).get("status") or {}
        phase = status.get("phase", "(no status)")
        phases[phase] = phases.get(phase, 0) + 1
        if phase != "completed" and example is None:
            example = (name, status)
    text = "plans by phase: " + ", ".join(f"{p}: {n}" for p, n in sorted(phases.items()))
    if example is not None:
        text += f"\nstatus of {example[0]}:\n{json.dumps(example[1], indent=1)[:3000]}"
    return text


# -- phase 1: read-only plans ----------------------------------------------------------------


def bench_world(env: Env, params: Params) -> int:
    """The namespace, the Mind every plan serves and the Deployment they look at; returns the
    invocation budget of the read-only plans."""
    budget = max(20, params.steps)
    world(
        env,
        NAMESPACE,
        {
            "cycleIntervalSeconds": MIND_CYCLE_SECONDS,
            "budget": {"invocations": budget},
            "capabilityPolicy": [{"capability": "service.restart", "decision": "approve"}],
            "attention": {
                # At most 100 (the Mind's schema): the largest probe asks that many at once.
                "maxOpenRequests": min(
                    100, max(5, params.approval_concurrency, *params.probe_sizes)
                )
            },
        },
    )
    return budget


def readonly_round(env: Env, params: Params, round_no: int, budget: int) -> ReadOnlyResult:
    ns = NAMESPACE
    names = [f"ro-{round_no}-{i:03d}" for i in range(params.plans)]
    bodies = []
    for n in names:
        body = plan_object(
            ns, n, readonly_steps(ns, params.steps, params.shape), budget, "readonly"
        )
        body["metadata"]["labels"][ROUND_LABEL] = str(round_no)
        bodies.append(body)
    print(
        f"bench: read-only round {round_no}/{params.rounds}: {params.plans} plans x "
        f"{params.steps} service.status steps ({params.shape})",
        flush=True,
    )
    rss_idle = env.sampler.latest()
    with measured(env) as cost:
        rss_since = time.monotonic()
        t0 = time.monotonic()
        created: dict[str, float] = {}
        for body in bodies:
            create_plan(env, body)
            created[body["metadata"]["name"]] = time.monotonic()
        applied = time.monotonic() - t0
        done: dict[str, float] = {}
        max_executing = 0
        deadline = deadline_after(params.timeout)
        plans: dict[str, dict[str, Any]] = {}
        while len(done) < len(names):
            env.ensure_controller()
            plans = list_plans(env, ns, f"{ROUND_LABEL}={round_no}")
            seen = time.monotonic()
            executing = 0
            for name in names:
                status = (plans.get(name) or {}).get("status") or {}
                phase = status.get("phase")
                if phase == "completed":
                    done.setdefault(name, seen)
                elif phase in BAD_PHASES:
                    raise BenchError(
                        f"plan {ns}/{name} ended {phase}, not completed:\n"
                        f"{json.dumps(status, indent=1)[:3000]}"
                    )
                elif phase == "executing":
                    executing += 1
            max_executing = max(max_executing, executing)
            if len(done) == len(names):
                break
            if time.monotonic() > deadline:
                raise BenchError(
                    f"read-only round {round_no}: {len(done)} of {len(names)} plans completed "
                    "within "
                    f"{params.timeout:.0f} s\n{describe(plans, names)}\n"
                    f"{controller_log_tail(env.controller)}"
                )
            time.sleep(READONLY_POLL_SECONDS)
        seconds = max(done.values()) - t0
        rss_until = time.monotonic()
        result_cost = cost(seconds)
    completed = 0
    attempts = 0
    for name in names:
        for state in (plans[name].get("status") or {}).get("steps", []):
            attempts += int(state.get("attempts", 0))
            if state.get("status") == "completed":
                completed += 1
    return ReadOnlyResult(
        round=round_no,
        plans=params.plans,
        steps_per_plan=params.steps,
        completed_steps=completed,
        attempts=attempts,
        seconds=seconds,
        apply_seconds=applied,
        plan_seconds=[done[n] - created[n] for n in names],
        max_executing=max_executing,
        cost=result_cost,
        rss_idle=rss_idle,
        rss_peak=env.sampler.peak(rss_since, rss_until + 1),
        threads_peak=env.sampler.peak_threads(rss_since, rss_until + 1),
        plan_bytes=len(json.dumps(plans[names[0]])),
    )


# -- phase 2: approvals ----------------------------------------------------------------------


@dataclass
class Track:
    name: str
    created: float
    raised: float | None = None
    approval: str | None = None
    decided: float | None = None
    acted: float | None = None
    done: float | None = None


def controller_events(env: Env, namespace: str) -> list[Any]:
    """The Events of ``namespace`` the controller posted."""
    core = client.CoreV1Api(env.admin.api_client)
    items = core.list_namespaced_event(namespace, _request_timeout=30).items
    return [e for e in items if e.reporting_component == COMPONENT]


def decide(env: Env, namespace: str, approval: str) -> None:
    """What ``kubectl minds approve`` does: the approver sets the decision and names itself."""
    env.approver.patch_namespaced_custom_object(
        APPROVAL.group,
        APPROVAL.version,
        namespace,
        APPROVAL.plural,
        approval,
        {"spec": {"decision": "Approved", "decidedBy": "approver"}},
        _content_type="application/merge-patch+json",
        _request_timeout=30,
    )


def _restarted_at(deployment: dict[str, Any]) -> object:
    template = (deployment.get("spec") or {}).get("template") or {}
    return ((template.get("metadata") or {}).get("annotations") or {}).get(RESTARTED_AT)


def _done(plan: dict[str, Any]) -> bool:
    steps = (plan.get("status") or {}).get("steps") or [{}]
    return bool(steps[0].get("status") == "completed")


def approval_phase(env: Env, params: Params) -> ApprovalResult:
    ns = NAMESPACE
    names = [f"approve-{i:03d}" for i in range(params.approvals)]
    events_before = len(controller_events(env, ns))
    print(
        f"bench: approval phase: {len(names)} restarts, {params.approval_concurrency} in flight",
        flush=True,
    )
    per_plan = APPROVAL_DEADLINE_SECONDS
    todo = list(names)
    flight: dict[str, Track] = {}
    finished: list[Track] = []
    # Timed by watch: the step completed (the Plan), and the action itself (the Deployment's
    # restart annotation changing, which is what the approved restart does).
    done, acted = FirstSeen(_done), Changes(_restarted_at)
    plan_watch = plan_stream(env, ns, done, label_selector=f"{LABEL}=approval")
    apps = client.AppsV1Api(env.admin.api_client)
    target = Stream(
        apps.list_namespaced_deployment, ns, field_selector=f"metadata.name={TARGET}", seen=acted
    )
    with measured(env) as cost, plan_watch, target:
        rss_since = t0 = time.monotonic()
        phase_deadline = deadline_after(params.timeout)
        while todo or flight:
            env.ensure_controller()
            while todo and len(flight) < params.approval_concurrency:
                name = todo.pop(0)
                create_plan(env, plan_object(ns, name, restart_steps(ns), 20, "approval"))
                flight[name] = Track(name=name, created=time.monotonic())
            plans = list_plans(env, ns, f"{LABEL}=approval")
            seen = time.monotonic()
            for name, track in list(flight.items()):
                status = (plans.get(name) or {}).get("status") or {}
                steps = status.get("steps") or [{}]
                state = steps[0]
                if status.get("phase") in BAD_PHASES or state.get("status") in BAD_STEPS:
                    raise BenchError(
                        f"plan {ns}/{name} did not complete:\n{json.dumps(status, indent=1)[:3000]}"
                    )
                if track.decided is None:
                    if state.get("status") == "awaiting_approval" and state.get("approvalRef"):
                        ref = str(state["approvalRef"])
                        if track.raised is None:
                            track.raised, track.approval = seen, ref
                        approval = as_dict(
                            env.admin.get_namespaced_custom_object(
                                APPROVAL.group,
                                APPROVAL.version,
                                ns,
                                APPROVAL.plural,
                                ref,
                                _request_timeout=30,
                            )
                        )
                        # Decide once the controller has shown it to people (phase Pending).
                        if (approval.get("status") or {}).get("phase") == "Pending":
                            # Timed from sending, as the watch latency it is compared with.
                            track.decided = time.monotonic()
                            decide(env, ns, ref)
                elif state.get("status") == "completed" and done.at(name) is not None:
                    track.done = done.at(name)
                    track.acted = acted.first_after(track.decided)
                    finished.append(flight.pop(name))
                    continue
                now = time.monotonic()
                if now - track.created > per_plan or now > phase_deadline:
                    where = "before the decision" if track.decided is None else "after approval"
                    raise BenchError(
                        f"plan {ns}/{name}: step not completed {where} within "
                        f"{min(per_plan, params.timeout):.0f} s\n"
                        f"{json.dumps(status, indent=1)[:3000]}\n"
                        f"{controller_log_tail(env.controller)}"
                    )
            time.sleep(params.poll)
        seconds = time.monotonic() - t0
        rss_until = time.monotonic()
        result_cost = cost(seconds)
    finished.sort(key=lambda t: t.name)
    # Events are posted beside the work, a moment after the writes they tell of: wait (a few
    # seconds at most) for four per plan before counting what is there, however many it is.
    enough = events_before + 4 * len(finished)
    deadline = deadline_after(5.0)
    while len(controller_events(env, ns)) < enough and time.monotonic() < deadline:
        time.sleep(params.poll)
    posted = len(controller_events(env, ns)) - events_before
    return ApprovalResult(
        controller_events=posted,
        plans=len(finished),
        concurrency=params.approval_concurrency,
        latencies=[t.done - t.decided for t in finished if t.done and t.decided],
        acted=[t.acted - t.decided for t in finished if t.acted and t.decided],
        raised=[t.raised - t.created for t in finished if t.raised],
        cost=result_cost,
        rss_peak=env.sampler.peak(rss_since, rss_until + 1),
    )


# -- phase 3: saturation probe ----------------------------------------------------------------


def probe_phase(env: Env, params: Params, count: int) -> ProbeResult:
    """Many plans waiting on people at once: apply them together, approve every Approval as
    soon as it exists, and count what completes within the window. Never fails the run: a
    stall is the finding, and the controller is stopped right after anyway."""
    ns = NAMESPACE
    kind = f"probe-{count}"
    names = [f"probe{count}-{i:03d}" for i in range(count)]
    window = params.probe_window * max(1.0, count / 20)
    print(f"bench: saturation probe: {count} restarts awaiting approval at once", flush=True)
    # One workload a plan: the probe measures how many approved actions run at once, and one
    # writing action per workload at a time is the rule (docs/execution.md), so plans on one
    # workload would measure that rule instead. The world rolls them out.
    running(env, ns, names, max(params.timeout, 2.0 * count))
    for name in names:
        create_plan(env, plan_object(ns, name, restart_steps(ns, name), 20, kind))
    tracks = {n: Track(name=n, created=time.monotonic()) for n in names}
    raise_deadline = deadline_after(min(params.timeout, 60.0 * max(1.0, count / 20)))
    while time.monotonic() < raise_deadline:
        env.ensure_controller()
        plans = list_plans(env, ns, f"{LABEL}={kind}")
        for name, track in tracks.items():
            steps = ((plans.get(name) or {}).get("status") or {}).get("steps") or [{}]
            ref = steps[0].get("approvalRef")
            if track.decided is None and ref and steps[0].get("status") == "awaiting_approval":
                track.raised, track.approval = time.monotonic(), ref
                decide(env, ns, ref)
                track.decided = time.monotonic()
        if all(t.decided is not None for t in tracks.values()):
            break
        time.sleep(params.poll)
    window_end = deadline_after(window)
    while time.monotonic() < window_end:
        env.ensure_controller()
        plans = list_plans(env, ns, f"{LABEL}={kind}")
        seen = time.monotonic()
        for name, track in tracks.items():
            steps = ((plans.get(name) or {}).get("status") or {}).get("steps") or [{}]
            if track.done is None and steps[0].get("status") == "completed":
                track.done = seen
        if all(t.done is not None or t.decided is None for t in tracks.values()):
            break
        time.sleep(max(params.poll, 0.2))
    asked = {t.approval for t in tracks.values() if t.approval}

    def shown() -> list[str | None]:
        approvals = as_dict(
            env.admin.list_namespaced_custom_object(
                APPROVAL.group, APPROVAL.version, ns, APPROVAL.plural, _request_timeout=30
            )
        ).get("items", [])
        return [
            (a.get("status") or {}).get("phase")
            for a in approvals
            if a["metadata"]["name"] in asked
        ]

    # The executor shows an Approval Executed after the write that completes its step: give the
    # statuses what is left of the window to follow the steps, instead of reading them at the
    # instant the last step completed.
    phases = shown()
    while phases.count("Executed") < len(asked) and time.monotonic() < window_end:
        time.sleep(max(params.poll, 0.2))
        phases = shown()
    where: dict[str, int] = {}
    for item in list_plans(env, ns, f"{LABEL}={kind}").values():
        status = item.get("status") or {}
        state = ((status.get("steps") or [{}])[0]).get("status")
        key = f"{status.get('phase', 'no status')}/{state or '-'}"
        where[key] = where.get(key, 0) + 1
    return ProbeResult(
        plans=count,
        window=window,
        raised=sum(1 for t in tracks.values() if t.raised is not None),
        decided=sum(1 for t in tracks.values() if t.decided is not None),
        pending=sum(1 for p in phases if p),
        executed=sum(1 for p in phases if p == "Executed"),
        latencies=[t.done - t.decided for t in tracks.values() if t.done and t.decided],
        states=dict(sorted(where.items())),
    )


# -- phase 4: the baseline -------------------------------------------------------------------


def baseline(
    env: Env, names: list[str], writes: int, threads: int, round_no: int
) -> BaselineResult:
    """GET + PUT /status with the resourceVersion just read, as fast as possible, as the
    controller's ServiceAccount with the controller's client configuration.

    Each write changes ``status.reason`` (an unchanged object would be a no-op the API server
    does not write to etcd); the objects are the read-only phase's completed Plans, so the
    bodies are exactly as large as the ones the controller wrote.
    """
    ns = NAMESPACE
    threads = max(1, threads)
    conflicts = [0] * threads
    errors: list[BaseException] = []
    share = [writes // threads + (1 if i < writes % threads else 0) for i in range(threads)]
    # Configured as the controller configures its client, under the controller's identity:
    # status subresources are the controller's alone (admission refuses anyone else).
    apis = [
        client.CustomObjectsApi(api_client(str(env.stack.controller_kubeconfig)))
        for _ in range(threads)
    ]
    go = threading.Event()

    def work(index: int) -> None:
        api = apis[index]
        mine = names[index::threads] or names
        try:
            go.wait()
            n = 0
            while n < share[index]:
                name = mine[n % len(mine)]
                obj = as_dict(
                    api.get_namespaced_custom_object(
                        PLAN.group, PLAN.version, ns, PLAN.plural, name, _request_timeout=30
                    )
                )
                status = dict(obj.get("status") or {})
                status["reason"] = f"bench baseline write {index}.{n}"
                obj["status"] = status
                try:
                    api.replace_namespaced_custom_object_status(
                        PLAN.group,
                        PLAN.version,
                        ns,
                        PLAN.plural,
                        name,
                        obj,
                        _request_timeout=30,
                    )
                except ApiException as exc:
                    if exc.status != 409:
                        raise
                    conflicts[index] += 1
                    continue
                n += 1
        except BaseException as exc:
            errors.append(exc)

    workers = [threading.Thread(target=work, args=(i,), daemon=True) for i in range(threads)]
    for w in workers:
        w.start()
    before = scrape(env.kubeconfig)
    t0 = time.monotonic()
    go.set()
    limit = deadline_after(300)
    for w in workers:
        w.join(timeout=max(0.0, limit - time.monotonic()))
    seconds = time.monotonic() - t0
    if any(w.is_alive() for w in workers):
        raise BenchError(f"baseline with {threads} thread(s) did not finish within 300 s")
    if errors:
        raise BenchError(f"baseline with {threads} thread(s) failed: {errors[0]!r}")
    return BaselineResult(
        round=round_no,
        threads=threads,
        writes=writes,
        seconds=seconds,
        conflicts=sum(conflicts),
        api=scrape(env.kubeconfig) - before,
    )


# -- the run ---------------------------------------------------------------------------------


def controller_plan_writes(cost: Cost) -> int:
    return cost.api.total(resource="plans", verbs=("PUT", "PATCH"))


def run(params: Params, state_dir: Path) -> Results:
    t0 = time.monotonic()
    env = start(state_dir)
    try:
        setup = time.monotonic() - t0
        info = versions(env)
        budget = bench_world(env, params)
        readonly = []
        for round_no in range(1, params.rounds + 1):
            result = readonly_round(env, params, round_no, budget)
            readonly.append(result)
            print(
                f"bench: round {round_no}: {result.completed_steps} steps in "
                f"{result.seconds:.1f} s ({result.steps_per_second:.2f} steps/s)",
                flush=True,
            )
        approvals = approval_phase(env, params) if params.approvals > 0 else None
        if approvals is not None:
            print(
                "bench: approvals, to the action: p50 "
                f"{percentile(approvals.acted, 50):.3f} s, p95 "
                f"{percentile(approvals.acted, 95):.3f} s; to the step completed: p50 "
                f"{percentile(approvals.latencies, 50):.3f} s, p95 "
                f"{percentile(approvals.latencies, 95):.3f} s",
                flush=True,
            )
        watch_latencies = measure_watch_latency(
            env.kubeconfig, NAMESPACE, max(20, params.approvals)
        )
        print(
            f"bench: watch latency: p50 {percentile(watch_latencies, 50) * 1000:.1f} ms, p95 "
            f"{percentile(watch_latencies, 95) * 1000:.1f} ms",
            flush=True,
        )
        floor = (
            measure_floor(
                kubeconfig=env.kubeconfig,
                controller_kubeconfig=env.stack.controller_kubeconfig,
                database_url=env.stack.database_url,
                namespace=NAMESPACE,
                mind=MIND_NAME,
                plan=min(list_plans(env, NAMESPACE, f"{LABEL}=approval")),
                deployment=TARGET,
                samples=max(20, params.approvals),
            )
            if approvals is not None
            else Floor()
        )
        if floor.chains:
            print(
                f"bench: the bare approval chain: p50 {percentile(floor.chains, 50) * 1000:.1f} "
                f"ms, p95 {percentile(floor.chains, 95) * 1000:.1f} ms; stages (p50, ms): "
                + ", ".join(
                    f"{stage} {percentile(times, 50) * 1000:.1f}"
                    for stage, times in floor.stages.items()
                ),
                flush=True,
            )
        detection, burst = (
            detection_phase(env, params.detections, params.burst, max(params.timeout, 300.0))
            if params.detections or params.burst
            else (None, None)
        )
        probes = []
        for count in params.probe_sizes:
            probe = probe_phase(env, params, count)
            probes.append(probe)
            print(
                f"bench: probe: {len(probe.latencies)} of {probe.plans} approved plans completed "
                f"within {probe.window:.0f} s",
                flush=True,
            )
        env.sampler.stop()

        def throughput(level: int) -> list[float]:
            """The read-only rounds again, with ``level`` plans open in the namespace."""
            return [
                readonly_round(env, params, 100 * level + r, budget).steps_per_second
                for r in range(1, params.rounds + 1)
            ]

        scale = (
            scale_phase(
                env,
                NAMESPACE,
                MIND_NAME,
                params.scale_levels,
                params.scale_window,
                max(params.timeout, 900.0),
                watched=params.watched,
                watched_cycle=MIND_CYCLE_SECONDS,
                throughput=throughput,
            )
            if params.scale_levels
            else None
        )
        # The baseline measures the API server alone: nothing else may write to those Plans.
        stop_controller(env.controller)
        per_round = sorted(controller_plan_writes(r.cost) for r in readonly)
        writes = params.baseline_writes or max(200, per_round[len(per_round) // 2])
        names = sorted(list_plans(env, NAMESPACE, f"{LABEL}=readonly"))
        variants = [1] + ([params.baseline_threads] if params.baseline_threads > 1 else [])
        baselines = []
        for round_no in range(1, params.rounds + 1):
            for threads in variants:
                measured_baseline = baseline(env, names, writes, threads, round_no)
                baselines.append(measured_baseline)
                print(
                    f"bench: baseline round {round_no}, {threads} thread(s): {writes} "
                    f"conditional status writes, "
                    f"{measured_baseline.writes_per_second:.1f} writes/s",
                    flush=True,
                )
        return Results(
            params=params,
            machine=machine(),
            revision=git_revision(repo_root()),
            versions=info,
            setup_seconds=setup,
            readonly=readonly,
            approvals=approvals,
            probes=probes,
            baselines=baselines,
            scale=scale,
            watch_latencies=watch_latencies,
            floor=floor,
            detection=detection,
            burst=burst,
        )
    finally:
        env.sampler.stop()


def teardown(state_dir: Path) -> list[str]:
    problems = []
    try:
        stopped = down(state_dir)
        print(f"bench: stopped {', '.join(stopped) or 'nothing'}", flush=True)
    except Exception as exc:  # keep going: the rest must still be stopped
        problems.append(f"teardown: {exc}")
    return problems


def _terminate(signum: int, _frame: Any) -> None:
    raise KeyboardInterrupt(f"signal {signum}")


def main(argv: list[str] | None = None) -> int:
    from bench.report import render_doc, render_table

    try:
        params = parse_args(argv)
    except BenchError as exc:
        print(f"bench: {exc}", file=sys.stderr)
        return 2
    signal.signal(signal.SIGTERM, _terminate)
    # Directly under the temp root, readable by others: as root, Postgres runs as an
    # unprivileged user who must be able to reach its data directory below this one.
    state_dir = Path(tempfile.mkdtemp(prefix="minds-bench-"))
    state_dir.chmod(0o755)
    ok = False
    results: Results | None = None
    try:
        results = run(params, state_dir)
        ok = True
    except BenchError as exc:
        print(f"bench: FAILED: {exc}", file=sys.stderr)
    except KeyboardInterrupt:
        print("bench: interrupted", file=sys.stderr)
    except Exception:
        print("bench: FAILED with an unexpected error:", file=sys.stderr)
        traceback.print_exc()
    finally:
        problems = teardown(state_dir)
        for p in problems:
            print(f"bench: {p}", file=sys.stderr)
        if ok and not params.keep_state and not problems:
            shutil.rmtree(state_dir, ignore_errors=True)
        else:
            print(f"bench: state and logs kept in {state_dir}", file=sys.stderr)
    if results is None:
        return 1
    command = command_line(params)
    print(render_table(results))
    if params.doc is not None:
        argv_text = shlex.join([".venv/bin/python", "-m", "bench.executor_bench", *sys.argv[1:]])
        plot_name = None
        if results.scale is not None and plot(results.scale, params.doc.with_name(SCALE_PLOT)):
            plot_name = SCALE_PLOT
        params.doc.write_text(render_doc(results, command, argv_text, plot_name))
        print(f"bench: wrote {params.doc}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

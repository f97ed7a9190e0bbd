"""The benchmark's table and ``docs/benchmarks.md``: same structure every run, numbers change.

The reading at the end is written from the numbers by fixed rules, so it stays true when the
doc is regenerated on another machine.
"""

from __future__ import annotations

import math
import statistics
from datetime import UTC, datetime

from bench.executor_bench import (
    CONTROLLER_WORKERS,
    MIND_CYCLE_SECONDS,
    NAMESPACE,
    OPTIONS,
    PROCESSES,
    READONLY_POLL_SECONDS,
    Results,
)
from bench.floor import Floor
from bench.measure import READ_VERBS, WRITE_VERBS, ApiCounters, percentile
from bench.scale import render as render_scale
from bench.watched import BURST_WINDOW, DEFAULT_CYCLE_SECONDS, DETECTION_DEADLINE

Row = tuple[str, str]
NAN = float("nan")
#: The open plans the idle and flat-under-load targets are stated at.
IDLE_LEVEL = 1000


def _n(x: float, digits: int = 2) -> str:
    return "n/a" if math.isnan(x) else f"{x:,.{digits}f}"


def _mib(b: int) -> str:
    return f"{b / 2**20:,.0f} MiB"


def _s(x: float) -> str:
    return "n/a" if math.isnan(x) else f"{x:.2f} s"


def _stage(stage: str, times: list[float], floor: Floor) -> str:
    """A stage that only some chains went through says in how many."""
    if len(times) == len(floor.chains):
        return stage
    return f"{stage} ({len(times)} of {len(floor.chains)} chains)"


def _ms(values: list[float]) -> str:
    """p50 / p95 in milliseconds."""
    return f"{1000 * percentile(values, 50):.1f} / {1000 * percentile(values, 95):.1f} ms"


def _spread(values: list[float], digits: int = 2) -> str:
    """median (min-max) of the rounds."""
    if not values:
        return "n/a"
    if len(values) == 1:
        return _n(values[0], digits)
    return (
        f"{_n(statistics.median(values), digits)} "
        f"({_n(min(values), digits)}-{_n(max(values), digits)})"
    )


def _median(values: list[float]) -> float:
    return statistics.median(values) if values else NAN


def _ratio(a: float, b: float) -> float:
    return a / b if b and not math.isnan(b) else NAN


# -- derived numbers -------------------------------------------------------------------------


class Numbers:
    """Every figure the table and the reading use, computed once. Rates are medians over the
    rounds; counts per step or per plan are totals over all rounds divided by their steps or
    plans; CPU is summed over the rounds."""

    def __init__(self, r: Results) -> None:
        rounds = r.readonly
        self.rounds = len(rounds)
        self.k = r.params.steps
        api = ApiCounters()
        for ro in rounds:
            api = api + ro.cost.api
        self.api = api
        self.steps = max(1, sum(ro.completed_steps for ro in rounds))
        self.expected_steps = sum(ro.plans * ro.steps_per_plan for ro in rounds)
        self.attempts = sum(ro.attempts for ro in rounds)
        self.plans = max(1, sum(ro.plans for ro in rounds))
        self.plans_per_round = r.params.plans
        self.rates = [ro.steps_per_second for ro in rounds]
        self.steps_per_s = _median(self.rates)
        self.round_seconds = [ro.seconds for ro in rounds]
        self.apply_seconds = [ro.apply_seconds for ro in rounds]
        self.plan_seconds = [x for ro in rounds for x in ro.plan_seconds]
        self.max_executing = max((ro.max_executing for ro in rounds), default=0)
        self.rss_idle = rounds[0].rss_idle if rounds else 0
        self.rss_peak = max((ro.rss_peak for ro in rounds), default=0)
        self.threads_peak = max((ro.threads_peak for ro in rounds), default=0)
        self.plan_bytes = rounds[0].plan_bytes if rounds else 0

        self.plan_status_put = api.total(resource="plans", subresource="status", verbs=("PUT",))
        self.plan_status_patch = api.total(resource="plans", subresource="status", verbs=("PATCH",))
        self.plan_meta_writes = api.total(resource="plans", subresource="", verbs=("PUT", "PATCH"))
        self.plan_writes = self.plan_status_put + self.plan_status_patch + self.plan_meta_writes
        self.plan_conflicts = api.total(resource="plans", verbs=("PUT", "PATCH"), code="409")
        # The bench's own writes in this phase: it created the Plans (POST), nothing else.
        self.all_writes = api.total(verbs=WRITE_VERBS) - self.plans
        self.events = api.total(resource="events", verbs=("POST",))
        # Reads by the controller: the bench itself only LISTs Plans (its polls) and GETs the
        # non-resource /metrics, so both are left out.
        self.bench_lists = api.total(resource="plans", verbs=("LIST",))
        self.reads = api.total(verbs=READ_VERBS, exclude_resources=("",)) - self.bench_lists
        self.plan_gets = api.total(resource="plans", verbs=("GET",))
        self.mind_gets = api.total(resource="minds", verbs=("GET",))
        self.ledger_events = sum(ro.cost.ledger.get("events", 0) for ro in rounds)
        self.executions = sum(ro.cost.ledger.get("executions", 0) for ro in rounds)
        self.write_rates = [
            _ratio(
                ro.cost.api.total(resource="plans", verbs=("PUT", "PATCH")),
                ro.seconds,
            )
            for ro in rounds
        ]
        self.controller_writes_per_s = _median(self.write_rates)
        # Every API request the controller made, reads and writes, per second of each round.
        self.request_rates = [
            _ratio(
                ro.cost.api.total(verbs=(*WRITE_VERBS, *READ_VERBS), exclude_resources=("",))
                - ro.plans
                - ro.cost.api.total(resource="plans", verbs=("LIST",)),
                ro.seconds,
            )
            for ro in rounds
        ]
        self.controller_requests_per_s = _median(self.request_rates)
        self.bench_lists_per_s = _median(
            [
                _ratio(ro.cost.api.total(resource="plans", verbs=("LIST",)), ro.seconds)
                for ro in rounds
            ]
        )

        self.cpu: dict[str, float] = {name: 0.0 for name in PROCESSES}
        self.cpu_wall = 0.0
        for ro in rounds:
            self.cpu_wall += ro.cost.cpu_seconds
            for name, seconds in ro.cost.cpu.items():
                self.cpu[name] = self.cpu.get(name, 0.0) + seconds
        self.cpu_total = sum(self.cpu.values())
        busy = sum(ro.cost.machine[0] for ro in rounds)
        stolen = sum(ro.cost.machine[1] for ro in rounds)
        total = sum(ro.cost.machine[2] for ro in rounds)
        # The whole machine, every process on it: the bench shares it with other work.
        self.all_busy = _ratio(busy, total)
        self.all_stolen = _ratio(stolen, total)
        self.others_busy = max(0.0, _ratio(busy - self.cpu_total, total))
        self.cores = max(1, int(r.machine.get("Cores (logical)", "1") or 1))
        self.machine_busy = _ratio(self.cpu_total, self.cpu_wall * self.cores)
        self.controller_core = _ratio(self.cpu.get("controller", 0.0), self.cpu_wall)

        # Status writes per plan, from the executor's code: admission 1, the first step's claim
        # (readying it in the same write) 1, then per step one write that records its outcome
        # and, in a chain, claims the next step.
        self.expected_status_writes = 2 + self.k

        def rates(threads: int) -> list[float]:
            return [b.writes_per_second for b in r.baselines if b.threads == threads]

        self.base1_rates = rates(1)
        self.base1 = _median(self.base1_rates)
        self.many_threads = r.params.baseline_threads if r.params.baseline_threads > 1 else 0
        self.base_many_rates = rates(self.many_threads) if self.many_threads else []
        self.base_many = _median(self.base_many_rates)
        # The baseline makes two requests (GET, PUT) per write.
        self.base1_requests = 2 * self.base1
        self.base_many_requests = 2 * self.base_many
        self.requests_per_step = self.per_step(self.all_writes + self.reads)

        ap = r.approvals
        # Execution is the approved action itself (the restart seen on the Deployment); the
        # step's completion, its bookkeeping after the action, is shown beside it.
        self.latencies = ap.acted if ap else []
        self.p50 = percentile(self.latencies, 50)
        self.p95 = percentile(self.latencies, 95)
        self.lat_max = max(self.latencies) if self.latencies else NAN
        self.completed = ap.latencies if ap else []
        self.done_p50 = percentile(self.completed, 50)
        self.done_p95 = percentile(self.completed, 95)
        # The floor under any reaction, measured in the same run (see bench/watch_latency.py).
        self.watch_p50 = percentile(r.watch_latencies, 50)
        self.watch_p95 = percentile(r.watch_latencies, 95)
        self.approval_over_watch = _ratio(self.p95, self.watch_p95)
        self.done_over_watch = _ratio(self.done_p95, self.watch_p95)
        # The bare chain of round trips the safety rules put before an approved action
        # (bench/floor.py): what the controller adds is the approval latency over it.
        self.floor_p50 = percentile(r.floor.chains, 50)
        self.floor_p95 = percentile(r.floor.chains, 95)
        self.floor_over_watch = _ratio(self.floor_p95, self.watch_p95)
        self.approval_over_floor = _ratio(self.p95, self.floor_p95)
        self.writes_per_step = self.per_step(self.all_writes)
        points = r.scale.points if r.scale else []
        # The idle targets are stated at 1,000 open plans (the largest level up to it).
        upto = [pt for pt in points if pt.open_plans <= IDLE_LEVEL]
        self.scale_top = upto[-1] if upto else (points[-1] if points else None)
        self.scale_low = points[0] if points else None
        self.flat = _ratio(
            _median(self.scale_top.steps_per_second) if self.scale_top else NAN,
            _median(self.scale_low.steps_per_second) if self.scale_low else NAN,
        )
        finished = [c for c in (r.scale.restarts if r.scale else []) if c.state == "finished"]
        self.finished_restart = finished[0] if finished else None
        self.raised_p50 = percentile(ap.raised, 50) if ap else NAN
        if ap:
            aapi = ap.cost.api
            m = max(1, ap.plans)
            self.ap_plan_writes = aapi.total(resource="plans", verbs=("PUT", "PATCH")) / m
            # The bench's decision is one PATCH per Approval; the rest is the controller's.
            self.ap_approval_writes = (
                aapi.total(resource="approvals", verbs=("PUT", "PATCH")) - ap.plans
            ) / m
            self.ap_events = ap.controller_events / m
            self.ap_all_events = aapi.total(resource="events", verbs=("POST",)) / m
            self.ap_approval_status_writes = (
                aapi.total(resource="approvals", subresource="status", verbs=("PUT", "PATCH")) / m
            )
            self.ap_approval_patches = (
                aapi.total(resource="approvals", subresource="", verbs=("PATCH",)) - ap.plans
            ) / m
            self.ap_plan_patches = (
                aapi.total(resource="plans", subresource="", verbs=("PATCH",)) / m
            )
        else:
            self.ap_plan_writes = self.ap_approval_writes = self.ap_events = NAN
            self.ap_approval_status_writes = NAN
            self.ap_all_events = NAN
            self.ap_approval_patches = self.ap_plan_patches = NAN

    def per_step(self, x: float) -> float:
        return x / self.steps

    def per_plan(self, x: float) -> float:
        return x / self.plans


# -- the table -------------------------------------------------------------------------------


def _met(ok: bool | None) -> str:
    return "n/a" if ok is None else ("met" if ok else "**not met**")


def _check(value: float, limit: float, at_most: bool = True) -> bool | None:
    if math.isnan(value):
        return None
    return value <= limit if at_most else value >= limit


def targets(r: Results, n: Numbers) -> list[Row]:
    """The executor's targets (ratios within this run, so they hold on any machine)."""
    steps_ratio = _ratio(n.steps_per_s, n.base1)
    at_once = _ratio(n.max_executing, n.plans_per_round)
    out: list[Row] = [
        (
            "executed steps/s >= 0.4 x baseline conditional writes/s (1 thread)",
            f"{_n(steps_ratio, 3)}: {_met(_check(steps_ratio, 0.4, at_most=False))}",
        ),
        (
            "API requests per step <= 4",
            f"{_n(n.requests_per_step)}: {_met(_check(n.requests_per_step, 4))}",
        ),
        (
            "API writes per step <= 2.5 (Events included)",
            f"{_n(n.writes_per_step)}: {_met(_check(n.writes_per_step, 2.5))}",
        ),
        (
            "all plans of a round executing at once",
            f"{n.max_executing} of {n.plans_per_round}: {_met(_check(at_once, 1.0, False))}",
        ),
        (
            "approval -> execution p95 <= 5 x PATCH -> watch event p95",
            f"{_n(n.approval_over_watch, 1)} x: {_met(_check(n.approval_over_watch, 5))}",
        ),
        (
            "approval -> execution p95 <= 1.5 x the bare chain's p95",
            f"{_n(n.approval_over_floor, 2)} x: {_met(_check(n.approval_over_floor, 1.5))}",
        ),
        (
            "the bare chain's p95 <= 8 x PATCH -> watch event p95",
            f"{_n(n.floor_over_watch, 1)} x: {_met(_check(n.floor_over_watch, 8))}",
        ),
        (
            "Approval status writes per approved plan <= 2",
            f"{_n(n.ap_approval_status_writes, 1)}: {_met(_check(n.ap_approval_status_writes, 2))}",
        ),
        (
            "Events per approved plan <= 4 (the controller's)",
            f"{_n(n.ap_events, 1)}: {_met(_check(n.ap_events, 4))}",
        ),
    ]
    for pr in r.probes:
        out.append(
            (
                f"saturation probe: {pr.plans} approved at once complete",
                f"{len(pr.latencies)} of {pr.plans}: {_met(len(pr.latencies) == pr.plans)}",
            )
        )
    d = r.detection
    if d is not None:
        p95 = percentile(d.latencies, 95) if not d.missed else NAN
        value = (
            f"p50 {_s(percentile(d.latencies, 50))}, p95 {_s(p95)} ({len(d.latencies)} of "
            f"{d.trials} trials)"
        )
        out.append(
            (
                "detection: fault label on a watched Deployment -> its Mind's Plan, p95 <= 3 s "
                f"at the default {DEFAULT_CYCLE_SECONDS} s cycle",
                f"{value}: {_met(False if d.missed else _check(p95, 3.0))}",
            )
        )
    b = r.burst
    if b is not None:
        out.append(
            (
                f"burst: {b.changes} changes to a watched workload within 2 s cost <= 2 cycles",
                f"{b.cycles} cycles ({b.changes} changes in {b.span:.2f} s): {_met(b.cycles <= 2)}",
            )
        )
    top = n.scale_top
    if top is not None:
        with_watched = f" and {top.watched} healthy watched workloads" if top.watched else ""
        out += [
            (
                f"{top.open_plans} open waiting plans{with_watched}: <= 1 API request/s while idle",
                f"{top.requests_per_second:.2f}: {_met(top.requests_per_second <= 1)}",
            ),
            (
                f"{top.open_plans} open waiting plans{with_watched}: <= 2% of one core while idle",
                f"{100 * top.cpu_core_fraction:.2f}%: {_met(top.cpu_core_fraction <= 0.02)}",
            ),
            (
                f"{top.open_plans} open waiting plans: controller RSS <= 300 MiB",
                f"{_mib(top.rss_bytes)}: {_met(top.rss_bytes <= 300 * 2**20)}",
            ),
        ]
        low = n.scale_low
        if low is not None and low is not top and top.steps_per_second:
            out.append(
                (
                    f"read-only steps/s with {top.open_plans} plans open >= 0.8 x with "
                    f"{low.open_plans} open",
                    f"{_n(n.flat, 2)} x ({_n(_median(top.steps_per_second), 1)} / "
                    f"{_n(_median(low.steps_per_second), 1)}): {_met(_check(n.flat, 0.8, False))}",
                )
            )
        if top.rss_running:
            out.append(
                (
                    f"controller RSS <= 400 MiB while the read-only rounds run with "
                    f"{top.open_plans} plans open",
                    f"{_mib(top.rss_running)}: {_met(top.rss_running <= 400 * 2**20)}",
                )
            )
    done = n.finished_restart
    if done is not None:
        # "No request per finished plan": what a restart costs must not grow with them.
        per = _ratio(done.requests, done.plans)
        out.append(
            (
                f"restart with {done.plans} finished plans: no request per finished plan",
                f"{done.requests} requests ({_n(per, 3)} per plan): {_met(_check(per, 0.05))}",
            )
        )
    return out


def rows(r: Results) -> list[tuple[str, list[Row]]]:
    n = Numbers(r)
    p = r.params
    sections: list[tuple[str, list[Row]]] = [("Targets", targets(r, n))]
    rounds = f"{n.rounds} round{'s' if n.rounds > 1 else ''}"
    sections.append(
        (
            f"Read-only plans: {rounds} of {p.plans} plans x {p.steps} service.status steps "
            f"({p.shape})",
            [
                (
                    "completed steps (attempts)",
                    f"{n.steps} of {n.expected_steps} ({n.attempts})",
                ),
                ("**controller steps/s**, median (min-max)", _spread(n.rates)),
                (
                    "first plan applied -> last completed (s), median (min-max)",
                    _spread(n.round_seconds),
                ),
                ("&nbsp;&nbsp;of which applying the plans, median", _s(_median(n.apply_seconds))),
                (
                    "plan duration p50 / p95 (applied -> completed)",
                    f"{_s(percentile(n.plan_seconds, 50))} / {_s(percentile(n.plan_seconds, 95))}",
                ),
                ("most plans seen executing at once", f"{n.max_executing} of {p.plans}"),
                (
                    "**Plan writes per step** (PUT/PATCH, status and not)",
                    _n(n.per_step(n.plan_writes)),
                ),
                (
                    "&nbsp;&nbsp;status PUTs per plan (the executor's code says)",
                    f"{_n(n.per_plan(n.plan_status_put), 1)} ({n.expected_status_writes})",
                ),
                ("&nbsp;&nbsp;status PATCHes per plan", _n(n.per_plan(n.plan_status_patch), 1)),
                (
                    "&nbsp;&nbsp;metadata PATCHes per plan (kopf: finalizer, annotations)",
                    _n(n.per_plan(n.plan_meta_writes), 1),
                ),
                ("&nbsp;&nbsp;answered 409 (lost a race, recomputed)", str(n.plan_conflicts)),
                ("all API writes per step (Events included)", _n(n.per_step(n.all_writes))),
                ("&nbsp;&nbsp;Events posted per step", _n(n.per_step(n.events))),
                ("API reads per step (GET/LIST by the controller)", _n(n.per_step(n.reads))),
                (
                    "&nbsp;&nbsp;GET Plan / GET Mind per step",
                    f"{_n(n.per_step(n.plan_gets))} / {_n(n.per_step(n.mind_gets))}",
                ),
                (
                    "ledger events / executions per step",
                    f"{_n(n.per_step(n.ledger_events))} / {_n(n.per_step(n.executions))}",
                ),
                ("**all API requests per step** (reads and writes)", _n(n.requests_per_step)),
                ("controller Plan writes/s, median (min-max)", _spread(n.write_rates)),
                ("controller API requests/s, median (min-max)", _spread(n.request_rates, 0)),
                ("the bench's own polls (LIST Plans/s)", _n(n.bench_lists_per_s, 1)),
                (
                    "controller CPU per step",
                    f"{1000 * n.per_step(n.cpu.get('controller', 0.0)):.1f} ms",
                ),
                ("size of a completed Plan (JSON)", f"{n.plan_bytes / 1024:.1f} KiB"),
                ("controller RSS idle -> peak", f"{_mib(n.rss_idle)} -> {_mib(n.rss_peak)}"),
                ("controller threads, peak", str(n.threads_peak)),
            ],
        )
    )
    cpu_rows: list[Row] = []
    for name in PROCESSES:
        seconds = n.cpu.get(name, 0.0)
        share = _ratio(seconds, n.cpu_wall * n.cores)
        cpu_rows.append((name, f"{seconds:.1f} s ({100 * share:.0f}% of the machine)"))
    cpu_rows.append(
        (
            "all of them",
            f"{n.cpu_total:.1f} s ({100 * n.machine_busy:.0f}% of {n.cores} cores over "
            f"{n.cpu_wall:.1f} s)",
        )
    )
    cpu_rows.append(
        (
            "the whole machine (every process)",
            f"{100 * n.all_busy:.0f}% busy ({100 * n.others_busy:.0f} points other work); "
            f"{100 * n.all_stolen:.0f}% stolen by the hypervisor",
        )
    )
    sections.append(("CPU time during the read-only rounds", cpu_rows))
    if r.approvals is not None:
        ap = r.approvals
        sections.append(
            (
                f"Approvals: {ap.plans} restarts, {ap.concurrency} in flight",
                [
                    (
                        "**approval -> execution p50 / p95** (the restart on the Deployment)",
                        f"{_s(n.p50)} / {_s(n.p95)}",
                    ),
                    ("&nbsp;&nbsp;max", _s(n.lat_max)),
                    (
                        "approval -> step completed p50 / p95 (the Plan)",
                        f"{_s(n.done_p50)} / {_s(n.done_p95)}",
                    ),
                    (
                        "PATCH sent -> watch event arrived, p50 / p95 (same run)",
                        f"{_s(n.watch_p50)} / {_s(n.watch_p95)}",
                    ),
                    (
                        "**approval p95 / watch event p95** (execution / step completed)",
                        f"{_n(n.approval_over_watch, 1)} / {_n(n.done_over_watch, 1)}",
                    ),
                    (
                        "the bare chain the rules require, p50 / p95 (same run, bench/floor.py)",
                        f"{_s(n.floor_p50)} / {_s(n.floor_p95)}",
                    ),
                    *(
                        (f"&nbsp;&nbsp;{_stage(stage, times, r.floor)}, p50 / p95", _ms(times))
                        for stage, times in r.floor.stages.items()
                    ),
                    (
                        "bare chain p95 / watch event p95",
                        _n(n.floor_over_watch, 1),
                    ),
                    (
                        "**approval p95 / bare chain p95** (what the controller adds)",
                        _n(n.approval_over_floor, 2),
                    ),
                    ("plan applied -> approval raised, p50", _s(n.raised_p50)),
                    ("Plan writes per approved plan", _n(n.ap_plan_writes, 1)),
                    ("Approval writes per approved plan (controller)", _n(n.ap_approval_writes, 1)),
                    ("Events per approved plan (controller)", _n(n.ap_events, 1)),
                    (
                        "Events per approved plan, every client (the restart's rollout too)",
                        _n(n.ap_all_events, 1),
                    ),
                    ("controller RSS peak", _mib(ap.rss_peak)),
                ],
            )
        )
    if r.detection is not None:
        d = r.detection
        woken = ", ".join(f"{k} {v:.0f}" for k, v in sorted(d.wakeups.items()) if v) or "none"
        sections.append(
            (
                f"Detection: {d.trials} watched Deployments broken ({d.fault}), one Mind each at "
                f"the default {DEFAULT_CYCLE_SECONDS} s cycle",
                [
                    (
                        "**fault label sent -> the Mind's Plan seen by watch, p50 / p95**",
                        f"{_s(percentile(d.latencies, 50))} / {_s(percentile(d.latencies, 95))}",
                    ),
                    ("&nbsp;&nbsp;max", _s(max(d.latencies) if d.latencies else NAN)),
                    (
                        "fault label sent -> the Deployment seen unavailable, p50 / p95",
                        f"{_s(percentile(d.unavailable, 50))} / "
                        f"{_s(percentile(d.unavailable, 95))}",
                    ),
                    (
                        f"trials with no Plan within {DETECTION_DEADLINE:.0f} s",
                        f"{d.missed} of {d.trials}",
                    ),
                    ("early wake-ups of their cycles, by what changed first", woken),
                ],
            )
        )
    if r.burst is not None:
        b = r.burst
        woken = ", ".join(f"{k} {v:.0f}" for k, v in sorted(b.wakeups.items()) if v) or "none"
        sections.append(
            (
                f"Burst: {b.changes} changes to one watched workload within 2 s",
                [
                    (
                        "changes sent (status writes to a StatefulSet)",
                        f"{b.changes} in {b.span:.2f} s",
                    ),
                    (
                        f"**its Mind's cycles from the burst's start to {b.window:.0f} s after** "
                        "(ledger `cycle_completed` rows)",
                        str(b.cycles),
                    ),
                    ("early wake-ups of its cycle, by what changed first", woken),
                ],
            )
        )
    for pr in r.probes:
        sections.append(
            (
                f"Saturation probe: {pr.plans} restarts of {pr.plans} workloads awaiting approval "
                "at once, all approved",
                [
                    ("steps that raised an Approval", f"{pr.raised} of {pr.plans}"),
                    ("Approvals approved by the bench", f"{pr.decided} of {pr.plans}"),
                    (
                        "Approvals the controller picked up (any phase)",
                        f"{pr.pending} of {pr.plans}",
                    ),
                    (
                        "Approvals the controller carried out (Executed)",
                        f"{pr.executed} of {pr.plans}",
                    ),
                    (
                        f"**steps completed within {pr.window:.0f} s of the decisions**",
                        f"{len(pr.latencies)} of {pr.plans}",
                    ),
                    ("approval -> execution p50 of those", _s(percentile(pr.latencies, 50))),
                    (
                        "plans at the end (phase/step status: count)",
                        ", ".join(f"{k}: {v}" for k, v in pr.states.items()) or "none",
                    ),
                ],
            )
        )
    base_rows: list[Row] = []
    for threads, rates in ((1, n.base1_rates), (n.many_threads, n.base_many_rates)):
        if not threads:
            continue
        runs = [b for b in r.baselines if b.threads == threads]
        conflicts = sum(b.conflicts for b in runs)
        base_rows.append(
            (
                f"{'**' if threads == 1 else ''}baseline writes/s, {threads} "
                f"thread{'s' if threads > 1 else ''}{'**' if threads == 1 else ''}, median "
                "(min-max)",
                f"{_spread(rates)}; {runs[0].writes if runs else 0} writes per round, "
                f"{conflicts} conflicts",
            )
        )
    base_rows += [
        (
            "**controller steps/s / baseline writes/s (1 thread)**",
            _n(_ratio(n.steps_per_s, n.base1), 3),
        ),
        (
            "**controller Plan writes/s / baseline writes/s (1 thread)**",
            _n(_ratio(n.controller_writes_per_s, n.base1), 3),
        ),
    ]
    base_rows.append(
        (
            "controller API requests/s / baseline requests/s (1 thread; GET + PUT per write)",
            _n(_ratio(n.controller_requests_per_s, n.base1_requests), 3),
        )
    )
    if n.many_threads:
        base_rows += [
            (
                f"**controller API requests/s / baseline requests/s ({n.many_threads} threads)**",
                _n(_ratio(n.controller_requests_per_s, n.base_many_requests), 3),
            ),
            (
                f"controller steps/s / baseline writes/s ({n.many_threads} threads)",
                _n(_ratio(n.steps_per_s, n.base_many), 3),
            ),
            (
                f"controller Plan writes/s / baseline writes/s ({n.many_threads} threads)",
                _n(_ratio(n.controller_writes_per_s, n.base_many), 3),
            ),
        ]
    sections.append(
        (
            "Baseline: GET + PUT /status with that resourceVersion, same Plans, controller stopped",
            base_rows,
        )
    )
    return sections


def _plain(key: str) -> str:
    return key.replace("**", "").replace("&nbsp;", " ")


def render_table(r: Results) -> str:
    sections = rows(r)
    width = max(len(_plain(k)) for _, rs in sections for k, _ in rs)
    out = []
    for title, rs in sections:
        out += ["", title, "-" * len(title)]
        out += [f"  {_plain(k):<{width}}  {v}" for k, v in rs]
    return "\n".join(out) + "\n"


def _markdown(rs: list[Row], head: tuple[str, str] = ("Measure", "Value")) -> str:
    lines = [f"| {head[0]} | {head[1]} |", "|---|---|"]
    lines += [f"| {k} | {v} |" for k, v in rs]
    return "\n".join(lines)


# -- the reading -----------------------------------------------------------------------------


def reading(r: Results) -> list[str]:
    n = Numbers(r)
    p = r.params
    out: list[str] = []
    if math.isnan(n.base1):
        out.append("**Throughput.** No baseline was measured, so there is no ratio to read.")
    else:
        text = (
            f"**Throughput.** The controller completed {n.steps_per_s:.1f} read-only steps per "
            f"second (median of {n.rounds} round{'s' if n.rounds != 1 else ''}): "
            f"{_ratio(n.steps_per_s, n.base1):.2f} of "
            "the rate at which one plain client does the executor's basic operation, GET a "
            f"Plan and PUT its status with that resourceVersion ({n.base1:.0f} writes/s here, "
            "controller stopped). Its own Plan writes ran at "
            f"{_ratio(n.controller_writes_per_s, n.base1):.2f} of that rate. A step takes "
            f"{n.requests_per_step:.1f} API requests, so the controller sent "
            f"{n.controller_requests_per_s:.0f} requests/s"
        )
        best = n.base_many_requests if n.many_threads else n.base1_requests
        who = f"{n.many_threads} threads" if n.many_threads else "one thread"
        ratio = _ratio(n.controller_requests_per_s, best)
        text += f", {ratio:.2f} of the {best:.0f} requests/s the baseline reached with {who}"
        if ratio >= 0.7:
            text += (
                ": the controller drives the API server about as hard as a plain client can, "
                "so steps per second come out at roughly the API server's request rate on "
                "this machine divided by the requests a step makes. Fewer requests per step "
                "(below) should raise throughput roughly in proportion."
            )
        else:
            text += (
                ": the API server had capacity to spare, so the limit is in the controller's "
                "own work between requests (below)."
            )
        out.append(text)
    shares = sorted(((v, name) for name, v in n.cpu.items()), reverse=True)
    top = ", ".join(f"{name} {100 * _ratio(v, n.cpu_total):.0f}%" for v, name in shares if v > 0)
    busy = (
        f"During the read-only rounds the bench's processes kept {100 * n.machine_busy:.0f}% "
        f"of the machine's {n.cores} cores busy (by process: {top}); the whole machine was "
        f"{100 * n.all_busy:.0f}% busy, {100 * n.others_busy:.0f} points of it other work on "
        f"this shared machine, and {100 * n.all_stolen:.0f}% of the time was stolen by the "
        "hypervisor."
    )
    ctl_ms = 1000 * n.per_step(n.cpu.get("controller", 0.0))
    api_ms = 1000 * n.per_step(n.cpu.get("API server + etcd", 0.0))
    per_step = (
        f" Per step the API server spent {api_ms:.0f} ms of CPU and the controller "
        f"{ctl_ms:.0f} ms; every request a step makes costs CPU on both sides (the API "
        "server's, and the controller's serialising and validation), so the number of "
        "requests per step is the main lever."
    )
    if n.controller_core >= 0.8:
        limit = (
            f" The controller alone used {n.controller_core:.2f} cores: one Python interpreter "
            f"(one GIL) spending {ctl_ms:.0f} ms of CPU per step is what limits throughput."
        )
    elif n.all_busy + n.all_stolen >= 0.8:
        limit = " The cores were close to saturated, so throughput is bound by CPU." + per_step
    else:
        limit = (
            " The cores were not saturated, so part of each step's time is waiting: round "
            f"trips to the API server and Postgres, one after another within a plan, with at "
            f"most {CONTROLLER_WORKERS} plans progressing at once." + per_step
        )
    out.append(f"**What limits it.** {busy}{limit}")
    out.append(
        "**Ticks and wake-ups.** A plan's daemon applies transitions back to back within one "
        "tick, reading the Plan and its Mind from the controller's watch store, so a plan runs "
        "from its first step to its last without sleeping. A plan that waits sleeps until the "
        "time its status names or until something wakes it (a change by someone else, an "
        "Approval decided, its Mind changed). Plans took "
        f"{percentile(n.plan_seconds, 50):.1f} s (p50) to "
        f"{percentile(n.plan_seconds, 95):.1f} s (p95) from being applied to completing."
    )
    out.append(
        f"**Concurrency.** At most {n.max_executing} of the {p.plans} plans of a round were "
        "seen executing at once (the bench lists the plans every "
        f"{1000 * READONLY_POLL_SECONDS:.0f} ms, so short-lived phases can be missed). Ticks run "
        f"in a pool of {CONTROLLER_WORKERS} threads (`operator/minds/controller/workers.py`), "
        "taken only while a plan works; a waiting plan holds none."
    )
    got = n.per_plan(n.plan_status_put)
    conflicts = (
        f" {n.plan_conflicts} of the writes were answered 409 and written again (a decision "
        "taken on a copy the watch had not yet refreshed; the one re-read after a conflict is "
        "in the GETs)."
        if n.plan_conflicts
        else " No write lost a race (no 409s)."
    )
    out.append(
        f"**Requests per step.** {n.requests_per_step:.2f} API requests per step: "
        f"{n.writes_per_step:.2f} writes ({n.per_step(n.plan_writes):.2f} Plan writes, "
        f"{got:.1f} status PUTs per plan of {n.k} steps, "
        f"{n.per_plan(n.plan_meta_writes):.1f} metadata patches per plan by kopf for the "
        f"finalizer its daemons require; {n.per_step(n.events):.2f} Events) and "
        f"{n.per_step(n.reads):.2f} reads ({n.per_step(n.plan_gets):.2f} GETs of the Plan and "
        f"{n.per_step(n.mind_gets):.2f} of the Mind; the rest are the observations each "
        f"`service.status` makes of the Deployment and its Pods).{conflicts}"
    )
    if n.latencies:
        out.append(
            f"**Approvals.** From sending the approver's decision to the approved restart "
            f"arriving on the Deployment: p50 {1000 * n.p50:.0f} ms, p95 {1000 * n.p95:.0f} ms; "
            f"to the step completed: p50 {1000 * n.done_p50:.0f} ms, p95 "
            f"{1000 * n.done_p95:.0f} ms; with {p.approval_concurrency} "
            f"plan{'s' if p.approval_concurrency != 1 else ''} in flight, both seen by watch. "
            f"The API server delivered a plain PATCH to a watcher in {1000 * n.watch_p50:.0f} "
            f"ms (p50) and {1000 * n.watch_p95:.0f} ms (p95) in the same run, so an approval "
            f"is executed in {n.approval_over_watch:.1f} times the watch's p95 (both timed from "
            "sending the write). The path to the action is a chain of round trips the safety "
            "rules require (docs/execution.md, How fast an approved action runs): the "
            "decision's watch event, the claim of the step (a Plan status write), the "
            "decision's row and the write-ahead row (one transaction), the restart PATCH "
            "conditional on the Deployment as its watch delivered it (a GET only when the "
            "watch was behind), and the watch event of that PATCH; then the outcome's row and "
            "the step's completing write. "
            f"Run bare, one after another, with the controller's clients and none of its logic "
            f"(bench/floor.py), the chain up to the restart's watch event took "
            f"{1000 * n.floor_p50:.0f} ms (p50) and {1000 * n.floor_p95:.0f} ms (p95) in the "
            f"same run: {n.floor_over_watch:.1f} times the watch's p95 by itself, and the "
            f"controller's approval p95 is {n.approval_over_floor:.2f} times it. "
            f"Per approved plan the controller made {n.ap_plan_writes:.1f} Plan writes and "
            f"{n.ap_approval_writes:.1f} Approval writes."
        )
    d = r.detection
    if d is not None and d.latencies:
        out.append(
            f"**Detection.** {d.trials} Minds at the default {DEFAULT_CYCLE_SECONDS} s cycle, "
            f"each with a goal on a Deployment of its own in the world (docs/world.md): the "
            f"bench labelled the running Pods of one Deployment after another "
            f"`minds.dev/fault={d.fault}` and the Mind's Plan arrived by watch "
            f"{percentile(d.latencies, 50):.2f} s (p50) and {percentile(d.latencies, 95):.2f} s "
            f"(p95) after the label was sent. Of that, the world took "
            f"{percentile(d.unavailable, 50):.2f} s (p50) to show the Deployment unavailable "
            "(the simulated kubelet failing readiness, then the Deployment's controller "
            "writing its status); the rest is the goal's watch, the 250 ms settle of the "
            "wake-up, the cycle and the Plan's creation. Without the wake-up the plan would "
            f"wait for the next periodic cycle, up to {DEFAULT_CYCLE_SECONDS} s."
        )
    b = r.burst
    if b is not None:
        out.append(
            f"**Burst.** {b.changes} changes to what a goal is judged on (the ready replicas of "
            f"a StatefulSet, written by the bench, going down and up) within {b.span:.2f} s cost "
            f"its Mind {b.cycles} cycle{'s' if b.cycles != 1 else ''} in the {b.window:.0f} s "
            "from the burst's start (docs/execution.md: one when it starts, one after the 2 s "
            "cooldown)."
        )
    for pr in r.probes:
        done = len(pr.latencies)
        if done < pr.plans:
            out.append(
                f"**Saturation.** {pr.plans} plans were applied at once, each with a restart "
                f"that needs approval: {pr.raised} raised their Approval and the bench approved "
                f"it at once. {done} of {pr.plans} restarts completed within "
                f"{pr.window:.0f} s; the controller carried out {pr.executed}."
            )
        else:
            out.append(
                f"**Saturation.** With {pr.plans} plans waiting on approvals at once, all "
                f"approved restarts completed (p50 {percentile(pr.latencies, 50):.2f} s from "
                "the decision): waiting plans do not starve the handlers that carry approvals "
                "out."
            )
    rest = n.scale_top
    if rest is not None and r.scale is not None:
        restarts = "; ".join(
            f"with {c.plans} {c.state} plans it made {c.requests} API requests ({c.writes} "
            f"writes) until quiet"
            for c in r.scale.restarts
        )
        watched = (
            f" and {rest.watched} healthy workloads watched as goals of active Minds (their "
            f"cycles {r.scale.watched_cycle} s apart, so that the window holds the watches and "
            "not the cycles, each of which reads every goal's workload)"
            if rest.watched
            else ""
        )
        per_tick = (
            f" It ran {rest.ticks / rest.window:.1f} plan ticks a second (the safety tick of "
            f"each open plan), {rest.requests_per_tick:.4f} API requests and "
            f"{1000 * rest.cpu_ms_per_tick:.0f} µs of CPU per tick."
            if rest.ticks
            else ""
        )
        out.append(
            f"**At rest.** With {rest.open_plans} plans open and waiting{watched}, the whole "
            f"cluster served {rest.requests_per_second:.2f} API requests/s, the controller used "
            f"{100 * rest.cpu_core_fraction:.2f}% of one core and held {_mib(rest.rss_bytes)}."
            f"{per_tick} Restarted, {restarts}: a restart lists each kind once and reads the "
            "rest from its watch."
        )
        low = n.scale_low
        if low is not None and rest.steps_per_second and low.steps_per_second:
            levels = "; ".join(
                f"{pt.open_plans} open: {_median(pt.steps_per_second):.1f} steps/s"
                + (f", RSS {_mib(pt.rss_running)}" if pt.rss_running else "")
                for pt in r.scale.points
            )
            out.append(
                f"**Flat under load.** The read-only rounds ran again at each level, with the "
                f"waiting plans open in the same namespace ({levels}): with {rest.open_plans} "
                f"open they ran at {n.flat:.2f} times the rate with {low.open_plans}. A waiting "
                "plan costs a comparison in memory every 15 s and no thread."
            )
    out.append(
        f"**Memory.** The controller's RSS went from {_mib(n.rss_idle)} idle to "
        f"{_mib(n.rss_peak)} at peak with {p.plans} plans open at once "
        f"({n.threads_peak} threads at most); it keeps no plan state between ticks."
    )
    return out


# -- the document ----------------------------------------------------------------------------


#: The rows of the request tables, always all of them and in this order, so that runs compare
#: line by line; whatever else happened is summed in a last row.
API_ROWS = (
    ("plans", "", "POST"),
    ("plans", "", "LIST"),
    ("plans", "", "GET"),
    ("plans", "status", "PUT"),
    ("plans", "status", "PATCH"),
    ("plans", "", "PATCH"),
    ("minds", "", "GET"),
    ("capabilitygrants", "", "LIST"),
    ("deployments", "", "GET"),
    ("deployments", "", "PATCH"),
    ("pods", "", "LIST"),
    ("approvals", "", "POST"),
    ("approvals", "", "GET"),
    ("approvals", "", "PATCH"),
    ("approvals", "status", "PUT"),
    ("events", "", "POST"),
)


def _api_table(api: ApiCounters, per: float, label: str) -> list[str]:
    lines = [f"| Resource | Verb | Requests | {label} |", "|---|---|---|---|"]
    listed = 0
    for resource, sub, verb in API_ROWS:
        count = api.total(resource=resource, subresource=sub, verbs=(verb,))
        listed += count
        name = f"{resource}/{sub}" if sub else resource
        lines.append(f"| {name} | {verb} | {count} | {count / per:.2f} |")
    rest = api.total(verbs=(*WRITE_VERBS, *READ_VERBS), exclude_resources=("",)) - listed
    lines.append(f"| anything else | reads and writes | {rest} | {rest / per:.2f} |")
    return lines


def render_doc(r: Results, command: str, argv: str, plot_name: str | None = None) -> str:
    when = datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")
    machine_rows: list[Row] = [
        *r.machine.items(),
        *r.versions.items(),
        ("Commit", r.revision),
        ("Run at", when),
        ("Start-up (devcluster, Postgres, CRDs, controller)", f"{r.setup_seconds:.0f} s"),
    ]
    params: list[Row] = [(f"`{o.env}`", f"{r.params.values()[o.flag]}") for o in OPTIONS]
    n = Numbers(r)
    parts = [
        "# Benchmarks",
        "",
        "This file is written by `make bench` (`bench/executor_bench.py`); every run replaces "
        "it, so edit the generator, not this file. The benchmark starts its own devcluster "
        "(kube-apiserver with embedded etcd), embedded Postgres and the controller as a "
        "separate process under its ServiceAccount, and stops them at the end. Every plan "
        f"serves one Mind in namespace `{NAMESPACE}` (its own cycle set to "
        f"{MIND_CYCLE_SECONDS} s so that it stays out of the measurements). In one run it "
        "measures:",
        "",
        "1. **Read-only plans.** Rounds of N operator-authored plans of K `service.status` "
        "steps on a Deployment the bench marks healthy, applied at once: completed steps per "
        "second from the first plan applied to the last completed (the bench lists the plans "
        f"every {1000 * READONLY_POLL_SECONDS:.0f} ms), "
        "API requests per step (the API server's `apiserver_request_total`, read as the "
        "administrator before and after), ledger rows, CPU time per process and the "
        "controller's RSS (sampled every 200 ms).",
        "2. **Approvals.** M plans of one `service.restart` that needs approval; the bench "
        "approves each as the `approver` user once the Approval "
        "is Pending, and measures from sending its decision to the step being "
        "`completed` arriving by a watch on the Plans (as the watch latency is timed).",
        "3. **Saturation probe.** Many plans (20, then 100) waiting on an approval at once, "
        "each restarting "
        "its own workload (one writing action per workload at a time is a rule, so plans on "
        f"one workload would measure that rule instead; the controller ticks plans in "
        f"{CONTROLLER_WORKERS} threads): the bench "
        "approves every Approval as soon as it exists and counts the steps that complete "
        "within the window. A stall is reported, not raised.",
        "4. **Baseline.** With the controller stopped, a plain client (the same kubernetes "
        "client library, configured as the controller's, under the controller's "
        "ServiceAccount) doing the executor's basic operation as fast as it can: GET a Plan, "
        "PUT its status with that resourceVersion, on the read-only rounds' completed Plans "
        "(so the bodies are as large as the controller's), with one thread and with several.",
        "5. **Watch latency.** The floor under any reaction: a plain PATCH of a ConfigMap "
        "nobody else touches, timed from sending it to a watcher receiving the event; the "
        "approval latency is read as a multiple of it.",
        "6. **Scale.** The controller at rest with 10, 100 and 1,000 open plans that "
        "wait (5,000 too with `BENCH_SCALE=10,100,1000,5000`), and healthy workloads "
        "watched as goals of active Minds (requests per second, "
        "CPU, memory and plan ticks over a quiet window); the read-only rounds again at each "
        "level (steps per second, the controller's peak RSS); and the API requests a restart "
        "makes with the open plans and with 1,000 finished plans in place.",
        "7. **Detection.** Minds at the default 60 s cycle, each with a goal on a Deployment "
        "of its own that runs in the devcluster's world (docs/world.md): the fault label on "
        "the Deployment's running Pods, timed from sending it to the Mind's Plan arriving by "
        "watch, one trial per Mind.",
        "8. **Burst.** Changes to one watched workload (a StatefulSet whose status only the "
        "bench writes) within two seconds, and its Mind's cycles counted in the ledger from "
        f"the burst's start to {BURST_WINDOW:.0f} s after.",
        "",
        "The machine is shared and noisy: compare runs by the ratios to the baseline measured "
        "in the same run, not by absolute numbers.",
        "",
        "## Machine",
        "",
        _markdown(machine_rows, ("", "")),
        "",
        "## Command",
        "",
        "```sh",
        command,
        "```",
        "",
        f"This ran `{argv}` with these parameters (each is also a flag: "
        "`.venv/bin/python -m bench.executor_bench --help`):",
        "",
        _markdown(params, ("Variable", "Value")),
        "",
        "## Results",
        "",
    ]
    for title, rs in rows(r):
        parts += [f"### {title}", "", _markdown(rs), ""]
    parts += [
        "### API requests of the read-only rounds, by resource and verb",
        "",
        *_api_table(n.api, n.steps, "Per step"),
        "",
        "The Plan POSTs and LISTs are the bench (applying its plans, polling them) and "
        "non-resource GETs (`/metrics`) are left out; everything else is the controller. "
        "Requests answered 409 are included.",
        "",
    ]
    if r.approvals is not None:
        parts += [
            "### API requests of the approval phase, by resource and verb",
            "",
            *_api_table(r.approvals.cost.api, max(1, r.approvals.plans), "Per approved plan"),
            "",
            "The bench made the Plan POSTs and LISTs, the Approval GETs and one Approval PATCH "
            "per plan (the decision); everything else is the controller.",
            "",
        ]
    if r.scale is not None:
        parts += [
            "### Scale: the controller at rest",
            "",
            "Open plans that wait a day (one `wait` step each), measured over a quiet window "
            f"of {r.params.scale_window:.0f} s once the controller has settled; then the "
            "controller restarted with them in place, counting every API request (watches "
            "aside) until it is quiet again.",
            "",
            *render_scale(r.scale, plot_name),
            "",
        ]
    parts += ["## Reading", ""]
    for paragraph in reading(r):
        parts += [paragraph, ""]
    return "\n".join(parts).rstrip() + "\n"

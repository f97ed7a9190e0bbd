"""Benchmarks of minds-operator, run with ``make bench`` (not part of ``make test``).

``bench.executor_bench`` starts its own devcluster, Postgres and controller process, drives the
executor with a read-only workload and with approvals, measures a plain client's conditional
status writes in the same run as the baseline, and writes ``docs/benchmarks.md``.
"""

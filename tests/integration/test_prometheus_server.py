"""The shipped rules and the documented scrape job in a real Prometheus server on loopback,
scraping a real metrics endpoint: the rules load and evaluate, the Mind's `namespace` label
survives a target label of the same name only with honor_labels, and every dashboard query
runs. (The controller's own endpoint is scraped by the metrics e2e test.)"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
import yaml
from prometheus_client import CollectorRegistry, Gauge, start_http_server

from minds.devenv.ports import free_port
from tests.fixtures.prometheus import (
    JOB,
    RULES_FILE,
    PrometheusServer,
    dashboard_queries,
    running_prometheus,
)
from tests.fixtures.waiting import eventually


@pytest.fixture(scope="module")
def endpoint() -> Iterator[str]:
    """A metrics endpoint with a Mind at its attention cap and the ledger down."""
    registry = CollectorRegistry()
    labels = ["namespace", "mind"]
    Gauge("minds_attention_open_requests", "Pending requests.", labels, registry=registry).labels(
        "team-a", "atlas"
    ).set(5)
    Gauge("minds_attention_max_open_requests", "The cap.", labels, registry=registry).labels(
        "team-a", "atlas"
    ).set(5)
    Gauge("minds_ledger_up", "Last ledger query succeeded.", registry=registry).set(0)
    port = free_port()
    server, thread = start_http_server(port, addr="127.0.0.1", registry=registry)
    try:
        yield f"127.0.0.1:{port}"
    finally:
        server.shutdown()
        thread.join(timeout=10)


@pytest.fixture(scope="module")
def prometheus(
    endpoint: str, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[PrometheusServer]:
    # As service discovery would, the target carries the controller's namespace as a label.
    target = [{"targets": [endpoint], "labels": {"namespace": "minds-system"}}]
    config = {
        "scrape_configs": [
            {"job_name": JOB, "honor_labels": True, "static_configs": target},
            {"job_name": "without-honor-labels", "static_configs": target},
        ]
    }
    with running_prometheus(tmp_path_factory.mktemp("prometheus"), config, [RULES_FILE]) as server:
        eventually(server.targets_up, timeout=60, what="both jobs scraped")
        yield server


def test_the_shipped_rules_load_and_evaluate(prometheus: PrometheusServer) -> None:
    groups = prometheus.api("rules")["groups"]
    loaded = {r["name"]: r for g in groups for r in g["rules"]}
    shipped = [
        r["alert"]
        for g in yaml.safe_load(RULES_FILE.read_text())["groups"]
        for r in g["rules"]
        if "alert" in r
    ]
    assert sorted(loaded) == sorted(shipped)

    def ledger_down() -> list[dict[str, object]]:
        return [
            a
            for a in prometheus.alerts()
            if a["labels"]["alertname"] == "MindsLedgerDown" and a["labels"]["job"] == JOB
        ]

    # for: 2m holds it pending: evaluated, true, and not yet firing.
    [alert] = eventually(ledger_down, timeout=60, what="MindsLedgerDown pending")
    assert alert["state"] == "pending"
    assert all(rule["health"] == "ok" for rule in loaded.values()), loaded


def test_honor_labels_keeps_the_minds_namespace(prometheus: PrometheusServer) -> None:
    kept = eventually(
        lambda: prometheus.query(f'minds_attention_open_requests{{job="{JOB}"}}'),
        what="scraped with honor_labels",
    )
    assert [s["metric"]["namespace"] for s in kept] == ["team-a"]
    renamed = eventually(
        lambda: prometheus.query('minds_attention_open_requests{job="without-honor-labels"}'),
        what="scraped without honor_labels",
    )
    assert [(s["metric"]["namespace"], s["metric"]["exported_namespace"]) for s in renamed] == [
        ("minds-system", "team-a")
    ]


def test_the_cap_rule_matches_the_scraped_series(prometheus: PrometheusServer) -> None:
    """The attention rule's expression, on real scraped series, names the Mind."""
    [result] = eventually(
        lambda: prometheus.query(
            f'minds_attention_open_requests{{job="{JOB}"}}'
            f' >= minds_attention_max_open_requests{{job="{JOB}"}}'
        ),
        what="the cap expression",
    )
    assert (result["metric"]["namespace"], result["metric"]["mind"]) == ("team-a", "atlas")


def test_every_dashboard_query_runs_on_the_server(prometheus: PrometheusServer) -> None:
    for title, expr in dashboard_queries():
        # An error answer (a query Prometheus cannot run) fails inside api().
        assert isinstance(prometheus.query(expr), list), title

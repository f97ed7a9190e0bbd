"""A real Prometheus server scrapes the real controller and evaluates the shipped rules: a Mind
driven to its attention cap and a plan to budget exhaustion fire their alerts, which resolve
once a person acts (approves a request; deletes the blocked plan); and every panel of the
shipped dashboard has series from that Prometheus."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from minds.devenv.controller import ControllerHandle
from tests.e2e.executor_support import (
    apply,
    deployment,
    grant_request,
    mind,
    operator_plan,
    read_step,
    wait_phase,
    wait_step,
)
from tests.fixtures.cluster import Cluster
from tests.fixtures.prometheus import JOB, RULES_FILE, PrometheusServer, running_prometheus
from tests.fixtures.waiting import eventually

pytestmark = pytest.mark.usefixtures("session_controller")


def rules_without_waiting(out: Path) -> Path:
    """The shipped rules with every ``for:`` cut to nothing: the expressions, labels and
    annotations are exactly what ships; how long each must hold is promtool's to test
    (tests/prometheus), not worth a quarter of an hour here."""
    rules = yaml.safe_load(RULES_FILE.read_text())
    for group in rules["groups"]:
        for rule in group["rules"]:
            if "for" in rule:
                rule["for"] = "0s"
    out.write_text(yaml.safe_dump(rules))
    return out


DASHBOARD = RULES_FILE.parent / "dashboard.json"
#: The one panel about something this scenario does not cause: no prediction is resolved, and a
#: Brier score of no predictions does not exist (it is not 0). Replans and abandonments are
#: counters every Mind starts at 0, so their panels have series from the first scrapes.
NOT_IN_THIS_STORY = frozenset({'minds_calibration_brier_score{namespace=~".*", mind=~".*"}'})


def panel_queries() -> list[str]:
    """Every panel's query as Grafana sends it with "All" chosen for namespace and Mind."""

    def panels(items: list[dict[str, Any]]) -> Iterator[dict[str, Any]]:
        for item in items:
            yield item
            yield from panels(item.get("panels", []))

    dashboard = json.loads(DASHBOARD.read_text())
    return [
        target["expr"]
        .replace("$namespace", ".*")
        .replace("$mind", ".*")
        .replace("$__rate_interval", "1m")
        for panel in panels(dashboard["panels"])
        for target in panel.get("targets", [])
    ]


def silent_panels(prometheus: PrometheusServer) -> set[str]:
    return {expr for expr in panel_queries() if not prometheus.query(expr)}


def firing(prometheus: PrometheusServer, alert: str, namespace: str) -> list[dict[str, Any]]:
    return [a for a in prometheus.firing(alert) if a["labels"].get("namespace") == namespace]


def active(prometheus: PrometheusServer, alert: str, namespace: str) -> list[dict[str, Any]]:
    return [
        a
        for a in prometheus.alerts()
        if a["labels"].get("alertname") == alert and a["labels"].get("namespace") == namespace
    ]


def test_cap_and_budget_alerts_fire_and_resolve_when_a_person_acts(
    cluster: Cluster, namespace: str, session_controller: ControllerHandle, tmp_path: Path
) -> None:
    config = {
        "scrape_configs": [
            {
                "job_name": JOB,
                "static_configs": [{"targets": [session_controller.metrics_address]}],
            }
        ]
    }
    rules = rules_without_waiting(tmp_path / "rules.yaml")
    with running_prometheus(tmp_path / "prometheus", config, [rules]) as prometheus:
        eventually(prometheus.targets_up, timeout=60, what="the controller scraped")

        mind(cluster, namespace, attention={"maxOpenRequests": 2})
        deployment(cluster, namespace)
        asks = [grant_request(k, namespace) for k in ("R1", "R2")]
        apply(cluster, operator_plan(namespace, "asks", asks))
        reads = [read_step("D1", namespace), read_step("D2", namespace, "D1")]
        apply(cluster, operator_plan(namespace, "thrifty", reads, budget={"invocations": 1}))
        r1 = wait_step(cluster, namespace, "asks", "R1", "awaiting_grant")["approvalRef"]
        wait_step(cluster, namespace, "asks", "R2", "awaiting_grant")
        wait_phase(cluster, namespace, "thrifty", "blocked")

        [cap] = eventually(
            lambda: firing(prometheus, "MindsAttentionCapReached", namespace),
            timeout=60,
            what="MindsAttentionCapReached firing",
        )
        assert cap["labels"]["mind"] == "keeper"
        assert cap["labels"]["severity"] == "warning"
        assert f"{namespace}/keeper" in cap["annotations"]["description"]
        assert cap["annotations"]["runbook_url"].endswith("MindsAttentionCapReached.md")
        [budget] = eventually(
            lambda: firing(prometheus, "MindsBudgetExhausted", namespace),
            timeout=60,
            what="MindsBudgetExhausted firing",
        )
        assert budget["labels"]["mind"] == "keeper"
        assert not prometheus.firing("MindsControllerAbsent")

        # A person approves one request: the Mind is below its cap again.
        cluster.kubectl(
            "patch",
            "approval",
            r1,
            "-n",
            namespace,
            "--type=merge",
            "-p",
            json.dumps({"spec": {"decision": "Approved", "decidedBy": "approver"}}),
            context="approver",
        )
        eventually(
            lambda: not active(prometheus, "MindsAttentionCapReached", namespace),
            timeout=60,
            what="MindsAttentionCapReached resolved",
        )
        # Every dashboard panel shows this Mind's story (a decision and its wait included).
        eventually(
            lambda: silent_panels(prometheus) <= NOT_IN_THIS_STORY,
            timeout=60,
            what=f"every dashboard panel has series (silent: {silent_panels(prometheus)})",
        )
        # The person gives up the blocked plan (the runbook's "abandon the plan").
        cluster.kubectl("delete", "plan", "thrifty", "-n", namespace, "--wait=false")
        eventually(
            lambda: not active(prometheus, "MindsBudgetExhausted", namespace),
            timeout=60,
            what="MindsBudgetExhausted resolved",
        )
        assert firing(prometheus, "MindsAttentionCapReached", namespace) == []

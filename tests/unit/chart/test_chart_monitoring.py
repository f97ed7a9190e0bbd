"""The chart's monitoring objects: the PrometheusRule is the shipped rules file and passes the
real promtool, the ServiceMonitor keeps the Minds' labels and the job name the alerts use, the
Grafana dashboard is one row per concern and queries only the metrics of the catalogue; each
object only when asked."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.fixtures.helm import Helm, find
from tests.fixtures.prometheus import (
    DASHBOARD_FILE,
    JOB,
    RULES_FILE,
    Promtool,
    dashboard_queries,
)

CRDS = (
    "--api-versions",
    "monitoring.coreos.com/v1/ServiceMonitor",
    "--api-versions",
    "monitoring.coreos.com/v1/PrometheusRule",
)
ALL_ON = {
    "metrics.serviceMonitor.enabled": True,
    "metrics.prometheusRule.enabled": True,
    "metrics.dashboard.enabled": True,
}
ROWS = ["Attention", "Budgets", "Outcomes", "Controller"]
#: The metric catalogue both the controller and this dashboard are bound to (issue 15's
#: contract); `up` is Prometheus' own.
CATALOGUE = {
    "minds_budget_limit",
    "minds_budget_used_ratio",
    "minds_plans_budget_exhausted",
    "minds_attention_open_requests",
    "minds_attention_max_open_requests",
    "minds_attention_waiting_at_cap",
    "minds_attention_oldest_pending_request_timestamp_seconds",
    "minds_plans",
    "minds_steps",
    "minds_steps_outcome_unknown",
    "minds_calibration_brier_score",
    "minds_predictions",
    "minds_mind_last_cycle_timestamp_seconds",
    "minds_ledger_up",
    "minds_build_info",
    "minds_approval_decisions_total",
    "minds_approval_wait_seconds",
    "minds_executions_total",
    "minds_replans_total",
    "minds_intentions_abandoned_total",
    "minds_reconcile_errors_total",
    "minds_ledger_errors_total",
    "minds_ledger_write_seconds",
    "up",
}
_METRIC = re.compile(r"\b(minds_[a-z_]+|up)\b(?=\s*[{\[)]|\s*$|\s)")


def _dashboard() -> dict[str, Any]:
    return dict(json.loads(DASHBOARD_FILE.read_text()))


def test_nothing_is_rendered_unless_asked(helm: Helm) -> None:
    objects = helm.objects(None, *CRDS)
    assert not {"ServiceMonitor", "PrometheusRule"} & {o["kind"] for o in objects}
    assert not [o for o in objects if o["metadata"]["name"] == "minds-dashboard"]


def test_each_toggle_renders_its_own_object(helm: Helm) -> None:
    for key, (kind, name) in {
        "metrics.serviceMonitor.enabled": ("ServiceMonitor", "minds"),
        "metrics.prometheusRule.enabled": ("PrometheusRule", "minds"),
        "metrics.dashboard.enabled": ("ConfigMap", "minds-dashboard"),
    }.items():
        objects = helm.objects({key: True}, *CRDS)
        assert find(objects, kind, name)
        others = {"ServiceMonitor", "PrometheusRule"} - {kind}
        assert not others & {o["kind"] for o in objects}, key


def test_the_service_monitor_needs_the_service(helm: Helm) -> None:
    objects = helm.objects({**ALL_ON, "metrics.service.enabled": False}, *CRDS)
    assert "ServiceMonitor" not in {o["kind"] for o in objects}


def test_the_service_monitor_keeps_the_minds_namespace_and_names_the_job(helm: Helm) -> None:
    objects = helm.objects({**ALL_ON, "metrics.serviceMonitor.labels": {"release": "kps"}}, *CRDS)
    monitor = find(objects, "ServiceMonitor", "minds")
    assert monitor["metadata"]["labels"]["release"] == "kps"
    [endpoint] = monitor["spec"]["endpoints"]
    assert endpoint["port"] == "metrics"
    assert endpoint["honorLabels"] is True
    assert {"action": "replace", "targetLabel": "job", "replacement": JOB} in endpoint[
        "relabelings"
    ]
    service = find(objects, "Service", "minds-metrics")
    assert (
        monitor["spec"]["selector"]["matchLabels"].items() <= service["metadata"]["labels"].items()
    )
    assert [p["name"] for p in service["spec"]["ports"]] == ["metrics"]


def test_the_prometheus_rule_is_the_rules_file(helm: Helm) -> None:
    rule = find(helm.objects(ALL_ON, *CRDS), "PrometheusRule", "minds")
    assert rule["spec"] == yaml.safe_load(RULES_FILE.read_text())


def _check(promtool: Promtool, spec: dict[str, Any], tmp_path: Path) -> str:
    file = tmp_path / "rendered-rules.yaml"
    file.write_text(yaml.safe_dump(spec))
    proc = promtool.check_rules(file)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return proc.stdout


def test_the_rendered_rule_spec_passes_promtool(
    helm: Helm, promtool: Promtool, tmp_path: Path
) -> None:
    values = {
        **ALL_ON,
        "metrics.prometheusRule.runbookBaseUrl": "https://docs.example.org/minds/runbooks/",
        "metrics.prometheusRule.rules": [
            {
                "record": "namespace_mind:minds_budget_used_ratio:max",
                "expr": ("max by (namespace, mind) (minds_budget_used_ratio)"),
            }
        ],
    }
    rule = find(helm.objects(values, *CRDS), "PrometheusRule", "minds")
    shipped = len(yaml.safe_load(RULES_FILE.read_text())["groups"])
    assert [g["name"] for g in rule["spec"]["groups"]][shipped:] == ["minds-operator-extra"]
    alerts = [r for g in rule["spec"]["groups"] for r in g["rules"] if "alert" in r]
    assert f"SUCCESS: {len(alerts) + 1} rules found" in _check(promtool, rule["spec"], tmp_path)
    for alert in alerts:
        assert alert["annotations"]["runbook_url"] == (
            f"https://docs.example.org/minds/runbooks/{alert['alert']}.md"
        )


def test_a_broken_extra_rule_is_caught_by_promtool(
    helm: Helm, promtool: Promtool, tmp_path: Path
) -> None:
    values = {**ALL_ON, "metrics.prometheusRule.rules": [{"record": "x:y", "expr": "sum by ("}]}
    rule = find(helm.objects(values, *CRDS), "PrometheusRule", "minds")
    file = tmp_path / "rendered-rules.yaml"
    file.write_text(yaml.safe_dump(rule["spec"]))
    assert promtool.check_rules(file).returncode != 0


def test_a_runbook_base_must_be_a_url(helm: Helm) -> None:
    proc = helm.template({"metrics.prometheusRule.runbookBaseUrl": "docs/runbooks"}, check=False)
    assert proc.returncode != 0
    assert "runbookBaseUrl" in proc.stderr


def test_the_dashboard_configmap_is_the_dashboard_for_the_grafana_sidecar(helm: Helm) -> None:
    values = {**ALL_ON, "metrics.dashboard.annotations": {"grafana_folder": "Platform"}}
    config = find(helm.objects(values), "ConfigMap", "minds-dashboard")
    assert config["metadata"]["labels"]["grafana_dashboard"] == "1"
    assert config["metadata"]["annotations"] == {"grafana_folder": "Platform"}
    assert json.loads(config["data"]["minds-operator.json"]) == _dashboard()


def test_the_dashboard_has_one_row_per_concern_each_with_panels() -> None:
    panels = _dashboard()["panels"]
    assert [p["title"] for p in panels if p["type"] == "row"] == ROWS
    assert panels[0]["type"] == "row"
    under: dict[str, int] = {}
    row = ""
    for panel in panels:
        if panel["type"] == "row":
            row = panel["title"]
        else:
            under[row] = under.get(row, 0) + 1
            assert panel["targets"], panel["title"]
    assert set(under) == set(ROWS)
    assert len({p["id"] for p in panels}) == len(panels)


def test_the_dashboard_shows_the_whole_catalogue_and_nothing_else() -> None:
    shown = set()
    for title, expr in dashboard_queries():
        for metric in _METRIC.findall(expr):
            name = re.sub(r"_(bucket|sum|count)$", "", metric)
            assert name in CATALOGUE, f"{title}: {metric} is not in the metric catalogue"
            shown.add(name)
    assert shown == CATALOGUE


def test_every_dashboard_query_is_valid_promql(promtool: Promtool, tmp_path: Path) -> None:
    queries = dashboard_queries()
    proc = promtool.check_expressions([expr for _title, expr in queries], tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert f"SUCCESS: {len(queries)} rules found" in proc.stdout


def test_an_invalid_dashboard_query_would_be_caught(promtool: Promtool, tmp_path: Path) -> None:
    dashboard = _dashboard()
    dashboard["panels"][1]["targets"][0]["expr"] = "rate(minds_replans_total)"
    queries = [expr for _title, expr in dashboard_queries(dashboard)]
    assert promtool.check_expressions(queries, tmp_path).returncode != 0


@pytest.mark.parametrize("variable", ["$namespace", "$mind"])
def test_every_mind_panel_follows_the_dashboard_variables(variable: str) -> None:
    """A panel about Minds that ignored the Namespace and Mind pickers would mislead."""
    for panel in _dashboard()["panels"]:
        for target in panel.get("targets", []):
            expr = target["expr"]
            if "namespace, mind" in expr or "{{namespace}}" in target.get("legendFormat", ""):
                assert variable in expr, f"{panel['title']}: {expr}"

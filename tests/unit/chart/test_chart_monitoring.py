"""The chart's monitoring objects: the PrometheusRule is the shipped rules file (with absolute
runbook URLs and the labels a team routes by) and passes the real promtool, the ServiceMonitor
keeps the Minds' labels and the job name the alerts use, the Grafana dashboard is one row per
concern and queries only the metrics of the catalogue; each object only when asked, and asked
for on a cluster without its CRD, a failure that says so unless told to skip."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.fixtures.helm import CHART, Helm, find
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


def _alerts(spec: dict[str, Any]) -> list[dict[str, Any]]:
    return [r for g in spec["groups"] for r in g["rules"] if "alert" in r]


def _home() -> str:
    return str(yaml.safe_load((CHART / "Chart.yaml").read_text())["home"])


def test_the_prometheus_rule_is_the_rules_file(helm: Helm) -> None:
    """Only the runbook base differs: the plain file's is repo-relative."""
    rule = find(helm.objects(ALL_ON, *CRDS), "PrometheusRule", "minds")
    relative = helm.objects({**ALL_ON, "metrics.prometheusRule.runbookBaseUrl": ""}, *CRDS)
    assert find(relative, "PrometheusRule", "minds")["spec"] == yaml.safe_load(
        RULES_FILE.read_text()
    )
    for alert in _alerts(rule["spec"]):
        alert["annotations"]["runbook_url"] = f"docs/runbooks/{alert['alert']}.md"
    assert rule["spec"] == yaml.safe_load(RULES_FILE.read_text())


def test_runbook_urls_are_absolute_by_default_in_the_projects_repository(helm: Helm) -> None:
    """An Alertmanager receiver (a pager, a chat message) cannot follow a relative link."""
    rule = find(helm.objects(ALL_ON, *CRDS), "PrometheusRule", "minds")
    alerts = _alerts(rule["spec"])
    assert len(alerts) == len(_alerts(yaml.safe_load(RULES_FILE.read_text())))
    for alert in alerts:
        url = alert["annotations"]["runbook_url"]
        assert url == f"{_home()}/blob/main/docs/runbooks/{alert['alert']}.md"
        # The page it names is the one the repository holds.
        assert (CHART.parent.parent / "docs" / "runbooks" / f"{alert['alert']}.md").is_file()


def test_extra_labels_go_on_every_alert_and_never_replace_its_own(helm: Helm) -> None:
    values = {
        **ALL_ON,
        "metrics.prometheusRule.additionalRuleLabels": {"team": "platform", "severity": "info"},
        "metrics.prometheusRule.rules": [
            {"alert": "MyMindsAlert", "expr": "vector(1)", "labels": {"team": "sre"}},
            {"record": "namespace:minds_plans:sum", "expr": "sum by (namespace) (minds_plans)"},
        ],
    }
    rule = find(helm.objects(values, *CRDS), "PrometheusRule", "minds")
    shipped = {r["alert"]: r["labels"] for r in _alerts(yaml.safe_load(RULES_FILE.read_text()))}
    for alert in _alerts(rule["spec"]):
        labels = alert["labels"]
        if alert["alert"] == "MyMindsAlert":
            assert labels == {"team": "sre", "severity": "info"}
        else:
            # kube-prometheus-stack routes and inhibits by severity: it stays the alert's own.
            assert labels == {**shipped[alert["alert"]], "team": "platform"}, alert["alert"]
    [extra] = [g for g in rule["spec"]["groups"] if g["name"] == "minds-operator-extra"]
    assert "labels" not in extra["rules"][1]


def test_an_extra_label_must_be_a_prometheus_label_name(helm: Helm) -> None:
    proc = helm.template(
        {"metrics.prometheusRule.additionalRuleLabels": {"team-name": "platform"}}, check=False
    )
    assert proc.returncode != 0
    assert "invalid propertyName 'team-name'" in proc.stderr


def test_the_rule_objects_labels_and_annotations(helm: Helm) -> None:
    values = {
        **ALL_ON,
        "metrics.prometheusRule.labels": {"release": "kps"},
        "metrics.prometheusRule.annotations": {"owner": "platform-team"},
    }
    rule = find(helm.objects(values, *CRDS), "PrometheusRule", "minds")
    assert rule["metadata"]["labels"]["release"] == "kps"
    assert rule["metadata"]["labels"]["app.kubernetes.io/name"] == "minds-operator"
    assert rule["metadata"]["annotations"] == {"owner": "platform-team"}
    plain = find(helm.objects(ALL_ON, *CRDS), "PrometheusRule", "minds")
    assert "annotations" not in plain["metadata"]


MISSING = [
    ("metrics.serviceMonitor.enabled", "monitoring.coreos.com/v1/ServiceMonitor"),
    ("metrics.prometheusRule.enabled", "monitoring.coreos.com/v1/PrometheusRule"),
]


@pytest.mark.parametrize(("value", "api"), MISSING)
def test_asked_for_without_its_crd_the_render_fails_naming_value_and_api(
    helm: Helm, value: str, api: str
) -> None:
    proc = helm.template({value: True}, check=False)
    assert proc.returncode != 0, proc.stdout
    assert f"{value}: this cluster does not serve {api}" in proc.stderr
    assert f"--api-versions {api}" in proc.stderr
    assert "metrics.ifCrdsMissing=skip" in proc.stderr
    # The other API served does not stand in for this one.
    [other] = [a for v, a in MISSING if v != value]
    assert helm.template({value: True}, "--api-versions", other, check=False).returncode != 0
    assert helm.template({value: True}, "--api-versions", api).returncode == 0


def test_told_to_skip_a_missing_crd_the_render_leaves_it_out(helm: Helm) -> None:
    values = {**ALL_ON, "metrics.ifCrdsMissing": "skip"}
    kinds = {o["kind"] for o in helm.objects(values)}
    assert not {"ServiceMonitor", "PrometheusRule"} & kinds
    served = helm.objects(values, "--api-versions", "monitoring.coreos.com/v1/PrometheusRule")
    assert {"PrometheusRule"} == {"ServiceMonitor", "PrometheusRule"} & {o["kind"] for o in served}
    assert {"ServiceMonitor", "PrometheusRule"} <= {o["kind"] for o in helm.objects(values, *CRDS)}


def test_only_fail_or_skip(helm: Helm) -> None:
    proc = helm.template({"metrics.ifCrdsMissing": "warn"}, check=False)
    assert proc.returncode != 0
    assert "/metrics/ifCrdsMissing" in proc.stderr


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
        "metrics.prometheusRule.additionalRuleLabels": {"team": "platform"},
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
        assert alert["labels"]["team"] == "platform"


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
    config = find(helm.objects(values, *CRDS), "ConfigMap", "minds-dashboard")
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

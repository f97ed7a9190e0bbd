"""docs/observability.md, as written: its promtool commands run, its scrape configuration
loads in the real promtool with the shipped rules, its chart values render the objects it
promises, and its alert table is the rules file's."""

from __future__ import annotations

import os
import re
import shutil
import sys
from pathlib import Path
from typing import Any

import yaml

from tests.fixtures.docs import run_documented, sh_commands
from tests.fixtures.helm import Helm, find
from tests.fixtures.prometheus import REPO, RULES_FILE, Promtool

DOC = REPO / "docs" / "observability.md"
_YAML = re.compile(r"^```yaml\n(.*?)^```", re.MULTILINE | re.DOTALL)
CRDS = (
    "--api-versions",
    "monitoring.coreos.com/v1/ServiceMonitor",
    "--api-versions",
    "monitoring.coreos.com/v1/PrometheusRule",
)


def _yaml_blocks() -> list[dict[str, Any]]:
    return [yaml.safe_load(block) for block in _YAML.findall(DOC.read_text())]


def _block_with(key: str) -> dict[str, Any]:
    [block] = [b for b in _yaml_blocks() if key in b]
    return block


def test_the_metrics_section_is_where_the_catalogue_is_generated() -> None:
    assert "\n## Metrics\n\n<!-- catalogue: generated -->\n" in DOC.read_text()


def test_the_promtool_commands_run_as_written(promtool: Promtool) -> None:
    # The Logs section's command runs a controller: tests/e2e/test_json_logs.py runs it.
    commands = sh_commands(DOC, skip="Logs")
    assert [c.split()[:2] for c in commands] == [["promtool", "check"], ["promtool", "test"]]
    path = os.pathsep.join(
        [str(promtool.binary.parent), str(Path(sys.executable).parent), os.environ["PATH"]]
    )
    outputs = run_documented(commands, {}, {"PATH": path}, REPO)
    assert "SUCCESS" in outputs[commands[0]]


def test_the_scrape_configuration_loads_with_the_shipped_rules(
    promtool: Promtool, tmp_path: Path
) -> None:
    config = _block_with("scrape_configs")
    [job] = config["scrape_configs"]
    assert job["job_name"] == "minds-operator"
    assert job["honor_labels"] is True
    (tmp_path / "prometheus.yml").write_text(yaml.safe_dump(config))
    shutil.copy(RULES_FILE, tmp_path / "prometheus-rules.yaml")
    proc = promtool.check_config(tmp_path / "prometheus.yml")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    rules = yaml.safe_load(RULES_FILE.read_text())["groups"]
    assert f"SUCCESS: {sum(len(g['rules']) for g in rules)} rules found" in proc.stdout


def test_the_check_fails_without_the_rules_or_with_a_wrong_field(
    promtool: Promtool, tmp_path: Path
) -> None:
    """The check above can fail: promtool loads the rule files and knows every field."""
    config = _block_with("scrape_configs")
    (tmp_path / "prometheus.yml").write_text(yaml.safe_dump(config))
    assert promtool.check_config(tmp_path / "prometheus.yml").returncode != 0
    shutil.copy(RULES_FILE, tmp_path / "prometheus-rules.yaml")
    config["scrape_configs"][0]["honour_labels"] = True
    (tmp_path / "prometheus.yml").write_text(yaml.safe_dump(config))
    assert promtool.check_config(tmp_path / "prometheus.yml").returncode != 0


def test_the_documented_values_render_what_the_doc_says(helm: Helm, tmp_path: Path) -> None:
    values = tmp_path / "values.yaml"
    values.write_text(yaml.safe_dump(_block_with("metrics")))
    objects = helm.objects(None, "-f", str(values), *CRDS)
    for kind, name in (("ServiceMonitor", "minds"), ("PrometheusRule", "minds")):
        assert find(objects, kind, name)["metadata"]["labels"]["release"] == (
            "kube-prometheus-stack"
        )
    dashboard = find(objects, "ConfigMap", "minds-dashboard")
    assert dashboard["metadata"]["labels"]["grafana_dashboard"] == "1"
    rule = find(objects, "PrometheusRule", "minds")
    urls = {
        r["annotations"]["runbook_url"]
        for g in rule["spec"]["groups"]
        for r in g["rules"]
        if "alert" in r
    }
    base = _block_with("metrics")["metrics"]["prometheusRule"]["runbookBaseUrl"]
    assert all(url.startswith(f"{base}/Minds") for url in urls)


def test_the_alert_table_is_the_rules_file() -> None:
    doc = DOC.read_text()
    rows = re.findall(r"^\| \[(\w+)\]\(runbooks/(\w+)\.md\) \| (\w+) \|", doc, re.MULTILINE)
    groups = yaml.safe_load(RULES_FILE.read_text())["groups"]
    rules = [r for g in groups for r in g["rules"] if "alert" in r]
    assert rows == [(r["alert"], r["alert"], r["labels"]["severity"]) for r in rules]

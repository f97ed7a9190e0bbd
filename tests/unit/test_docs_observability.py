"""docs/observability.md, as written: its promtool and helm commands run, its scrape
configuration loads in the real promtool with the shipped rules, its chart values render the
objects it promises, the failure it shows is the chart's, and its alert table is the rules
file's."""

from __future__ import annotations

import os
import re
import shutil
import sys
from pathlib import Path
from typing import Any

import yaml

from tests.fixtures.docs import run_documented, sections, sh_commands
from tests.fixtures.helm import CHART, Helm, find
from tests.fixtures.prometheus import REPO, RULES_FILE, Promtool

DOC = REPO / "docs" / "observability.md"
OPERATOR = "With the Prometheus Operator"
_YAML = re.compile(r"^```yaml\n(.*?)^```", re.MULTILINE | re.DOTALL)
_TEXT = re.compile(r"^```text\n(.*?)^```", re.MULTILINE | re.DOTALL)
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
    # The Logs section's command runs a controller: tests/e2e/test_json_logs.py runs it; the
    # helm command has its own test below.
    commands = sh_commands(DOC, skip=("Logs", OPERATOR))
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
    home = yaml.safe_load((CHART / "Chart.yaml").read_text())["home"]
    assert all(url.startswith(f"{home}/blob/main/docs/runbooks/Minds") for url in urls)
    team = _block_with("metrics")["metrics"]["prometheusRule"]["additionalRuleLabels"]["team"]
    alerts = [r for g in rule["spec"]["groups"] for r in g["rules"] if "alert" in r]
    assert {r["labels"]["team"] for r in alerts} == {team}
    assert {r["labels"]["severity"] for r in alerts} == {"critical", "warning", "info"}


def test_the_helm_template_command_renders_both_objects_as_written(helm: Helm) -> None:
    [command] = sh_commands(DOC, section=OPERATOR)
    assert command.startswith("helm template ")
    path = os.pathsep.join([str(helm.binary.parent), os.environ["PATH"]])
    out = run_documented([command], {}, {"PATH": path}, REPO)[command]
    kinds = {d["kind"] for d in yaml.safe_load_all(out) if d}
    assert {"ServiceMonitor", "PrometheusRule"} <= kinds


def _without(words: list[str], flag: str, value: str) -> list[str]:
    i = words.index(value)
    assert words[i - 1] == flag
    return words[: i - 1] + words[i + 1 :]


def test_without_the_api_versions_the_failure_is_the_one_shown(helm: Helm) -> None:
    """The command less what tells helm about the CRDs fails; asking for the rule alone, with
    the line the doc shows (up to its ellipsis)."""
    [command] = sh_commands(DOC, section=OPERATOR)
    words = command.split()[1:]
    for kind in ("PrometheusRule", "ServiceMonitor"):
        words = _without(words, "--api-versions", f"monitoring.coreos.com/v1/{kind}")
    assert helm.run(*words, check=False).returncode != 0
    rule_only = _without(words, "--set", "metrics.serviceMonitor.enabled=true")
    proc = helm.run(*rule_only, check=False)
    assert proc.returncode != 0
    [shown] = _TEXT.findall(sections(DOC)[OPERATOR])
    assert shown.strip().removesuffix("...").strip() in proc.stderr, proc.stderr


_ALERT_ROW = re.compile(
    r"^\| \[(\w+)\]\(runbooks/(\w+)\.md\) \| (\w+) \| .*, for (\d+) (minute|minutes) \|$",
    re.MULTILINE,
)
_NUMBERS = {"nine": 9, "ten": 10, "eleven": 11, "twelve": 12, "three": 3, "four": 4, "five": 5}


def test_the_alert_table_is_the_rules_file() -> None:
    """Each row names an alert of the rules file, in its order, with its severity, its own
    runbook and its ``for``; the count of alerts and groups in the text is the file's."""
    groups = yaml.safe_load(RULES_FILE.read_text())["groups"]
    rules = [rule for group in groups for rule in group["rules"] if "alert" in rule]
    text = sections(DOC)["Alerts"]
    rows = _ALERT_ROW.findall(text)
    assert [(name, runbook) for name, runbook, *_ in rows] == [
        (rule["alert"], rule["alert"]) for rule in rules
    ]
    for (name, _, severity, minutes, _), rule in zip(rows, rules, strict=True):
        assert severity == rule["labels"]["severity"], name
        assert f"{minutes}m" == rule["for"], name
    counted = re.match(r"(\w+) alerts, in (\w+) groups", text.strip())
    assert counted is not None
    assert _NUMBERS[counted[1].lower()] == len(rules)
    assert _NUMBERS[counted[2]] == len(groups)

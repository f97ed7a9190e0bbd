"""The shipped alert rules, checked and unit-tested by the real promtool: every alert fires past
its threshold and stays quiet short of it, and the cases notice when a rule goes or moves."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
import yaml

from minds.domain.metrics.catalogue import CATALOGUE
from tests.fixtures.prometheus import REPO, RULES_FILE, Promtool

CASES = REPO / "tests" / "prometheus" / "alerts.test.yaml"
RUNBOOKS = REPO / "docs" / "runbooks"
#: The values kube-prometheus-stack's Alertmanager routes and inhibit rules match: any other
#: reaches no receiver it routes by severity.
SEVERITIES = {"critical", "warning", "info"}
#: Labels Prometheus adds to every scraped series.
TARGET_LABELS = {"job", "instance"}
_METRIC = re.compile(r"\bminds_[a-z_]+")
_LABEL_REF = re.compile(r"\$labels\.(\w+)")
MIND = "{{ $labels.namespace }}/{{ $labels.mind }}"
#: Alerts about the controller itself: there is no Mind to name, the instance is named instead.
CONTROLLER_GROUP = "minds-controller"


def _rules() -> list[tuple[str, dict[str, Any]]]:
    groups = yaml.safe_load(RULES_FILE.read_text())["groups"]
    return [(g["name"], r) for g in groups for r in g["rules"] if "alert" in r]


ALERTS = [rule["alert"] for _group, rule in _rules()]


def test_the_rules_file_passes_promtool_check(promtool: Promtool) -> None:
    proc = promtool.check_rules(RULES_FILE)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert f"SUCCESS: {len(ALERTS)} rules found" in proc.stdout


def test_every_promtool_case_passes(promtool: Promtool) -> None:
    proc = promtool.test_rules(CASES)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def _cases() -> list[dict[str, Any]]:
    return [
        check
        for test in yaml.safe_load(CASES.read_text())["tests"]
        for check in test.get("alert_rule_test", [])
    ]


@pytest.mark.parametrize("alert", ALERTS)
def test_every_alert_has_a_firing_and_a_quiet_case(alert: str) -> None:
    cases = [c for c in _cases() if c["alertname"] == alert]
    assert [c for c in cases if c.get("exp_alerts")], f"{alert}: no case where it fires"
    assert [c for c in cases if not c.get("exp_alerts")], f"{alert}: no case where it is quiet"


@pytest.mark.parametrize(("group", "rule"), _rules(), ids=ALERTS)
def test_every_alert_says_how_urgent_what_and_where_to_read(
    group: str, rule: dict[str, Any]
) -> None:
    name = rule["alert"]
    assert rule.get("for"), f"{name}: no for: a single bad scrape would page"
    assert rule["labels"]["severity"] in SEVERITIES, name
    annotations = rule["annotations"]
    assert annotations["summary"], name
    assert annotations["description"], name
    if group != CONTROLLER_GROUP:
        assert MIND in annotations["description"], f"{name}: description does not name the Mind"
    assert annotations["runbook_url"] == f"docs/runbooks/{name}.md"
    assert (RUNBOOKS / f"{name}.md").is_file(), f"{name}: no runbook"


@pytest.mark.parametrize(("group", "rule"), _rules(), ids=ALERTS)
def test_every_alert_reads_exported_metrics_and_names_only_their_labels(
    group: str, rule: dict[str, Any]
) -> None:
    """A renamed metric or label would leave an alert that never fires, or a description with
    a blank where the Mind or the kind should be; promtool's cases cannot see either, as they
    write the series themselves."""
    exported = {spec.name: spec for spec in CATALOGUE}
    metrics = set(_METRIC.findall(rule["expr"]))
    assert metrics <= set(exported), f"{rule['alert']}: {metrics - set(exported)} not exported"
    labels = TARGET_LABELS.union(*(exported[m].labels for m in metrics))
    annotations = rule["annotations"]["summary"] + rule["annotations"]["description"]
    named = set(_LABEL_REF.findall(annotations))
    assert named <= labels, f"{rule['alert']}: {named - labels} is no label of {metrics}"


def _mutated(tmp_path: Path, text: str) -> Path:
    """The cases, run against ``text`` as the rules file."""
    rules = tmp_path / "rules.yaml"
    rules.write_text(text)
    cases = yaml.safe_load(CASES.read_text())
    cases["rule_files"] = [str(rules)]
    out = tmp_path / "cases.yaml"
    out.write_text(yaml.safe_dump(cases))
    return out


@pytest.mark.parametrize("alert", ALERTS)
def test_the_cases_notice_an_alert_removed(promtool: Promtool, tmp_path: Path, alert: str) -> None:
    document = yaml.safe_load(RULES_FILE.read_text())
    for group in document["groups"]:
        group["rules"] = [r for r in group["rules"] if r.get("alert") != alert]
    proc = promtool.test_rules(_mutated(tmp_path, yaml.safe_dump(document)))
    assert proc.returncode != 0, f"no case noticed {alert} removed"


_THRESHOLD = re.compile(r"(?P<op>>=|<=|==|>|<)\s*(?P<value>\d+(?:\.\d+)?)")


def _thresholds() -> list[tuple[str, int, str]]:
    """(alert, which comparison, the mutated value), each threshold moved both ways: by 5% for
    durations, by one for counts, by 0.05 for ratios."""
    found = []
    for _group, rule in _rules():
        for i, match in enumerate(_THRESHOLD.finditer(rule["expr"])):
            value = float(match["value"])
            step = value * 0.05 if value > 10 else 1.0 if value.is_integer() else 0.05
            for moved in (value - step, value + step):
                found.append((rule["alert"], i, f"{moved:g}"))
    return found


@pytest.mark.parametrize(("alert", "which", "moved"), _thresholds())
def test_the_cases_notice_a_threshold_moved(
    promtool: Promtool, tmp_path: Path, alert: str, which: int, moved: str
) -> None:
    document = yaml.safe_load(RULES_FILE.read_text())
    [rule] = [r for g in document["groups"] for r in g["rules"] if r.get("alert") == alert]
    matches = list(_THRESHOLD.finditer(rule["expr"]))
    target = matches[which]
    rule["expr"] = (
        f"{rule['expr'][: target.start()]}{target['op']} {moved}{rule['expr'][target.end() :]}"
    )
    proc = promtool.test_rules(_mutated(tmp_path, yaml.safe_dump(document)))
    assert proc.returncode != 0, f"no case noticed {alert}'s threshold moved to {moved}"


def test_a_broken_expression_is_refused(promtool: Promtool, tmp_path: Path) -> None:
    """The check above can fail: promtool refuses a rule whose PromQL does not parse."""
    document = yaml.safe_load(RULES_FILE.read_text())
    document["groups"][0]["rules"][0]["expr"] = "minds_budget_used_ratio >="
    broken = tmp_path / "rules.yaml"
    broken.write_text(yaml.safe_dump(document))
    proc = promtool.check_rules(broken)
    assert proc.returncode != 0
    assert "parse error" in proc.stdout + proc.stderr

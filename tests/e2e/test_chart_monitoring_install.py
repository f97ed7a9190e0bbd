"""The chart installed with real helm where the Prometheus Operator's CRDs are served: helm
finds them by asking the API server (no --api-versions), so the default metrics.ifCrdsMissing
(fail) lets the install through, and the PrometheusRule the cluster stores carries the
severities Alertmanager routes by, the extra labels and absolute runbook URLs.

Its own control plane (``fresh_control_plane``): the session's has the chart's cluster-scoped
objects from kubectl, which Helm refuses to take over. No kubelet: ``--no-hooks``, as in
tests/e2e/test_chart_install.py, where the same install without the CRDs is refused.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from minds.devenv.kubectl import kubectl, kubectl_json
from tests.fixtures.helm import CHART, Helm, fresh_control_plane
from tests.fixtures.prometheus import RULES_FILE, install_prometheus_operator_crds

NAMESPACE = "minds-system"
VALUES = {
    "database": {
        "url": {"secretName": "minds-ledger-app", "key": "url"},
        "ownerUrl": {"secretName": "minds-ledger-owner", "key": "url"},
    },
    "metrics": {
        "serviceMonitor": {"enabled": True, "labels": {"release": "kube-prometheus-stack"}},
        "prometheusRule": {
            "enabled": True,
            "labels": {"release": "kube-prometheus-stack"},
            "annotations": {"owner": "platform"},
            "additionalRuleLabels": {"team": "platform"},
        },
    },
}


@pytest.fixture(scope="module")
def installed(helm: Helm, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    state = tmp_path_factory.mktemp("monitoring-install")
    with fresh_control_plane(state) as kube:
        install_prometheus_operator_crds(kube)
        kubectl(kube, "create", "namespace", NAMESPACE)
        values = state / "values.yaml"
        values.write_text(yaml.safe_dump(VALUES))
        helm.run(
            "install", "minds", str(CHART), "-n", NAMESPACE, "-f", str(values), "--no-hooks",
            kubeconfig=kube,
        )  # fmt: skip
        yield kube


def _get(kube: Path, kind: str) -> dict[str, Any]:
    return dict(kubectl_json(kube, "get", kind, "minds", "-n", NAMESPACE))


def test_the_install_finds_the_served_crds_and_creates_both_objects(installed: Path) -> None:
    monitor = _get(installed, "servicemonitor")
    assert monitor["metadata"]["labels"]["release"] == "kube-prometheus-stack"
    rule = _get(installed, "prometheusrule")
    assert rule["metadata"]["labels"]["release"] == "kube-prometheus-stack"
    assert rule["metadata"]["annotations"]["owner"] == "platform"


def test_the_stored_alerts_route_by_severity_and_link_their_runbooks(installed: Path) -> None:
    groups = _get(installed, "prometheusrule")["spec"]["groups"]
    alerts = [r for g in groups for r in g["rules"] if "alert" in r]
    shipped = yaml.safe_load(RULES_FILE.read_text())["groups"]
    assert [a["alert"] for a in alerts] == [
        r["alert"] for g in shipped for r in g["rules"] if "alert" in r
    ]
    home = yaml.safe_load((CHART / "Chart.yaml").read_text())["home"]
    for alert in alerts:
        assert alert["labels"]["severity"] in {"critical", "warning", "info"}
        assert alert["labels"]["team"] == "platform"
        assert alert["annotations"]["runbook_url"] == (
            f"{home}/blob/main/docs/runbooks/{alert['alert']}.md"
        )
    assert {a["labels"]["severity"] for a in alerts} == {"critical", "warning", "info"}

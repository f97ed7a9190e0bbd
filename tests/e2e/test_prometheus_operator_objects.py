"""The chart's ServiceMonitor and PrometheusRule in a real API server with the Prometheus
Operator's own CRDs (v0.93.1, from its Go module, applied server-side: the largest is too long
for the annotation client-side apply writes). The CRDs' schemas accept what the chart renders
and refuse what is malformed; they do not read PromQL, which is why promtool checks the rule
spec (tests/unit/chart/test_chart_monitoring.py)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.fixtures.cluster import Cluster
from tests.fixtures.helm import Helm, find
from tests.fixtures.prometheus import (
    Promtool,
    install_prometheus_operator_crds,
    prometheus_operator_crds,
)

KINDS = ("ServiceMonitor", "PrometheusRule")
VALUES = {
    "metrics.serviceMonitor.enabled": True,
    "metrics.serviceMonitor.labels": {"release": "kube-prometheus-stack"},
    "metrics.prometheusRule.enabled": True,
    "metrics.prometheusRule.runbookBaseUrl": "https://docs.example.org/minds/runbooks",
}


@pytest.fixture(scope="module")
def operator_crds(cluster: Cluster) -> Iterator[list[str]]:
    names = install_prometheus_operator_crds(cluster.kubeconfig)
    yield names
    cluster.kubectl("delete", "crd", *names, "--wait=false", check=False)


def _rendered(helm: Helm, namespace: str) -> list[dict[str, Any]]:
    """The monitoring objects exactly as the chart renders them for a release in
    ``namespace`` whose cluster has the CRDs."""
    objects = helm.objects(
        VALUES,
        "--api-versions",
        "monitoring.coreos.com/v1/ServiceMonitor",
        "--api-versions",
        "monitoring.coreos.com/v1/PrometheusRule",
        namespace=namespace,
    )
    return [o for o in objects if o["kind"] in KINDS]


def _get(cluster: Cluster, kind: str, name: str, namespace: str) -> dict[str, Any]:
    proc = cluster.kubectl("get", kind.lower(), name, "-n", namespace, "-o", "json")
    return dict(json.loads(proc.stdout))


def test_the_operator_crds_were_large_enough_to_need_server_side_apply(
    operator_crds: list[str],
) -> None:
    """Client-side apply keeps the whole object in an annotation of at most 256 KiB."""
    largest = max(p.stat().st_size for p in prometheus_operator_crds())
    assert largest > 256 * 1024
    assert "servicemonitors.monitoring.coreos.com" in operator_crds
    assert "prometheusrules.monitoring.coreos.com" in operator_crds


def test_the_chart_objects_are_accepted_as_rendered(
    cluster: Cluster, namespace: str, helm: Helm, operator_crds: list[str]
) -> None:
    rendered = _rendered(helm, namespace)
    assert sorted(o["kind"] for o in rendered) == sorted(KINDS)
    cluster.kubectl(
        "apply",
        "--server-side",
        "--field-manager=helm",
        "-f",
        "-",
        input_=yaml.safe_dump_all(rendered),
    )
    for obj in rendered:
        stored = _get(cluster, obj["kind"], obj["metadata"]["name"], namespace)
        # Stored as sent: no field pruned by the CRD's structural schema, none defaulted away.
        assert stored["spec"] == obj["spec"], obj["kind"]
        assert obj["metadata"]["labels"].items() <= stored["metadata"]["labels"].items()
    monitor = find(rendered, "ServiceMonitor", "minds")
    [endpoint] = _get(cluster, "ServiceMonitor", "minds", namespace)["spec"]["endpoints"]
    assert endpoint == monitor["spec"]["endpoints"][0]


def test_the_crd_refuses_a_malformed_rule(
    cluster: Cluster, namespace: str, helm: Helm, operator_crds: list[str]
) -> None:
    rule = find(_rendered(helm, namespace), "PrometheusRule", "minds")
    rule["metadata"]["name"] = "minds-malformed"
    rule["spec"]["groups"][0]["rules"][0]["for"] = "five minutes"
    proc = cluster.kubectl(
        "apply", "--server-side", "-f", "-", input_=yaml.safe_dump(rule), check=False
    )
    assert proc.returncode != 0
    assert "spec.groups[0].rules[0].for" in proc.stderr


def test_the_api_server_does_not_read_promql_so_promtool_must(
    cluster: Cluster,
    namespace: str,
    helm: Helm,
    promtool: Promtool,
    tmp_path: Path,
    operator_crds: list[str],
) -> None:
    rule = find(_rendered(helm, namespace), "PrometheusRule", "minds")
    rule["metadata"]["name"] = "minds-unparsable"
    rule["spec"]["groups"][0]["rules"][0]["expr"] = "sum by ("
    cluster.kubectl("apply", "--server-side", "-f", "-", input_=yaml.safe_dump(rule))
    stored = _get(cluster, "PrometheusRule", "minds-unparsable", namespace)
    file = tmp_path / "stored-rules.yaml"
    file.write_text(yaml.safe_dump(stored["spec"]))
    proc = promtool.check_rules(file)
    assert proc.returncode != 0
    assert "parse error" in proc.stdout + proc.stderr

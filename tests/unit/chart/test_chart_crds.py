"""The chart's CRDs are templates (docs/upgrading.md): `helm upgrade` upgrades them, Helm keeps
them when the release goes, and a value hands them to another tool."""

from __future__ import annotations

import copy
from typing import Any

import yaml

from minds.adapters.kube.crds import peering_crd, render_crd
from minds.domain.resources.kinds import KINDS
from tests.fixtures.helm import CHART, Helm

KEEP = {"helm.sh/resource-policy": "keep"}


def _models() -> dict[str, dict[str, Any]]:
    crds = [render_crd(kind) for kind in KINDS] + [peering_crd()]
    return {crd["metadata"]["name"]: crd for crd in crds}


def test_the_chart_renders_the_models_crds_kept_and_labelled(helm: Helm) -> None:
    chart = yaml.safe_load((CHART / "Chart.yaml").read_text())
    rendered = helm.crds()
    assert rendered.keys() == _models().keys()
    for name, model in _models().items():
        crd = copy.deepcopy(rendered[name])
        assert crd["metadata"].pop("annotations") == KEEP, name
        labels = crd["metadata"]["labels"]
        assert labels.pop("app.kubernetes.io/version") == chart["appVersion"]
        assert labels.pop("helm.sh/chart") == f"minds-operator-{chart['version']}"
        assert crd == model, name


def test_nothing_is_left_in_crds_where_helm_would_never_upgrade_it() -> None:
    assert not (CHART / "crds").exists()


def test_crds_enabled_off_renders_none(helm: Helm) -> None:
    assert helm.crds({"crds.enabled": False}) == {}


def test_crds_keep_off_drops_only_the_policy(helm: Helm) -> None:
    for crd in helm.crds({"crds.keep": False}).values():
        assert "annotations" not in crd["metadata"]


def test_values_without_the_crds_key_still_install_and_keep_them(helm: Helm) -> None:
    """`helm upgrade --reuse-values` from 0.1.0 reuses values that have no `crds` key, without
    the new chart's defaults: that must not mean "drop the CRDs". (A null removes the key.)"""
    rendered = helm.crds({"crds": None})
    assert rendered.keys() == _models().keys()
    assert all(crd["metadata"]["annotations"] == KEEP for crd in rendered.values())

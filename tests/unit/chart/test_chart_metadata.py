"""Chart.yaml says where the project lives and what the chart brings, as `helm show chart`
prints it to someone deciding whether to install it; its claims are checked against the chart
itself."""

from __future__ import annotations

from typing import Any

import yaml

from tests.fixtures.helm import CHART, Helm

REPO = CHART.parent.parent


def _shown(helm: Helm) -> dict[str, Any]:
    return dict(yaml.safe_load(helm.run("show", "chart", str(CHART)).stdout))


def test_the_chart_names_its_home_sources_and_maintainers(helm: Helm) -> None:
    chart = _shown(helm)
    assert chart["home"].startswith("https://")
    assert chart["home"] in chart["sources"]
    assert chart["maintainers"]
    for maintainer in chart["maintainers"]:
        assert maintainer["name"]
        assert maintainer.get("url") or maintainer.get("email")
    assert chart["annotations"]["licenses"] == "Apache-2.0"


def test_the_runbooks_default_to_the_charts_home() -> None:
    values = yaml.safe_load((CHART / "values.yaml").read_text())
    chart = yaml.safe_load((CHART / "Chart.yaml").read_text())
    base = values["metrics"]["prometheusRule"]["runbookBaseUrl"]
    assert base == f"{chart['home']}/blob/main/docs/runbooks"


def test_the_crds_annotation_lists_the_crds_the_chart_ships(helm: Helm) -> None:
    listed = _shown(helm)["annotations"]["minds.dev/crds"].split(", ")
    assert listed == sorted(p.stem for p in (CHART / "templates" / "crds").glob("*.yaml"))


def test_the_optional_apis_are_the_ones_the_chart_checks_for() -> None:
    chart = yaml.safe_load((CHART / "Chart.yaml").read_text())
    apis = chart["annotations"]["minds.dev/optional-apis"].split(", ")
    templates = (CHART / "templates" / "monitoring.yaml").read_text()
    for api in apis:
        kind = api.rsplit("/", 1)[1]
        assert f'"kind" "{kind}"' in templates, api

"""One version: the package's (pyproject.toml) is the chart's appVersion, and the image the
chart runs by default is tagged with it, in the controller Deployment and the migration Job.
The image's version label is checked against the same package version when it is built
(the Dockerfile, tests/image)."""

from __future__ import annotations

import tomllib

import yaml

from tests.fixtures.helm import CHART, Helm

REPO = CHART.parent.parent
VERSION = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["version"]


def test_the_charts_app_version_is_the_package_version() -> None:
    chart = yaml.safe_load((CHART / "Chart.yaml").read_text())
    assert chart["appVersion"] == VERSION


def test_the_default_image_tag_is_the_package_version(helm: Helm) -> None:
    values = yaml.safe_load((CHART / "values.yaml").read_text())
    expected = f"{values['image']['repository']}:{VERSION}"
    objects = [o for o in helm.objects() if o["kind"] in ("Deployment", "Job")]
    assert sorted(o["kind"] for o in objects) == ["Deployment", "Job"]
    for obj in objects:
        for container in obj["spec"]["template"]["spec"]["containers"]:
            assert container["image"] == expected, obj["metadata"]["name"]

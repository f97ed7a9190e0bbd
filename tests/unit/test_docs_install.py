"""docs/install.md's values reference is the chart's schema, rendered: it cannot drift."""

from __future__ import annotations

import json
import shlex
import tomllib

from minds.devenv.chart_values import BEGIN, END, values_reference, with_reference
from minds.devenv.install import repo_root
from tests.fixtures.docs import sh_commands

REPO = repo_root()
CHART = REPO / "charts" / "minds-operator"
DOC = REPO / "docs" / "install.md"


def test_the_values_reference_is_generated_from_the_schema() -> None:
    doc = DOC.read_text()
    assert with_reference(doc, values_reference(CHART)) == doc, (
        "run `python -m minds.devenv.chart_values` and commit docs/install.md"
    )


def test_every_schema_value_has_a_row_and_a_description() -> None:
    doc = DOC.read_text()
    table = doc[doc.index(BEGIN) : doc.index(END)]
    schema = json.loads((CHART / "values.schema.json").read_text())
    for key, sub in schema["properties"].items():
        assert f"| `{key}" in table, key
        assert sub.get("description"), f"{key} has no description in values.schema.json"


def test_the_documented_image_build_is_the_one_the_image_test_makes() -> None:
    """The image test (tests/image, `make image-test`) builds with these flags, plus only what
    this machine needs (no registry: a local base and a wheelhouse); the doc's version is the
    package's."""
    [build] = sh_commands(DOC, section="The image")
    words = shlex.split(build)
    version = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["version"]
    assert words[:2] == ["buildah", "bud"]
    assert words[words.index("--timestamp") + 1] == "$(git log -1 --format=%ct)"
    args = [words[i + 1] for i, word in enumerate(words) if word == "--build-arg"]
    assert args == [f"VERSION={version}", "REVISION=$(git rev-parse HEAD)"]
    assert words[words.index("-t") + 1] == f"minds-operator:{version}"

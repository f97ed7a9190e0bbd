"""docs/agency.md names, for each invariant, the test that proves it: every one must exist."""

from __future__ import annotations

import ast
import re

from minds.devenv.install import repo_root

REPO = repo_root()
_LINK = re.compile(
    r"\[(?P<path>tests/[\w/]+\.py)::(?P<test>\w+)(?:\[[^\]]*\])?\]\((?P<href>[^)]+)\)"
)


def test_every_test_the_agency_doc_links_exists() -> None:
    text = (REPO / "docs" / "agency.md").read_text()
    links = list(_LINK.finditer(text))
    assert links
    for link in links:
        path = REPO / link["path"]
        assert link["href"] == f"../{link['path']}", link.group(0)
        assert path.exists(), link.group(0)
        names = {
            node.name
            for node in ast.walk(ast.parse(path.read_text()))
            if isinstance(node, ast.FunctionDef)
        }
        assert link["test"] in names, link.group(0)

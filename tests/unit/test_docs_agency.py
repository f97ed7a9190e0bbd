"""docs/agency.md links each invariant to the test that proves it: every link names a test
that exists, in the file the link points to."""

from __future__ import annotations

import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
DOC = REPO / "docs" / "agency.md"
LINK = re.compile(r"\[(tests/[\w/]+\.py)::(\w+)\]\(\.\./(tests/[\w/]+\.py)\)")


def test_every_invariant_links_a_test_that_exists() -> None:
    links = LINK.findall(DOC.read_text())
    assert links
    for shown, name, target in links:
        assert shown == target, f"{shown}::{name} links to {target}"
        source = (REPO / target).read_text()
        assert re.search(rf"^def {name}\(", source, re.MULTILINE), f"{target} has no {name}"

"""The service suites start the files that wait minutes first, and xdist keeps that order."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from minds.devenv.install import repo_root
from tests.conftest import pytest_collection_modifyitems


@dataclass
class _Mark:
    args: tuple[Any, ...]


@dataclass
class _Item:
    """What the ordering reads of a collected test: its file and its ``minutes`` mark."""

    file: str
    minutes: float | None = None
    location: tuple[str, int, str] = field(init=False)

    def __post_init__(self) -> None:
        self.location = (self.file, 0, self.file)

    def get_closest_marker(self, name: str) -> _Mark | None:
        return _Mark((self.minutes,)) if name == "minutes" and self.minutes else None


def test_files_that_wait_minutes_come_first_longest_first_the_rest_as_collected() -> None:
    items = [
        _Item("a.py"),
        _Item("b.py", 1),
        _Item("b.py"),
        _Item("c.py"),
        _Item("d.py", 5),
        _Item("e.py", 2),
    ]
    pytest_collection_modifyitems(items)  # type: ignore[arg-type]
    assert [i.file for i in items] == ["d.py", "e.py", "b.py", "b.py", "a.py", "c.py"]


def test_xdist_hands_out_the_files_in_that_order() -> None:
    """Its default (--loadscope-reorder) sorts the files by their number of tests instead."""
    makefile = (repo_root() / "Makefile").read_text()
    recipe = makefile[makefile.index("\ntest-services:") :]
    recipe = recipe[: recipe.index("\n\n")]
    assert re.search(r"--dist loadfile\b", recipe)
    assert "--no-loadscope-reorder" in recipe

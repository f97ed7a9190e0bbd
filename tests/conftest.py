import os

import pytest
from hypothesis import settings

pytest_plugins = [
    "tests.fixtures.postgres",
    "tests.fixtures.cluster",
    "tests.fixtures.helm",
    "tests.fixtures.prometheus",
]

# Property tests judge rules, not speed: no per-example deadline on a shared, noisy machine.
# In CI the examples are derived from the test itself, so a red run can be replayed exactly.
settings.register_profile("default", deadline=None)
settings.register_profile("ci", deadline=None, derandomize=True)
settings.load_profile("ci" if os.environ.get("CI") else "default")


def _minutes(item: pytest.Item) -> float:
    marker = item.get_closest_marker("minutes")
    return float(marker.args[0]) if marker is not None else 0.0


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Files marked ``minutes(n)`` first, longest first, the rest in their usual order.
    pytest-xdist hands whole files to its workers in this order: a file that waits for minutes
    started last would keep one worker busy long after the others were done."""
    longest: dict[str, float] = {}
    for item in items:
        longest[item.location[0]] = max(longest.get(item.location[0], 0.0), _minutes(item))
    items.sort(key=lambda item: -longest[item.location[0]])

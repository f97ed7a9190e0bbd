import os

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

"""The image's locks follow pyproject.toml: every runtime dependency (and build requirement) is
pinned within its range, with hashes, so the Dockerfile's ``--require-hashes --no-deps``
install is exactly what pyproject.toml asks for. `make lock` regenerates them."""

from __future__ import annotations

import re
import tomllib
from dataclasses import dataclass

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name
from packaging.version import Version

from minds.devenv.install import repo_root

REPO = repo_root()
PYPROJECT = tomllib.loads((REPO / "pyproject.toml").read_text())
_PIN = re.compile(r"^(?P<name>[A-Za-z0-9][A-Za-z0-9._-]*)==(?P<version>[^\s;\\]+)")
_HASH = re.compile(r"--hash=sha256:[0-9a-f]{64}")


@dataclass(frozen=True)
class Pin:
    version: Version
    hashes: int


def parse_lock(text: str) -> dict[str, Pin]:
    """A hashed requirements file, as `uv pip compile --generate-hashes` writes it: each pin
    starts a line, its hashes follow on continuation lines."""
    pins: dict[str, Pin] = {}
    name = ""
    for line in text.splitlines():
        if match := _PIN.match(line):
            name = canonicalize_name(match["name"])
            assert name not in pins, f"{name} is pinned twice"
            pins[name] = Pin(Version(match["version"]), 0)
        elif name and _HASH.search(line):
            pins[name] = Pin(pins[name].version, pins[name].hashes + 1)
        elif line.strip() and not line.lstrip().startswith("#"):
            raise AssertionError(f"not a pin, hash or comment: {line!r}")
    return pins


def drift(requirements: list[str], pins: dict[str, Pin]) -> list[str]:
    """What is wrong with the lock against these requirements: each one missing, or pinned
    outside its range, and each pin without a hash."""
    problems = []
    for text in requirements:
        requirement = Requirement(text)
        pin = pins.get(canonicalize_name(requirement.name))
        if pin is None:
            problems.append(f"{requirement.name} is not pinned")
        elif not requirement.specifier.contains(pin.version, prereleases=True):
            problems.append(f"{requirement.name}=={pin.version} is outside {requirement}")
    problems += [f"{name} has no hash" for name, pin in pins.items() if pin.hashes == 0]
    return problems


@pytest.mark.parametrize(
    ("lock", "requirements"),
    [
        ("image.lock", PYPROJECT["project"]["dependencies"]),
        ("build.lock", PYPROJECT["build-system"]["requires"]),
    ],
)
def test_the_lock_pins_every_requirement_within_its_range(
    lock: str, requirements: list[str]
) -> None:
    pins = parse_lock((REPO / "requirements" / lock).read_text())
    assert drift(requirements, pins) == [], "run `make lock` and commit requirements/"


def test_the_image_holds_no_test_or_optional_extra() -> None:
    pins = parse_lock((REPO / "requirements" / "image.lock").read_text())
    extras = {
        canonicalize_name(Requirement(text).name)
        for texts in PYPROJECT["project"]["optional-dependencies"].values()
        for text in texts
    }
    runtime = {canonicalize_name(Requirement(t).name) for t in PYPROJECT["project"]["dependencies"]}
    assert not (extras - runtime) & set(pins), "the image lock holds an extra's package"


def test_drift_names_a_missing_dependency_an_out_of_range_pin_and_a_missing_hash() -> None:
    lock = (
        "kopf==1.2 \\\n    --hash=sha256:" + "a" * 64 + "\n"
        "pyyaml==6.0.4\n"
        "    # via minds-operator (pyproject.toml)\n"
    )
    pins = parse_lock(lock)
    assert drift(["kopf>=1.37", "PyYAML>=6", "rich>=13"], pins) == [
        "kopf==1.2 is outside kopf>=1.37",
        "rich is not pinned",
        "pyyaml has no hash",
    ]

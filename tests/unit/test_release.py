"""One version names a release (docs/upgrading.md, Releases and versions): pyproject.toml and
Chart.yaml agree, CHANGELOG.md's newest release is that version, the upgrade test's previous
chart is that release's, and the doc's tag commands work as written (in a throwaway clone)."""

from __future__ import annotations

import re
import shlex
import subprocess
import tarfile
import tomllib
from pathlib import Path

import yaml

from tests.fixtures.docs import sh_commands
from tests.fixtures.helm import Helm

REPO = Path(__file__).resolve().parents[2]
CHANGELOG = REPO / "CHANGELOG.md"
DOC = REPO / "docs" / "upgrading.md"
PREVIOUS = REPO / "tests" / "fixtures" / "charts"
_RELEASE = re.compile(r"^## \[(\d+\.\d+\.\d+)\] - (\d{4}-\d{2}-\d{2})$", re.MULTILINE)
_HEADING = re.compile(r"^## (.+)$", re.MULTILINE)


def _version() -> str:
    return str(tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["version"])


def _released() -> list[tuple[str, str]]:
    return _RELEASE.findall(CHANGELOG.read_text())


def test_the_package_and_the_chart_have_one_version() -> None:
    chart = yaml.safe_load((REPO / "charts" / "minds-operator" / "Chart.yaml").read_text())
    assert chart["version"] == chart["appVersion"] == _version()


def test_the_changelog_starts_unreleased_then_releases_newest_first() -> None:
    headings = _HEADING.findall(CHANGELOG.read_text())
    assert headings[0] == "[Unreleased]"
    released = _released()
    assert len(headings) == 1 + len(released)
    versions = [tuple(int(n) for n in v.split(".")) for v, _ in released]
    assert versions == sorted(versions, reverse=True)
    assert [d for _, d in released] == sorted((d for _, d in released), reverse=True)
    text = CHANGELOG.read_text()
    for version, _ in released:
        assert f"[{version}]: " in text
    assert "[Unreleased]: " in text


def test_the_version_is_the_newest_release() -> None:
    """Changes since wait under Unreleased: the version moves only when a release is cut."""
    assert _released()[0][0] == _version()


def test_the_previous_chart_is_the_newest_release() -> None:
    [package] = PREVIOUS.glob("minds-operator-*.tgz")
    with tarfile.open(package) as tar:
        member = tar.extractfile("minds-operator/Chart.yaml")
        assert member is not None
        chart = yaml.safe_load(member.read())
        names = tar.getnames()
    assert chart["version"] == _released()[0][0]
    assert package.name == f"minds-operator-{chart['version']}.tgz"
    # The release before this change: its CRDs were in crds/, which the upgrade test moves.
    assert any(n.startswith("minds-operator/crds/") for n in names)


def test_the_tag_commands_tag_the_commit_the_changelog_names(tmp_path: Path, helm: Helm) -> None:
    """Run as written, in a clone whose origin is a bare copy: nothing touches this repo."""
    commands = sh_commands(DOC, section="Releases and versions")
    tag, push, package = commands
    commit = tag.split()[4]
    assert f"Commit `{commit}`" in CHANGELOG.read_text()
    origin, clone = tmp_path / "origin.git", tmp_path / "clone"

    def git(*args: str, cwd: Path = tmp_path) -> str:
        return subprocess.run(
            ["git", *args], cwd=cwd, capture_output=True, text=True, check=True
        ).stdout

    git("clone", "--bare", "--quiet", str(REPO), str(origin))
    git("clone", "--quiet", str(origin), str(clone))
    git("config", "user.email", "release@example.com", cwd=clone)
    git("config", "user.name", "release", cwd=clone)
    for command in (tag, push):
        subprocess.run(shlex.split(command), cwd=clone, check=True, capture_output=True)
    assert git("rev-parse", "v0.1.0^{commit}", cwd=origin).strip() == commit
    git("checkout", "--quiet", "v0.1.0", cwd=clone)
    program, *args = shlex.split(package)
    assert program == "helm"
    subprocess.run([str(helm.binary), *args], cwd=clone, check=True, capture_output=True)
    with (
        tarfile.open(clone / "minds-operator-0.1.0.tgz") as made,
        tarfile.open(PREVIOUS / "minds-operator-0.1.0.tgz") as kept,
    ):
        assert sorted(made.getnames()) == sorted(kept.getnames())
        for name in kept.getnames():
            a, b = kept.extractfile(name), made.extractfile(name)
            if a is not None and b is not None:
                assert a.read() == b.read(), name

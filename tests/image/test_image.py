"""The image, built from the Dockerfile with buildah, runs the CLI as its non-root user.

Slow (about a minute warm) and needs buildah: marked ``image``; ``make test`` leaves it out and
``make image-test`` (CI) runs it. The build itself needs no network: the package's
dependencies go in a wheelhouse first (from pip's cache or index). The base is
``MINDS_IMAGE_BASE`` when set (``make image-test`` sets it to the one scripts/image-base.sh
makes from Debian's packages, since no image registry is reachable here), else the
Dockerfile's pinned base, which buildah pulls. buildah runs with ``--isolation chroot``, which
needs no container runtime or cgroup delegation.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import uuid
from collections.abc import Iterator

import pytest

from minds.devenv.install import repo_root

REPO = repo_root()
pytestmark = pytest.mark.image


def _buildah(*args: str, timeout: float = 900) -> subprocess.CompletedProcess[str]:
    proc = subprocess.run(
        ["buildah", *args], capture_output=True, text=True, timeout=timeout, check=False
    )
    assert proc.returncode == 0, f"buildah {' '.join(args)}\n{proc.stdout}\n{proc.stderr}"
    return proc


@pytest.fixture(scope="module")
def image(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    if shutil.which("buildah") is None:
        pytest.skip("buildah is not installed (Debian: apt-get install buildah); CI runs this")
    context = tmp_path_factory.mktemp("image-context")
    for name in ("pyproject.toml", "README.md", ".dockerignore"):
        shutil.copy(REPO / name, context / name)
    shutil.copytree(
        REPO / "operator",
        context / "operator",
        ignore=shutil.ignore_patterns("__pycache__", "*.egg-info"),
    )
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--quiet", "--wheel-dir",
         str(context / "wheelhouse"), str(context), "setuptools>=77", "wheel"],
        check=True, timeout=600,
    )  # fmt: skip
    tag = f"localhost/minds-operator:test-{uuid.uuid4().hex[:8]}"
    args = ["bud", "--isolation", "chroot", "--layers=false", "-f", str(REPO / "Dockerfile")]
    args += ["--build-arg", "PIP_NO_INDEX=1", "--build-arg", "PIP_FIND_LINKS=/src/wheelhouse"]
    base = os.environ.get("MINDS_IMAGE_BASE")
    if base:
        args += ["--build-arg", f"BASE_IMAGE={base}"]
    _buildah(*args, "-t", tag, str(context))
    try:
        yield tag
    finally:
        subprocess.run(["buildah", "rmi", tag], capture_output=True, check=False)


@pytest.fixture
def container(image: str) -> Iterator[str]:
    name = _buildah("from", image).stdout.strip()
    yield name
    subprocess.run(["buildah", "rm", name], capture_output=True, check=False)


def _run(container: str, *argv: str) -> str:
    return _buildah("run", "--isolation", "chroot", container, "--", *argv).stdout


def test_the_cli_and_the_migrations_run_as_the_non_root_user(container: str) -> None:
    assert _run(container, "id", "-u").strip() == "10001"
    assert "controller" in _run(container, "minds", "--help")
    assert "Apply every migration" in _run(container, "minds", "db", "upgrade", "--help")


def test_the_image_holds_the_runtime_only_byte_compiled(container: str) -> None:
    site = _run(
        container,
        "/opt/minds/bin/python",
        "-c",
        "import sysconfig; print(sysconfig.get_path('purelib'))",
    ).strip()
    listing = _run(container, "ls", site).split()
    assert "minds" in listing
    assert not {"pytest", "mypy", "ruff", "hypothesis", "pip"} & set(listing)
    compiled = _run(container, "find", f"{site}/minds", "-name", "*.pyc").split()
    sources = _run(container, "find", f"{site}/minds", "-name", "*.py").split()
    assert len(compiled) >= len(sources) > 0


def test_the_image_config_runs_the_controller_as_a_numeric_user(image: str) -> None:
    config = json.loads(_buildah("inspect", "--type", "image", image).stdout)["OCIv1"]["config"]
    assert config["User"] == "10001:10001"
    assert config["Entrypoint"] == ["minds"]
    assert config["Cmd"] == ["controller", "run", "--liveness", "http://0.0.0.0:8080/healthz"]
    for label in ("title", "version", "licenses", "revision", "description"):
        assert f"org.opencontainers.image.{label}" in config["Labels"]

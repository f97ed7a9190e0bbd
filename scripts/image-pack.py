"""Pack the image's virtualenv: prune it, zip its pure-Python packages, byte-compile.

Run by the Dockerfile with the virtualenv's Python, after the install:

    /opt/minds/bin/python scripts/image-pack.py

1. Prune what nothing runs: tests shipped inside packages, type stubs (``*.pyi``), C and
   Cython sources and headers.
2. Zip the pure-Python packages (every top-level package or module of site-packages made only
   of ``.py`` files, but minds itself) into one file, ``site-packages/pure.zip``, which a
   ``.pth`` file puts on ``sys.path``: Python imports from it (zipimport) and tracebacks still
   show each line, read from the sources in the zip. Packages with compiled extensions or data
   files stay on disk, and so does minds (alembic reads the migrations from its directory). The
   zip is reproducible: entries in sorted order, all dated ``SOURCE_DATE_EPOCH`` (1980-01-01
   when unset: the time does not matter, the byte code records none), compressed at level 9.
3. Byte-compile the modules the image's commands import when they start (the controller, its
   handlers, the ledger and its migrations, the CLI) and all of minds. The root filesystem is
   read-only, so Python cannot cache what it compiles there: a module without byte code is
   compiled again at each start. Compiling every installed module would cost far more room than
   these; a module imported later still works, compiled in memory when first used. In the zip,
   ``module.pyc`` goes next to ``module.py``, where zipimport looks for it.

The byte code is reproducible: unchecked-hash invalidation records no source timestamp (the
image is immutable, so the source cannot change under it), and files are written in sorted
order by one process.
"""

from __future__ import annotations

import importlib
import os
import py_compile
import shutil
import sys
import sysconfig
import tempfile
import time
import zipfile
from pathlib import Path

# What the image's commands import before they do their work: the CLI and its commands, the
# controller with its kopf handlers, the ledger (migrations run through alembic), the drivers.
ENTRY_MODULES = (
    "minds.cli.main",
    "minds.cli.controller_cmd",
    "minds.cli.db_cmd",
    "minds.cli.failures",
    "minds.controller.handlers",
    "minds.controller.wiring",
    "minds.adapters.ledger",
    "minds.adapters.log_masking",
    "alembic.command",
    "alembic.runtime.migration",
    "alembic.autogenerate",
    "psycopg",
    "kopf",
    "kubernetes",
    # The kubernetes client loads its API classes when first named: the ones minds names.
    "kubernetes.client.api.apps_v1_api",
    "kubernetes.client.api.authentication_v1_api",
    "kubernetes.client.api.core_v1_api",
    "kubernetes.client.api.custom_objects_api",
)
ZIP_NAME = "pure.zip"
# Pure Python, but kept on disk, where they read files by path: alembic reads minds'
# migrations from their directory (and its own templates from its), certifi hands its CA file's
# path to OpenSSL.
ON_DISK = frozenset({"minds", "alembic", "certifi"})
COMPILED = (".so", ".pyd")
PRUNED_SUFFIXES = (".pyi", ".c", ".h", ".pyx", ".pxd")
PRUNED_DIRS = ("tests",)
INVALIDATION = py_compile.PycInvalidationMode.UNCHECKED_HASH


def prune(site: Path) -> None:
    for path in sorted(site.rglob("*"), reverse=True):
        if path.is_dir() and path.name in PRUNED_DIRS and (path / "__init__.py").exists():
            shutil.rmtree(path)
    for path in sorted(site.rglob("*")):
        if path.is_file() and path.suffix in PRUNED_SUFFIXES and ".dist-info" not in str(path):
            path.unlink()
    # The kubernetes client ships its unit tests next to the modules they test.
    kubernetes = site / "kubernetes"
    for path in sorted(kubernetes.rglob("*_test.py")) if kubernetes.is_dir() else ():
        path.unlink()
    # Stub-only packages (jsonpatch-stubs) are left empty.
    for path in sorted(site.rglob("*"), reverse=True):
        if path.is_dir() and not any(path.iterdir()):
            path.rmdir()


def pure_packages(site: Path) -> list[Path]:
    """The top-level packages and modules of site-packages without compiled extensions."""
    found = []
    for path in sorted(site.iterdir()):
        if path.name in ON_DISK:
            continue
        if (path.is_file() and path.suffix == ".py") or (
            (path / "__init__.py").is_file()
            and not any(p.suffix in COMPILED for p in path.rglob("*"))
        ):
            found.append(path)
    return found


def imported_sources() -> set[Path]:
    for name in ENTRY_MODULES:
        importlib.import_module(name)
    return {
        Path(module.__file__)
        for module in list(sys.modules.values())
        if getattr(module, "__file__", None) and str(module.__file__).endswith(".py")
    }


def _entry(name: str, stamp: tuple[int, ...]) -> zipfile.ZipInfo:
    info = zipfile.ZipInfo(name, date_time=stamp)  # type: ignore[arg-type]
    info.compress_type = zipfile.ZIP_DEFLATED
    info.external_attr = 0o644 << 16
    return info


def write_zip(site: Path, packages: list[Path], compiled: set[Path]) -> Path:
    epoch = max(int(os.environ.get("SOURCE_DATE_EPOCH", "0")), 315532800)  # 1980-01-01
    stamp = time.gmtime(epoch)[:6]
    archive = site / ZIP_NAME
    files = sorted(
        f for p in packages for f in ([p] if p.is_file() else p.rglob("*")) if f.is_file()
    )
    with (
        tempfile.TemporaryDirectory() as tmp,
        zipfile.ZipFile(archive, "w", compresslevel=9) as out,
    ):
        for path in files:
            name = path.relative_to(site).as_posix()
            out.writestr(_entry(name, stamp), path.read_bytes())
            if path in compiled:
                cfile = Path(tmp) / "module.pyc"
                # The code's file name is the module's __file__ in the zip, where tracebacks
                # and linecache find its source.
                py_compile.compile(
                    str(path), cfile=str(cfile), dfile=f"{archive}/{name}", doraise=True,
                    invalidation_mode=INVALIDATION,
                )  # fmt: skip
                out.writestr(_entry(name + "c", stamp), cfile.read_bytes())
    for package in packages:
        package.unlink() if package.is_file() else shutil.rmtree(package)
    (site / "pure.pth").write_text(f"{ZIP_NAME}\n")
    return archive


def main() -> None:
    site = Path(sysconfig.get_path("purelib"))
    prune(site)
    importlib.invalidate_caches()
    compiled = {p for p in imported_sources() if p.is_relative_to(site)}
    compiled |= set((site / "minds").rglob("*.py"))
    packages = pure_packages(site)
    zipped = {f for p in packages for f in ([p] if p.is_file() else p.rglob("*.py"))}
    write_zip(site, packages, compiled & zipped)
    for path in sorted(compiled - zipped):
        py_compile.compile(str(path), doraise=True, invalidation_mode=INVALIDATION)


if __name__ == "__main__":
    main()

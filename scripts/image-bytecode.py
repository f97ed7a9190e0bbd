"""Byte-compile the image's virtualenv: all of minds, and every module its commands import.

Run by the Dockerfile with the virtualenv's Python, after the install:

    /opt/minds/bin/python scripts/image-bytecode.py

The image's root filesystem is read-only, so Python cannot cache what it compiles there: a
module without a .pyc is compiled again at each start. Compiling every installed module would
double the virtualenv (the kubernetes client alone is 33 MB of source); the modules the
commands import when they start (the controller, its handlers, the ledger and its migrations,
the CLI) are the ones that cost start-up time, so those are compiled, and a module imported
later still works, compiled in memory when first used.

The .pyc files are reproducible: unchecked-hash invalidation records no source timestamp (the
image is immutable, so the source cannot change under them), and files are written in sorted
order by one process.
"""

from __future__ import annotations

import importlib
import py_compile
import sys
import sysconfig
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


def modules_to_compile(site: Path) -> list[Path]:
    for name in ENTRY_MODULES:
        importlib.import_module(name)
    imported = {
        Path(module.__file__)
        for module in list(sys.modules.values())
        if getattr(module, "__file__", None) and str(module.__file__).endswith(".py")
    }
    package = site / "minds"
    return sorted({p for p in imported if p.is_relative_to(site)} | set(package.rglob("*.py")))


def main() -> None:
    site = Path(sysconfig.get_path("purelib"))
    for path in modules_to_compile(site):
        py_compile.compile(
            str(path),
            doraise=True,
            invalidation_mode=py_compile.PycInvalidationMode.UNCHECKED_HASH,
        )


if __name__ == "__main__":
    main()

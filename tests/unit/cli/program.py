"""The ``minds`` program as a shell runs it, and the kubeconfig files its tests hand it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import yaml

#: Where this environment installed ``minds`` and ``kubectl-minds``.
BIN = Path(sys.executable).parent
#: What tells a program where its cluster is: a test sets what it means and nothing else.
CLUSTER_ENV = ("KUBECONFIG", "KUBERNETES_SERVICE_HOST", "KUBERNETES_SERVICE_PORT")


def minds(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """``minds ARGS`` with ``env`` as the only say on where the cluster is (PYTHONPATH, when
    the tests run from a checkout, is passed on: this checkout's code answers)."""
    base = {k: v for k, v in os.environ.items() if k not in CLUSTER_ENV}
    return subprocess.run(
        [str(BIN / "minds"), *args],
        env={**base, "COLUMNS": "200", **(env or {})},
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def write_kubeconfig(path: Path, server: str) -> Path:
    """A kubeconfig with one context, ``x``, for a token user at ``server``."""
    path.write_text(
        yaml.safe_dump(
            {
                "apiVersion": "v1",
                "kind": "Config",
                "clusters": [{"name": "c", "cluster": {"server": server}}],
                "users": [{"name": "u", "user": {"token": "t"}}],
                "contexts": [{"name": "x", "context": {"cluster": "c", "user": "u"}}],
                "current-context": "x",
            }
        )
    )
    return path


def imported_by(*argv: str) -> tuple[str, set[str]]:
    """What ``minds ARGV`` prints, and every module it imported, in a fresh interpreter."""
    probe = (
        "import json, sys\n"
        f"sys.argv = ['minds', *{list(argv)!r}]\n"
        "from minds.cli import main\n"
        "try:\n    main.main()\nexcept SystemExit:\n    pass\n"
        "print(json.dumps(sorted(sys.modules)))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True
    ).stdout
    printed, _, modules = out.rstrip("\n").rpartition("\n")
    return printed, set(json.loads(modules))

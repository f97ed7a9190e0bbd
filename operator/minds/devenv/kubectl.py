"""Run the real kubectl: the developer tooling drives clusters the way a person would."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path
from typing import Any


class KubectlError(RuntimeError):
    """kubectl failed; the message carries its stderr."""


def kubectl(
    kubeconfig: Path | str,
    *args: str,
    context: str | None = None,
    input_: str | None = None,
    check: bool = True,
    timeout: float = 120.0,
) -> subprocess.CompletedProcess[str]:
    exe = shutil.which("kubectl")
    if exe is None:
        raise KubectlError("kubectl is not on PATH: install kubectl 1.30 or newer")
    cmd = [exe, "--kubeconfig", str(kubeconfig)]
    if context:
        cmd += ["--context", context]
    cmd += list(args)
    proc = subprocess.run(
        cmd,
        input=input_,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
        # kubectl runs for a moment and exits: its garbage collector only costs CPU (a quarter
        # of a `kubectl get`'s 60 ms, measured), and the test suites run it thousands of
        # times. A GOGC the caller set is kept.
        env={"GOGC": "off", **os.environ},
    )
    if check and proc.returncode != 0:
        raise KubectlError(
            f"kubectl {' '.join(args)}: {proc.stderr.strip() or proc.stdout.strip()}"
        )
    return proc


def kubectl_json(kubeconfig: Path | str, *args: str, context: str | None = None) -> Any:
    return json.loads(kubectl(kubeconfig, *args, "-o", "json", context=context).stdout)

"""Background processes with pid files: start, wait for a sign of life, stop cleanly."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import time
from collections.abc import Callable, Mapping
from pathlib import Path


class ProcessError(RuntimeError):
    pass


def pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    # A zombie child still answers kill(0); reap it if it is ours.
    try:
        done, _ = os.waitpid(pid, os.WNOHANG)
    except ChildProcessError:
        return True
    return done == 0


def read_pid(pid_file: Path) -> int | None:
    try:
        pid = int(pid_file.read_text().strip())
    except (FileNotFoundError, ValueError):
        return None
    return pid if pid_alive(pid) else None


def start(
    argv: list[str],
    *,
    pid_file: Path,
    log_path: Path,
    env: Mapping[str, str] | None = None,
    cwd: Path | None = None,
) -> subprocess.Popen[bytes]:
    """Start ``argv`` in its own session (it outlives the caller), output to ``log_path``."""
    log_path.parent.mkdir(parents=True, exist_ok=True)
    with log_path.open("ab") as log:
        proc = subprocess.Popen(
            argv,
            stdout=log,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            env=dict(env) if env is not None else None,
            cwd=cwd,
            start_new_session=True,
        )
    pid_file.write_text(f"{proc.pid}\n")
    return proc


def wait_until(
    condition: Callable[[], bool],
    *,
    timeout: float,
    what: str,
    alive: Callable[[], bool] = lambda: True,
    interval: float = 0.2,
) -> None:
    """Poll ``condition`` until it holds; fail early when the process we wait on died."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return
        if not alive():
            raise ProcessError(f"{what}: the process exited")
        time.sleep(interval)
    raise ProcessError(f"{what}: not within {timeout:.0f}s")


def stop(pid_file: Path, *, timeout: float = 20.0, sig: int = signal.SIGTERM) -> bool:
    """Signal the process (and its group), wait for it to exit, SIGKILL as a last resort."""
    pid = read_pid(pid_file)
    if pid is None:
        pid_file.unlink(missing_ok=True)
        return False
    try:
        os.killpg(pid, sig)
    except ProcessLookupError:
        pass
    except PermissionError:
        os.kill(pid, sig)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and pid_alive(pid):
        time.sleep(0.1)
    if pid_alive(pid):
        with contextlib.suppress(ProcessLookupError):
            os.killpg(pid, signal.SIGKILL)
    pid_file.unlink(missing_ok=True)
    return True

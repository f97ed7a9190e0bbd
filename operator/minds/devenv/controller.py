"""Start the controller as a separate process, the way it runs in a cluster."""

from __future__ import annotations

import base64
import os
import secrets
import sys
import urllib.error
import urllib.request
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from minds.adapters.kube.checkpoints import CHECKPOINT_CONFIGMAP_ENV, NAMESPACE_ENV
from minds.adapters.ledger.keys import KEYS_DIR_ENV
from minds.adapters.metrics.serve import BIND_ENV as METRICS_BIND_ENV
from minds.devenv import process
from minds.devenv.ports import free_port

#: The chart's livenessProbe.timeoutSeconds.
LIVENESS_TIMEOUT_SECONDS = 5
#: The local stack's ledger key and the checkpoint ConfigMap the chart renders for it.
LEDGER_KEY_ID = "k1"
CHECKPOINT_CONFIGMAP = "minds-ledger-checkpoint"


def ledger_keys(directory: Path) -> Path:
    """A directory holding one sealing key (``k1``, 32 random bytes as base64), made once and
    kept: the local stack's stand-in for the chart's mounted Secret (docs/ledger.md)."""
    directory.mkdir(parents=True, exist_ok=True, mode=0o700)
    key = directory / LEDGER_KEY_ID
    if not key.exists():
        key.touch(mode=0o600)
        key.write_bytes(base64.b64encode(secrets.token_bytes(32)) + b"\n")
    return directory


def ledger_env(keys: Path, namespace: str) -> dict[str, str]:
    """What a controller of the local stack is told of its key and its checkpoint."""
    return {
        KEYS_DIR_ENV: str(ledger_keys(keys)),
        NAMESPACE_ENV: namespace,
        CHECKPOINT_CONFIGMAP_ENV: CHECKPOINT_CONFIGMAP,
    }


@dataclass(frozen=True)
class ControllerHandle:
    pid: int
    pid_file: Path
    log_path: Path
    liveness_url: str
    #: HOST:PORT of ``/metrics``: a free loopback port of its own, so that controllers
    #: started side by side (tests, other checkouts) never fight over the default.
    metrics_address: str

    @property
    def metrics_url(self) -> str:
        return f"http://{self.metrics_address}/metrics"

    def env(self) -> dict[str, str]:
        """What this controller's process needs in its environment besides the defaults."""
        return {METRICS_BIND_ENV: self.metrics_address}

    def alive(self) -> bool:
        """Whether the controller behind this handle runs: the process its pid file names now
        (a restart under the same pid file, as tests do, is the same controller), else the
        process it was started as."""
        current = process.read_pid(self.pid_file)
        return process.pid_alive(current if current is not None else self.pid)

    def log(self) -> str:
        try:
            return self.log_path.read_text(errors="replace")
        except FileNotFoundError:
            return ""

    def healthy(self) -> bool:
        try:
            # Our own loopback URL, built in start_controller: never user input. The chart's
            # livenessProbe allows 5 s per answer (timeoutSeconds): so does this check. A
            # shorter one failed a busy machine's controller the kubelet would keep.
            with urllib.request.urlopen(  # noqa: S310
                self.liveness_url, timeout=LIVENESS_TIMEOUT_SECONDS
            ) as resp:
                return bool(resp.status == 200)
        except (urllib.error.URLError, OSError):
            return False

    def wait_ready(self, timeout: float = 60.0) -> None:
        """Wait until kopf serves its liveness probe: start-up (schema check, wiring) is done."""
        try:
            process.wait_until(
                self.healthy, timeout=timeout, what="controller start", alive=self.alive
            )
        except process.ProcessError as exc:
            raise process.ProcessError(
                f"{exc}\n--- controller log ---\n{self.log()[-4000:]}"
            ) from exc


def controller_argv(
    liveness_url: str, *, via_kopf: bool = False, args: Sequence[str] = ()
) -> list[str]:
    if via_kopf:
        # The same handlers under kopf's own runner, as `kopf run -m minds.controller`.
        return [
            sys.executable,
            "-m",
            "kopf",
            "run",
            "-m",
            "minds.controller",
            "--all-namespaces",
            "--standalone",
            f"--liveness={liveness_url}",
        ]
    run = [sys.executable, "-m", "minds.cli.main", "controller", "run"]
    return [*run, "--liveness", liveness_url, *args]


def start_controller(
    *,
    kubeconfig: Path,
    database_url: str,
    state_dir: Path,
    name: str = "controller",
    extra_env: dict[str, str] | None = None,
    via_kopf: bool = False,
    args: Sequence[str] = (),
) -> ControllerHandle:
    """Start ``minds controller run`` (``args`` added to its command line) in the background."""
    metrics_address = f"127.0.0.1:{free_port()}"
    env = {
        **os.environ,
        "KUBECONFIG": str(kubeconfig),
        "MINDS_DATABASE_URL": database_url,
        "PYTHONUNBUFFERED": "1",
        METRICS_BIND_ENV: metrics_address,
        **(extra_env or {}),
    }
    pid_file = state_dir / f"{name}.pid"
    log_path = state_dir / f"{name}.log"
    liveness_url = f"http://127.0.0.1:{free_port()}/healthz"
    proc = process.start(
        controller_argv(liveness_url, via_kopf=via_kopf, args=args),
        pid_file=pid_file,
        log_path=log_path,
        env=env,
    )
    return ControllerHandle(
        pid=proc.pid,
        pid_file=pid_file,
        log_path=log_path,
        liveness_url=liveness_url,
        metrics_address=env[METRICS_BIND_ENV],
    )


def stop_controller(handle: ControllerHandle, *, timeout: float = 20.0) -> bool:
    return process.stop(handle.pid_file, timeout=timeout)

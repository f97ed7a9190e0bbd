"""Build, start and stop the local control plane (``tests/cluster``, the ``devcluster`` binary).

No container engine is available where minds is built and tested, so ``minds dev up`` and the
e2e fixtures run a real kube-apiserver (with an embedded etcd) compiled from the Kubernetes Go
modules. This module is the one place that knows how to launch it, so the CLI and pytest agree
on the state directory layout, the readiness handshake and how to stop it.

The binary's contract (see ``tests/cluster/main.go``)::

    devcluster --dir DIR [--port N] [--stop-on-stdin-close] [--world [--nodes N] [--kwok PATH]]
               [-- kube-apiserver flags...]

With ``--world`` it also runs kube-controller-manager, kube-scheduler and kwok (simulated
nodes), so Deployments roll out and Pods become Ready or break (docs/world.md); without it
nothing reconciles and objects keep the status a test writes. It prints exactly one line to
stdout when ``/readyz`` is ok (and the world, if any, is up),
``READY kubeconfig=<abs path> server=https://127.0.0.1:<port>``, logs to stderr, and stops
cleanly on SIGTERM. ``DIR/kubeconfig`` has the contexts ``admin`` (current), ``approver``,
``viewer`` and ``intruder``.
"""

from __future__ import annotations

import contextlib
import errno
import os
import re
import selectors
import signal
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

__all__ = [
    "LOG_FILE",
    "PID_FILE",
    "ClusterHandle",
    "DevClusterError",
    "build_devcluster",
    "cluster_running",
    "start_cluster",
    "stop_cluster",
]

PID_FILE = "devcluster.pid"
LOG_FILE = "devcluster.log"
KUBECONFIG_FILE = "kubeconfig"

_GO_MISSING = (
    "The Go toolchain (1.26 or newer) is needed to build the local control plane in "
    "tests/cluster. Install it from https://go.dev/doc/install and put its bin directory "
    "(for example /usr/local/go/bin) on PATH, or set KUBECONFIG to an existing cluster."
)
_READY = re.compile(r"^READY kubeconfig=(?P<kubeconfig>.+) server=(?P<server>\S+)$")
_SERVER = re.compile(r"^\s*server:\s*(\S+)\s*$", re.MULTILINE)
_LOG_TAIL_LINES = 40

# Children started by this process, by pid. Keeping the Popen objects lets stop_cluster reap
# them (a dead child that is not waited for stays a zombie and still "exists" for kill(pid, 0)),
# and keeps the write end of a non-detached child's stdin open for as long as we live.
_children: dict[int, subprocess.Popen[bytes]] = {}


class DevClusterError(RuntimeError):
    """The local control plane could not be built, started or stopped."""


@dataclass(frozen=True)
class ClusterHandle:
    """A running devcluster: what a client needs to reach it and what stop_cluster needs."""

    kubeconfig: Path
    server: str
    pid: int
    state_dir: Path


def default_binary_path(repo_root: Path) -> Path:
    """Where build.sh puts the binary by default; ``.cache/`` is ignored by git."""
    return repo_root / ".cache" / "bin" / "devcluster"


def build_devcluster(repo_root: Path) -> Path:
    """Build (or find up to date) the devcluster binary and return its path.

    build.sh does the staleness check itself, so calling this on every ``minds dev up`` or
    test session costs almost nothing once the binary exists. Its output is not captured: a
    first build takes minutes and the user should see that something is happening.
    """
    script = repo_root / "tests" / "cluster" / "build.sh"
    if not script.is_file():
        raise DevClusterError(f"{script} not found: is {repo_root} the minds-operator repository?")
    binary = default_binary_path(repo_root)
    try:
        result = subprocess.run(["bash", str(script), str(binary)], cwd=repo_root, check=False)
    except FileNotFoundError as exc:
        raise DevClusterError(f"cannot run {script}: bash is required") from exc
    if result.returncode == 2:
        raise DevClusterError(_GO_MISSING)
    if result.returncode != 0:
        raise DevClusterError(
            f"building devcluster failed (exit status {result.returncode}); "
            f"run {script} to see the full output"
        )
    if not os.access(binary, os.X_OK):
        raise DevClusterError(f"{script} succeeded but {binary} is not an executable file")
    return binary


def start_cluster(
    binary: Path,
    state_dir: Path,
    *,
    timeout: float = 180.0,
    log_path: Path | None = None,
    detach: bool = False,
    world: bool = False,
    real_node: bool = False,
) -> ClusterHandle:
    """Start devcluster on ``state_dir`` and return once its API server is ready.

    With ``detach=False`` (tests) the cluster is tied to this process: it shares our process
    group, so Ctrl-C stops both, and it stops by itself when we exit, even by SIGKILL, because
    it watches the stdin pipe we hold. With ``detach=True`` (``minds dev up``) it runs in a
    session of its own and outlives us; ``stop_cluster`` ends it later via the pid file.
    ``world=True`` runs the controllers, scheduler and simulated nodes too; ``real_node=True``
    (with ``world``, as root) also one real node whose Pods run (docs/world.md).

    Readiness is the READY line on stdout, not a guess: we read stdout until that line, the
    process dies or the deadline passes. On failure the child is stopped and the error carries
    the tail of its log.
    """
    state_dir = state_dir.resolve()
    state_dir.mkdir(parents=True, exist_ok=True)
    running = cluster_running(state_dir)
    if running is not None:
        raise DevClusterError(
            f"a devcluster is already running on {state_dir} (pid {running.pid}); "
            "stop it first or use a different state directory"
        )
    if not os.access(binary, os.X_OK):
        raise DevClusterError(f"devcluster binary {binary} is missing or not executable")

    log_path = (log_path or state_dir / LOG_FILE).resolve()
    log_path.parent.mkdir(parents=True, exist_ok=True)
    args = [str(binary), "--dir", str(state_dir)]
    if not detach:
        args.append("--stop-on-stdin-close")
    if world:
        args.append("--world")
    if real_node:
        args.append("--real-node")

    with log_path.open("wb") as log:
        try:
            proc = subprocess.Popen(
                args,
                stdin=subprocess.DEVNULL if detach else subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=log,
                start_new_session=detach,
                close_fds=True,
            )
        except OSError as exc:
            raise DevClusterError(f"cannot start {binary}: {exc}") from exc
    _children[proc.pid] = proc
    _write_pid_file(state_dir, proc.pid)

    try:
        kubeconfig, server = _wait_for_ready(proc, timeout)
    except DevClusterError as exc:
        _terminate(proc)
        _remove_pid_file(state_dir, proc.pid)
        raise DevClusterError(
            f"{exc}\n--- last lines of {log_path} ---\n{_tail(log_path)}"
        ) from None
    return ClusterHandle(kubeconfig=kubeconfig, server=server, pid=proc.pid, state_dir=state_dir)


def stop_cluster(state_dir: Path, timeout: float = 30.0) -> bool:
    """Stop the devcluster recorded in ``state_dir``; False if none was running.

    SIGTERM lets the API server and etcd shut down cleanly, so the etcd data can be reused by
    the next start; SIGKILL is only the last resort after ``timeout`` seconds.
    """
    state_dir = state_dir.resolve()
    pid = _read_pid_file(state_dir)
    if pid is None or not _is_devcluster(pid, state_dir):
        _remove_pid_file(state_dir, pid)
        return False
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGTERM)
    if not _wait_for_exit(pid, timeout):
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
        if not _wait_for_exit(pid, 10.0):
            raise DevClusterError(f"devcluster pid {pid} did not exit even after SIGKILL")
    _forget_child(pid)
    _remove_pid_file(state_dir, pid)
    return True


def cluster_running(state_dir: Path) -> ClusterHandle | None:
    """Return the devcluster running on ``state_dir``, or None.

    A pid file alone proves nothing (the process may have died, its pid been reused), so the
    process must be alive and, where /proc exists, be a devcluster on this very directory.
    """
    state_dir = state_dir.resolve()
    pid = _read_pid_file(state_dir)
    if pid is None or not _is_devcluster(pid, state_dir):
        return None
    kubeconfig = state_dir / KUBECONFIG_FILE
    try:
        match = _SERVER.search(kubeconfig.read_text(encoding="utf-8"))
    except OSError:
        match = None
    if match is None:
        return None
    return ClusterHandle(kubeconfig=kubeconfig, server=match.group(1), pid=pid, state_dir=state_dir)


def _wait_for_ready(proc: subprocess.Popen[bytes], timeout: float) -> tuple[Path, str]:
    """Read the child's stdout until the READY line; raise if it dies or the deadline passes."""
    stdout = proc.stdout
    if stdout is None:  # only if a caller changed how Popen is called
        raise DevClusterError("devcluster was started without a stdout pipe")
    deadline = time.monotonic() + timeout
    buffer = b""
    try:
        with selectors.DefaultSelector() as selector:
            selector.register(stdout, selectors.EVENT_READ)
            while True:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    raise DevClusterError(f"devcluster was not ready within {timeout:g}s")
                if not selector.select(remaining):
                    continue
                chunk = os.read(stdout.fileno(), 4096)
                if not chunk:
                    code = _exit_code_soon(proc)
                    raise DevClusterError(
                        "devcluster exited before it was ready"
                        + (f" (exit status {code})" if code is not None else "")
                    )
                buffer += chunk
                *lines, buffer = buffer.split(b"\n")
                for raw in lines:
                    match = _READY.match(raw.decode("utf-8", "replace").rstrip("\r"))
                    if match:
                        return Path(match.group("kubeconfig")), match.group("server")
    finally:
        stdout.close()


def _exit_code_soon(proc: subprocess.Popen[bytes]) -> int | None:
    """Return the exit status of a child that just closed stdout, if it exits soon."""
    try:
        return proc.wait(timeout=5.0)
    except subprocess.TimeoutExpired:
        return None


def _terminate(proc: subprocess.Popen[bytes]) -> None:
    """Stop a child that failed to become ready: SIGTERM, then SIGKILL."""
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(timeout=20.0)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
    _forget_child(proc.pid)


def _forget_child(pid: int) -> None:
    """Drop our Popen for pid, closing the stdin pipe that ties a non-detached child to us."""
    proc = _children.pop(pid, None)
    if proc is not None and proc.stdin is not None:
        with contextlib.suppress(OSError):
            proc.stdin.close()


def _wait_for_exit(pid: int, timeout: float) -> bool:
    """Poll until pid has exited (reaping it if it is our child); False on timeout."""
    deadline = time.monotonic() + timeout
    delay = 0.02
    while True:
        if not _alive(pid):
            return True
        if time.monotonic() >= deadline:
            return False
        time.sleep(delay)
        delay = min(delay * 2, 0.25)


def _alive(pid: int) -> bool:
    """Whether pid is a live process; a child of ours that has exited is reaped, not alive."""
    proc = _children.get(pid)
    if proc is not None:
        return proc.poll() is None
    try:
        waited, _ = os.waitpid(pid, os.WNOHANG)
    except ChildProcessError:
        pass  # not our child: its parent reaps it, so kill(pid, 0) below is accurate
    else:
        if waited == pid:
            return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # it exists, owned by someone else
    return True


def _is_devcluster(pid: int, state_dir: Path) -> bool:
    """Whether pid is alive and, where /proc tells us, a devcluster serving state_dir."""
    if not _alive(pid):
        return False
    if not Path("/proc/self").exists():
        return True  # no /proc (macOS): a live pid named in the pid file is all we can check
    try:
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
    except FileNotFoundError:
        return False  # exited since _alive looked
    except OSError:
        return True
    args = [arg.decode("utf-8", "replace") for arg in cmdline]
    return bool(args) and Path(args[0]).name == "devcluster" and str(state_dir) in args


def _read_pid_file(state_dir: Path) -> int | None:
    try:
        text = (state_dir / PID_FILE).read_text(encoding="ascii").strip()
    except (OSError, UnicodeDecodeError):
        return None
    return int(text) if text.isdigit() and int(text) > 0 else None


def _write_pid_file(state_dir: Path, pid: int) -> None:
    """Write the pid file atomically, so a concurrent reader never sees it half written."""
    path = state_dir / PID_FILE
    tmp = path.with_name(f".{PID_FILE}.{os.getpid()}")
    tmp.write_text(f"{pid}\n", encoding="ascii")
    tmp.replace(path)


def _remove_pid_file(state_dir: Path, pid: int | None) -> None:
    """Remove the pid file if it still names pid (or is unreadable), never a newer one."""
    current = _read_pid_file(state_dir)
    if current is not None and pid is not None and current != pid:
        return
    try:
        (state_dir / PID_FILE).unlink()
    except OSError as exc:
        if exc.errno != errno.ENOENT:
            raise


def _tail(path: Path, lines: int = _LOG_TAIL_LINES) -> str:
    """Return the last lines of a log file, for error messages; never raises."""
    try:
        with path.open("rb") as handle:
            handle.seek(0, os.SEEK_END)
            handle.seek(max(0, handle.tell() - 64 * 1024))
            data = handle.read()
    except OSError as exc:
        return f"(cannot read log: {exc})"
    text = data.decode("utf-8", "replace").splitlines()[-lines:]
    return "\n".join(text) if text else "(log is empty)"

"""The local stack behind ``minds dev up`` / ``make demo`` and the test fixtures.

One launcher for both, so the demo a newcomer runs and the environment the tests prove are the
same: a control plane (ours, or the cluster ``KUBECONFIG`` already points at), a Postgres
(embedded, or ``MINDS_DATABASE_URL``), the CRDs and RBAC, and optionally the controller running
under its ServiceAccount.
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
import tempfile
from dataclasses import asdict, dataclass
from pathlib import Path

from minds.adapters.ledger import upgrade
from minds.adapters.ledger.keys import KEYS_DIR_ENV
from minds.devenv import cluster as devcluster
from minds.devenv import postgres
from minds.devenv.controller import ControllerHandle, ledger_env, start_controller
from minds.devenv.install import (
    CONTROLLER_NAMESPACE,
    bind_people,
    install_chart,
    repo_root,
    service_account_kubeconfig,
)
from minds.devenv.kubectl import kubectl
from minds.devenv.process import read_pid, stop

STATE_FILE = "stack.json"
DEMO_NAMESPACE = "default"


@dataclass(frozen=True)
class Stack:
    state_dir: Path
    kubeconfig: Path
    controller_kubeconfig: Path
    database_url: str
    owner_database_url: str
    own_cluster: bool
    own_postgres: bool
    # What the reading commands (`why`, `timeline`, `db verify`) connect as: a member of the
    # reader role; the application's URL when no reader was given.
    reader_database_url: str = ""

    def env_lines(self, tools: Path | None = None) -> str:
        """What ``source .dev/env`` sets: where the cluster and the ledger are, and ``tools``
        (default: this interpreter's bin, where ``minds`` and ``kubectl-minds`` are installed)
        first on PATH, so ``kubectl minds`` finds its plugin in any shell."""
        bin_dir = tools or Path(sys.executable).parent
        return (
            f"export KUBECONFIG={self.kubeconfig}\n"
            f"export MINDS_DATABASE_URL={self.database_url}\n"
            f"export MINDS_DATABASE_OWNER_URL={self.owner_database_url}\n"
            f"export MINDS_DATABASE_READER_URL={self.reader_database_url or self.database_url}\n"
            f"export {KEYS_DIR_ENV}={self.state_dir / 'ledger-keys'}\n"
            f'export PATH="{bin_dir}:$PATH"\n'
        )


def postgres_dir(state_dir: Path) -> Path:
    """Where the embedded Postgres keeps its data. As root it runs as an unprivileged user,
    which may not traverse a checkout under a private home directory: then it lives under
    the system's temporary directory instead, in a folder named after the state directory."""
    if os.geteuid() != 0:
        return state_dir / "postgres"
    digest = hashlib.sha256(str(state_dir.resolve()).encode()).hexdigest()[:12]
    return Path(tempfile.gettempdir()) / f"minds-dev-{digest}" / "postgres"


def default_state_dir() -> Path:
    return Path(os.environ.get("MINDS_DEV_DIR", Path.cwd() / ".dev")).resolve()


def _devcluster_binary(root: Path) -> Path:
    env = os.environ.get("MINDS_DEVCLUSTER")
    return Path(env) if env else devcluster.build_devcluster(root)


def _reachable(kubeconfig: Path) -> bool:
    return kubectl(kubeconfig, "get", "--raw", "/readyz", check=False, timeout=15).returncode == 0


def up(
    state_dir: Path,
    *,
    kubeconfig: Path | None = None,
    database_url: str | None = None,
    owner_database_url: str | None = None,
    reader_database_url: str | None = None,
    with_controller: bool = True,
) -> Stack:
    """Start (or reuse) every piece; safe to call again while it is already up.

    `database_url` is the controller's (a member of the application role), and
    `owner_database_url` the one migrations run as (default: `database_url`, which then must
    own the ledger, and the controller will refuse it), and `reader_database_url` the one the
    reading commands use (default: `database_url`)."""
    state_dir.mkdir(parents=True, exist_ok=True)
    root = repo_root()

    own_cluster = kubeconfig is None
    if kubeconfig is None:
        cluster_dir = state_dir / "cluster"
        handle = devcluster.cluster_running(cluster_dir)
        if handle is None:
            handle = devcluster.start_cluster(
                _devcluster_binary(root),
                cluster_dir,
                detach=True,
                log_path=state_dir / "devcluster.log",
                world=True,
            )
        kubeconfig = handle.kubeconfig
    elif not _reachable(kubeconfig):
        raise RuntimeError(f"the cluster in {kubeconfig} does not answer /readyz")

    own_postgres = database_url is None
    if database_url is None:
        pg_dir = postgres_dir(state_dir)
        pg = postgres.start_postgres(pg_dir, durable=True)  # or the one already running
        database_url, owner_database_url = pg.app_url, pg.owner_url
        reader_database_url = pg.reader_url
    owner_database_url = owner_database_url or database_url
    reader_database_url = reader_database_url or database_url
    upgrade(owner_database_url)

    # The demo's minds live in the default namespace: the chart's managedNamespaces.
    install_chart(kubeconfig, root, managed=[DEMO_NAMESPACE])
    bind_people(kubeconfig)
    controller_kubeconfig = service_account_kubeconfig(
        kubeconfig, state_dir / "controller.kubeconfig"
    )
    stack = Stack(
        state_dir=state_dir,
        kubeconfig=kubeconfig,
        controller_kubeconfig=controller_kubeconfig,
        database_url=database_url,
        owner_database_url=owner_database_url,
        own_cluster=own_cluster,
        own_postgres=own_postgres,
        reader_database_url=reader_database_url,
    )
    (state_dir / STATE_FILE).write_text(
        json.dumps({k: str(v) for k, v in asdict(stack).items()}, indent=2)
    )
    (state_dir / "env").write_text(stack.env_lines())
    if with_controller and read_pid(state_dir / "controller.pid") is None:
        start_controller(
            kubeconfig=controller_kubeconfig,
            database_url=database_url,
            state_dir=state_dir,
            extra_env=ledger_env(state_dir / "ledger-keys", CONTROLLER_NAMESPACE),
        )
    return stack


def controller_pid(state_dir: Path) -> int | None:
    return read_pid(state_dir / "controller.pid")


def down(state_dir: Path) -> list[str]:
    """Stop what ``up`` started, controller first; returns what was stopped."""
    stopped: list[str] = []
    if stop(state_dir / "controller.pid"):
        stopped.append("controller")
    if postgres.postgres_running(postgres_dir(state_dir)):
        postgres.stop_postgres(postgres_dir(state_dir))
        stopped.append("postgres")
    if devcluster.stop_cluster(state_dir / "cluster"):
        stopped.append("control plane")
    (state_dir / STATE_FILE).unlink(missing_ok=True)
    return stopped


__all__ = ["ControllerHandle", "Stack", "default_state_dir", "down", "up"]

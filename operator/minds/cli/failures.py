"""How every command answers a failure it cannot help: one line on stderr and an exit code.

A person who names a Mind that is not there, or asks for what RBAC or admission refuses, gets
one sentence and exit 1; a person whose API server or ledger cannot be reached gets one
sentence and exit 2. Never a traceback, never a raw API response. The commands raise; the
entry point (``minds.cli.main.main``) answers through the table below, so a new command is
covered without a line of its own.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import sqlalchemy.exc
import typer
import urllib3.exceptions
from kubernetes.client.exceptions import ApiException
from kubernetes.config import ConfigException

from minds.adapters.kube.client import server_message
from minds.adapters.kube.people import DecisionRefused
from minds.cli.version_cmd import ControllerVersionError
from minds.domain.errors import AlreadyExists, Conflict, NotFound, Refused

#: Exit codes, part of the interface: scripts tell "fix the request" from "try again later".
MISSING_OR_REFUSED = 1
UNREACHABLE = 2


@dataclass(frozen=True)
class Answer:
    code: int
    line: str


def _api(exc: BaseException) -> Answer:
    assert isinstance(exc, ApiException)
    status = exc.status or 0
    if status == 404:
        return Answer(MISSING_OR_REFUSED, f"not found: {server_message(exc)}")
    if status >= 500 or status == 0:
        return Answer(UNREACHABLE, f"the API server failed: {server_message(exc)}")
    return Answer(MISSING_OR_REFUSED, f"refused: {server_message(exc)}")


def _said(prefix: str, code: int, suffix: str = "") -> Callable[[BaseException], Answer]:
    def answer(exc: BaseException) -> Answer:
        # The first line only: a chained or multi-line message is for logs, not for a person.
        detail = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
        return Answer(code, f"{prefix}{detail}{suffix}")

    return answer


#: The first row whose type the failure is an instance of answers it; subclasses come first.
FAILURES: tuple[tuple[type[BaseException], Callable[[BaseException], Answer]], ...] = (
    (NotFound, _said("", MISSING_OR_REFUSED, " not found")),
    (Refused, _said("refused: ", MISSING_OR_REFUSED)),
    (AlreadyExists, _said("already exists: ", MISSING_OR_REFUSED)),
    (Conflict, _said("changed meanwhile, try again: ", MISSING_OR_REFUSED)),
    (DecisionRefused, _said("refused: ", MISSING_OR_REFUSED)),
    (ControllerVersionError, _said("", MISSING_OR_REFUSED)),
    (ApiException, _api),
    (ConfigException, _said("no cluster to talk to: ", UNREACHABLE)),
    (urllib3.exceptions.HTTPError, lambda exc: Answer(UNREACHABLE, _unreachable(exc))),
    (sqlalchemy.exc.OperationalError, _said("cannot reach the ledger: ", UNREACHABLE)),
    (sqlalchemy.exc.ArgumentError, _said("the ledger URL is not usable: ", UNREACHABLE)),
    (ConnectionError, _said("cannot reach the API server: ", UNREACHABLE)),
)


def _unreachable(exc: BaseException) -> str:
    # urllib3 says which URL and why after many words; the host is what a person checks.
    pool = getattr(exc, "pool", None)
    where = f" at {pool.scheme}://{pool.host}:{pool.port}" if pool is not None else ""
    reason = getattr(exc, "reason", None) or exc
    cause = str(reason).rsplit(": ", 1)[-1].strip() or type(reason).__name__
    return f"cannot reach the API server{where}: {cause}"


def answer(exc: BaseException) -> Answer | None:
    """The line and exit code for a failure, or None when it is not one a person caused or can
    fix (a bug: let its traceback show)."""
    for kind, told in FAILURES:
        if isinstance(exc, kind):
            return told(exc)
    return None


def report(exc: BaseException) -> int:
    """Say the failure's one line on stderr and return the exit code; re-raise what is not in
    the table."""
    told = answer(exc)
    if told is None:
        raise exc
    typer.echo(f"error: {told.line}", err=True)
    return told.code

"""The one table by which every command answers what a person can cause or fix."""

from __future__ import annotations

import json

import pytest
import sqlalchemy.exc
import urllib3
from kubernetes.client.exceptions import ApiException
from kubernetes.config import ConfigException

from minds.adapters.kube.people import DecisionRefused
from minds.cli import failures
from minds.cli.kube import NoKubeconfig
from minds.cli.version_cmd import ControllerVersionError
from minds.domain.errors import NotFound, Refused


def api_error(status: int, message: str) -> ApiException:
    exc = ApiException(status=status, reason="Reason")
    exc.body = json.dumps({"kind": "Status", "message": message})
    return exc


def unreachable() -> urllib3.exceptions.MaxRetryError:
    pool = urllib3.HTTPSConnectionPool("127.0.0.1", 9)
    cause = urllib3.exceptions.NewConnectionError(pool, "Failed to establish: Connection refused")
    return urllib3.exceptions.MaxRetryError(pool, "/apis", cause)


CASES = [
    (NotFound("Mind ns/atlas"), 1, "Mind ns/atlas not found"),
    (Refused("Plan ns/p: forbidden"), 1, "refused: Plan ns/p: forbidden"),
    (DecisionRefused("decidedBy must be you"), 1, "refused: decidedBy must be you"),
    (api_error(404, 'minds "x" not found'), 1, 'not found: minds "x" not found'),
    (api_error(403, "viewer cannot patch"), 1, "refused: viewer cannot patch"),
    (api_error(422, "spec.note: too long"), 1, "refused: spec.note: too long"),
    (api_error(503, "etcd is down"), 2, "the API server failed: etcd is down"),
    (ConfigException("no configuration"), 2, "no cluster to talk to: no configuration"),
    (NoKubeconfig("no kubeconfig: ..."), 2, "no cluster to talk to: no kubeconfig: ..."),
    (ControllerVersionError("no metrics Service"), 1, "no metrics Service"),
    (unreachable(), 2, "cannot reach the API server at https://127.0.0.1:9: Connection refused"),
    (
        sqlalchemy.exc.OperationalError("connect", {}, OSError("refused\nmore")),
        2,
        "cannot reach the ledger: ",
    ),
]


@pytest.mark.parametrize(("exc", "code", "line"), CASES, ids=[type(c[0]).__name__ for c in CASES])
def test_each_failure_has_one_line_and_its_code(exc: Exception, code: int, line: str) -> None:
    told = failures.answer(exc)
    assert told is not None
    assert told.code == code
    assert told.line.startswith(line)
    assert "\n" not in told.line


def test_a_bug_is_not_answered_but_raised() -> None:
    assert failures.answer(KeyError("spec")) is None
    with pytest.raises(KeyError):
        failures.report(KeyError("spec"))


def test_report_says_one_line_on_stderr(capsys: pytest.CaptureFixture[str]) -> None:
    assert failures.report(NotFound("Plan ns/p")) == failures.MISSING_OR_REFUSED
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err == "error: Plan ns/p not found\n"

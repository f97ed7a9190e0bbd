"""The controller started as docs/observability.md says (``--log-format json``) on the real
control plane and ledger: every line it writes is one JSON object with the documented fields,
and with ``--verbose`` kopf's lines name the Mind they are about."""

from __future__ import annotations

import json
import shlex
from typing import Any

import pytest

from tests.e2e.executor_support import assert_no_tracebacks, mind
from tests.fixtures.cluster import Cluster, ControllerFactory
from tests.fixtures.docs import sh_commands
from tests.fixtures.prometheus import REPO
from tests.fixtures.waiting import eventually

DOC = REPO / "docs" / "observability.md"
FIELDS = {"timestamp", "level", "logger", "message", "object", "exception"}


def _lines(log: str) -> list[dict[str, Any]]:
    lines = []
    for text in log.splitlines():
        line = json.loads(text)  # fails the test on any line that is not one JSON object
        assert isinstance(line, dict), text
        lines.append(line)
    return lines


@pytest.mark.usefixtures("alone")
def test_the_documented_command_writes_one_json_object_a_line(
    cluster: Cluster, namespace: str, controller_factory: ControllerFactory
) -> None:
    [command] = sh_commands(DOC, section="Logs")
    argv = shlex.split(command)
    assert argv[:3] == ["minds", "controller", "run"]
    # --verbose, which the doc names beside it: kopf's line for every event it handled.
    controller = controller_factory("json-logs", args=(*argv[3:], "--verbose"))
    mind(cluster, namespace)
    about = {"kind": "Mind", "namespace": namespace, "name": "keeper"}

    def named() -> list[dict[str, Any]]:
        return [line for line in _lines(controller.log()) if line.get("object") == about]

    lines_about = eventually(named, timeout=60, what=f"a line naming Mind {namespace}/keeper")
    assert {line["logger"] for line in lines_about} == {"kopf.objects"}
    every = _lines(controller.log())
    assert len(every) > len(lines_about)  # the controller's own lines too
    for line in every:
        assert {"timestamp", "level", "logger", "message"} <= set(line) <= FIELDS, line
        assert line["timestamp"].endswith("Z")
    assert any(line["logger"].startswith("minds.") for line in every)
    assert_no_tracebacks(controller.log())

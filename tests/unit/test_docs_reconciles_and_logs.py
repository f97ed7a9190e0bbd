"""docs/observability.md on reconciles and logs says what the code does: the table of kinds is
the work queue's dispatch table and kopf's handlers, its queries parse and name exported
metrics, and the JSON line and the refusal it shows are what the controller writes. Its
command is run on a real controller by tests/e2e/test_json_logs.py."""

from __future__ import annotations

import json
import logging
import re
import shlex
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import kopf
from typer.testing import CliRunner

from minds.adapters.log_format import JsonFormatter
from minds.cli.main import app
from minds.controller import work
from minds.controller.handlers import RECONCILES
from minds.controller.plan_ticks import PlanTicks
from minds.domain.metrics.catalogue import CATALOGUE
from tests.fixtures.docs import sections, sh_commands
from tests.fixtures.prometheus import REPO, Promtool

DOC = REPO / "docs" / "observability.md"
_BLOCK = re.compile(r"^```(\w+)\n(.*?)^```", re.MULTILINE | re.DOTALL)
_ROW = re.compile(r"^\| `(\w+)` \| (.+?) \| (.+?) \|$", re.MULTILINE)


def _subsection(title: str) -> str:
    text = sections(DOC)["Metrics"]
    return text.split(f"### {title}\n", 1)[1].split("\n### ", 1)[0]


def _blocks(text: str, language: str) -> list[str]:
    return [body for lang, body in _BLOCK.findall(text) if lang == language]


def _dispatch() -> dict[str, set[str]]:
    """The work of each kind, as the queue's dispatch table has it."""
    ticks = PlanTicks(lambda ns, n: None, lambda ns, n: None, lambda: None)  # type: ignore[arg-type,return-value]
    table = work.jobs(SimpleNamespace(), SimpleNamespace(), work.Plans(SimpleNamespace(), ticks))  # type: ignore[arg-type]
    by_kind: dict[str, set[str]] = {}
    for kind_of_work, job in table.items():
        by_kind.setdefault(job.kind, set()).add(kind_of_work.value)
    return by_kind


def _acting_kinds() -> set[str]:
    """The kinds a kopf handler that does its work itself is about."""
    import minds.controller  # noqa: F401  (registers the handlers)

    registry = kopf.get_default_registry()
    handlers = [*registry._changing.get_all_handlers(), *registry._watching.get_all_handlers()]
    return {getattr(h.fn, RECONCILES) for h in handlers if hasattr(h.fn, RECONCILES)}


def test_the_table_of_kinds_is_the_dispatch_table_and_kopfs_handlers() -> None:
    rows = _ROW.findall(_subsection("Reconciles by kind"))
    documented = {kind: set(re.findall(r"`(\w+)`", works)) for kind, works, _ in rows}
    assert documented == _dispatch()
    acting = {kind for kind, _, handlers in rows if handlers.strip() != "none"}
    assert acting == _acting_kinds()


def test_the_queries_parse_and_name_only_exported_metrics(
    promtool: Promtool, tmp_path: Path
) -> None:
    [block] = _blocks(_subsection("Reconciles by kind"), "promql")
    queries = block.strip().splitlines()
    proc = promtool.check_expressions(queries, tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    exported = {spec.name for spec in CATALOGUE}
    for name in re.findall(r"\bminds_\w+", block):
        assert re.sub(r"_(bucket|sum|count)$", "", name) in exported, name


def _logs() -> str:
    return sections(DOC)["Logs"]


def _field_table() -> list[str]:
    return re.findall(r"^\| `(\w+)` \|", _logs(), re.MULTILINE)


def test_the_json_example_has_the_fields_the_table_names_in_order() -> None:
    [example] = _blocks(_logs(), "json")
    line = json.loads(example)
    # Every field but the stack, which only a record logged with stack_info carries.
    assert list(line) == [field for field in _field_table() if field != "stack"]
    assert set(line["object"]) == {"kind", "namespace", "name"}


def test_the_formatter_writes_the_fields_the_table_names() -> None:
    """A line kopf logs about an object, with a traceback: every field there can be."""
    try:
        raise RuntimeError("the ledger did not answer")
    except RuntimeError as exc:
        failure = (type(exc), exc, exc.__traceback__)
    record = logging.LogRecord("kopf.objects", logging.ERROR, __file__, 1, "failed", (), failure)
    record.stack_info = "Stack (most recent call last): ..."
    record.k8s_ref = {"apiVersion": "minds.dev/v1alpha1", "kind": "Mind", "uid": "u"} | {
        "namespace": "shop",
        "name": "atlas-keeper",
    }
    line: dict[str, Any] = json.loads(JsonFormatter().format(record))
    assert list(line) == _field_table()


def test_the_refusal_shown_is_what_the_controller_says() -> None:
    [shown] = _blocks(_logs(), "text")
    command = sh_commands(DOC, section="Logs")
    assert len(command) == 1
    argv = shlex.split(command[0])
    assert argv[:3] == ["minds", "controller", "run"]
    refused = re.search(r"'(\w+)' is not a log format", shown)
    assert refused is not None
    result = CliRunner().invoke(app, ["controller", "run", "--log-format", refused.group(1)])
    assert result.exit_code == 2
    assert result.output == shown

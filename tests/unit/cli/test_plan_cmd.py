"""`minds plan validate` and `minds plan show` without a cluster: the commands' contract (exit
codes, findings with field paths, JSON) and the pure renderings `show` prints."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
import yaml
from typer.testing import CliRunner

from minds.adapters.kube.client import current_namespace
from minds.cli.main import app
from minds.cli.plan_dot import quote, render_dot
from minds.cli.plan_render import (
    layout,
    render_budget,
    render_header,
    render_show,
    render_tree,
    seconds,
)
from minds.devenv.install import repo_root
from minds.domain.planning.model import Plan

REPO = repo_root()
EXAMPLE = REPO / "examples" / "plan.yaml"
INVALID = REPO / "examples" / "plan-invalid.yaml"
WORKLOAD = {"namespace": "default", "name": "atlas-worker"}

runner = CliRunner()


def run(*args: str, input_: str | None = None) -> Any:
    return runner.invoke(app, ["plan", *args], input=input_)


def spec_of(path: Path) -> dict[str, Any]:
    return dict(yaml.safe_load(path.read_text())["spec"])


def write(tmp_path: Path, body: object, name: str = "plan.yaml") -> str:
    path = tmp_path / name
    path.write_text(yaml.safe_dump(body) if not isinstance(body, str) else body)
    return str(path)


def capability(key: str, name: str = "service.status", **over: Any) -> dict[str, Any]:
    return {
        "key": key,
        "title": f"step {key}",
        "kind": "capability",
        "capability": name,
        "parameters": dict(WORKLOAD),
    } | over


def plan(*steps: dict[str, Any], **over: Any) -> dict[str, Any]:
    return {
        "objective": "look after atlas-worker",
        "origin": "operator",
        "strategy": "authored",
        "steps": list(steps),
    } | over


# --- validate -------------------------------------------------------------------------------


def test_valid_example_exits_0_with_order_and_estimate() -> None:
    result = run("validate", str(EXAMPLE))
    assert result.exit_code == 0, result.output
    assert "order: D1 → P1 → V1" in result.stdout
    assert (
        "estimate: 2 invocations (budget 20), 7 checks (budget 200), 1 approval, 74 s wall time"
        in result.stdout
    )
    assert result.stdout.rstrip().endswith("valid (0 errors, 0 warnings)")


def test_invalid_example_exits_1_and_names_the_cycle() -> None:
    result = run("validate", str(INVALID))
    assert result.exit_code == 1
    assert "error dependency_cycle (steps P1, V1; field steps)" in result.stdout
    assert "P1 depends on V1, V1 depends on P1" in result.stdout
    assert "error too_many_attempts (step P1; field steps[0].maxAttempts)" in result.stdout
    assert "order:" not in result.stdout
    assert "invalid (2 errors, 0 warnings)" in result.stdout


def test_a_bare_spec_in_json_on_stdin() -> None:
    result = run("validate", "-", input_=json.dumps(spec_of(EXAMPLE)))
    assert result.exit_code == 0, result.output
    assert "valid (0 errors" in result.stdout


def test_warnings_alone_keep_a_plan_valid(tmp_path: Path) -> None:
    restart = capability("P1", "service.restart")
    result = run("validate", write(tmp_path, plan(restart)))
    assert result.exit_code == 0
    assert "warning missing_expectation (step P1; field steps[0].expectation)" in result.stdout
    assert "valid (0 errors, 1 warning)" in result.stdout


def test_shape_errors_are_findings_with_paths_not_tracebacks(tmp_path: Path) -> None:
    steps = [capability("P1", approved=True), capability("p2", kind="teleport")]
    result = run("validate", write(tmp_path, plan(*steps)))
    assert result.exit_code == 1
    assert result.exception is None or isinstance(result.exception, SystemExit)
    assert "Traceback" not in result.output
    assert "error schema (step P1; field steps[0].approved): unknown field" in result.stdout
    assert "field steps[1].key" in result.stdout
    assert "field steps[1].kind" in result.stdout


def test_shape_errors_as_json(tmp_path: Path) -> None:
    result = run("validate", "-o", "json", write(tmp_path, plan(capability("P1", bogus=1))))
    assert result.exit_code == 1
    body = json.loads(result.stdout)
    assert body["valid"] is False
    assert body["order"] is None
    assert body["errors"] == [
        {"code": "schema", "message": "unknown field", "step": "P1", "field": "steps[0].bogus"}
    ]


def test_json_output_is_the_validation_result() -> None:
    valid = json.loads(run("validate", "-o", "json", str(EXAMPLE)).stdout)
    assert valid == {"valid": True, "errors": [], "warnings": [], "order": ["D1", "P1", "V1"]}
    result = run("validate", "--output", "json", str(INVALID))
    assert result.exit_code == 1
    invalid = json.loads(result.stdout)
    assert [e["code"] for e in invalid["errors"]] == ["dependency_cycle", "too_many_attempts"]
    assert invalid["errors"][0]["steps"] == ["P1", "V1"]


def test_yaml_output_is_the_same_result() -> None:
    for plan_file, code in ((EXAMPLE, 0), (INVALID, 1)):
        as_json = run("validate", "-o", "json", str(plan_file))
        as_yaml = run("validate", "-o", "yaml", str(plan_file))
        assert (as_json.exit_code, as_yaml.exit_code) == (code, code)
        assert yaml.safe_load(as_yaml.stdout) == json.loads(as_json.stdout)
        assert not as_yaml.stdout.lstrip().startswith("{")


@pytest.mark.parametrize(
    ("content", "said"),
    [
        (None, "cannot read"),
        ("objective: [", "neither YAML nor JSON"),
        ("- a\n- b\n", "not a mapping"),
        ("objective: a\n---\nobjective: b\n", "holds 2 documents"),
        ("", "holds 0 documents"),
        ("apiVersion: minds.dev/v1alpha1\nkind: Mind\nspec: {}\n", "not a Plan"),
        ("apiVersion: example.com/v1\nkind: Plan\nspec: {}\n", "not minds.dev"),
        ("apiVersion: minds.dev/v1alpha1\nkind: Plan\nspec: nothing\n", "no spec mapping"),
    ],
)
def test_unreadable_input_exits_2(tmp_path: Path, content: str | None, said: str) -> None:
    path = tmp_path / "plan.yaml"
    if content is not None:
        path.write_text(content)
    result = run("validate", str(path))
    assert result.exit_code == 2
    assert said in result.stderr
    assert result.stdout == ""


def mind(tmp_path: Path, **spec: Any) -> str:
    manifest = {
        "apiVersion": "minds.dev/v1alpha1",
        "kind": "Mind",
        "metadata": {"name": "atlas-keeper"},
        "spec": spec,
    }
    return write(tmp_path, manifest, "mind.yaml")


def test_a_locked_capability_from_the_mind_file_is_an_error(tmp_path: Path) -> None:
    locked = mind(tmp_path, lockedCapabilities=["service.restart"])
    result = run("validate", "--mind-file", locked, str(EXAMPLE))
    assert result.exit_code == 1
    assert "error locked_capability (step P1; field steps[1].capability)" in result.stdout
    assert run("validate", str(EXAMPLE)).exit_code == 0


def test_the_mind_files_policy_is_applied(tmp_path: Path) -> None:
    denying = mind(
        tmp_path, capabilityPolicy=[{"capability": "service.restart", "decision": "deny"}]
    )
    result = run("validate", "--mind-file", denying, str(EXAMPLE))
    assert result.exit_code == 0
    assert "warning policy_denies (step P1; field steps[1].capability)" in result.stdout


def test_the_example_mind_accepts_the_example_plan() -> None:
    mind_file = str(REPO / "examples" / "mind.yaml")
    assert run("validate", "--mind-file", mind_file, str(EXAMPLE)).exit_code == 0


@pytest.mark.parametrize(
    ("content", "said"),
    [
        ("apiVersion: minds.dev/v1alpha1\nkind: Plan\nspec: {}\n", "not a Mind"),
        ("cycleIntervalSeconds: 1\n", "not a valid Mind"),
    ],
)
def test_an_unusable_mind_file_exits_2(tmp_path: Path, content: str, said: str) -> None:
    result = run("validate", "--mind-file", write(tmp_path, content, "mind.yaml"), str(EXAMPLE))
    assert result.exit_code == 2
    assert said in result.stderr


def monitor(**over: Any) -> dict[str, Any]:
    return {
        "key": "M1",
        "title": "watch atlas-worker",
        "kind": "monitor",
        "check": {
            "capability": "service.status",
            "parameters": dict(WORKLOAD),
            "field": "state",
            "comparison": "equals",
            "value": "running",
        },
        "stableSeconds": 900,
        "deadlineSeconds": 3600,
    } | over


def test_the_estimate_is_computed_not_taken_from_the_spec(tmp_path: Path) -> None:
    # A monitor polling every 30 s for an hour makes 120 checks, whatever the author says.
    claimed = plan(monitor(), estimate={"checks": 1}, budget={"checks": 100})
    result = run("validate", write(tmp_path, claimed))
    assert result.exit_code == 0
    assert "warning estimate_over_budget (field estimate)" in result.stdout
    assert "120 checks > 100" in result.stdout
    slow = plan(monitor(intervalSeconds=300), estimate={"checks": 999}, budget={"checks": 100})
    result = run("validate", write(tmp_path, slow))
    assert "estimate_over_budget" not in result.stdout
    assert "estimate: 0 invocations (budget 20), 12 checks (budget 100)" in result.stdout


def test_prices_as_the_controller_has_them_judge_a_money_budget(tmp_path: Path) -> None:
    restarts = [capability("P1", "service.restart"), capability("P2", "service.restart")]
    thrifty = write(tmp_path, plan(*restarts, budget={"money": 4}))
    unpriced = run("validate", thrifty)
    assert unpriced.exit_code == 0, unpriced.output
    assert "estimate_over_budget" not in unpriced.stdout
    priced = run("validate", thrifty, "--prices", '{"service.restart": 2.5}')
    assert priced.exit_code == 0, priced.output
    assert "5 money (budget 4)" in priced.stdout
    assert "warning estimate_over_budget (field estimate)" in priced.stdout
    assert "5 money > 4" in priced.stdout


@pytest.mark.parametrize(
    ("prices", "said"),
    [
        ('{"service.restat": 1}', "--prices: service.restat: no such capability"),
        ('{"service.restart": -1}', "--prices: service.restart: -1 is not a price"),
        ("service.restart=1", "--prices: not JSON"),
    ],
)
def test_prices_the_registry_refuses_exit_2_naming_the_key(
    tmp_path: Path, prices: str, said: str
) -> None:
    result = run("validate", write(tmp_path, plan(capability("R1"))), "--prices", prices)
    assert result.exit_code == 2
    [line] = result.output.strip().splitlines()
    assert line.startswith(f"error: {said}")


# --- show (without a cluster) --------------------------------------------------------------


@pytest.mark.parametrize("output", ["json", "yaml"])
def test_show_refuses_dot_and_data_together(output: str) -> None:
    result = run("show", "p", "--dot", "-o", output)
    assert result.exit_code == 2
    assert f"choose one of --dot and -o {output}" in result.stderr


def test_show_says_when_the_cluster_cannot_be_reached(tmp_path: Path) -> None:
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text(
        yaml.safe_dump(
            {
                "apiVersion": "v1",
                "kind": "Config",
                # Port 1 on loopback: nothing listens, the connection is refused at once.
                "clusters": [{"name": "c", "cluster": {"server": "http://127.0.0.1:1"}}],
                "users": [{"name": "u", "user": {"token": "t"}}],
                "contexts": [{"name": "x", "context": {"cluster": "c", "user": "u"}}],
                "current-context": "x",
            }
        )
    )
    result = run("show", "p", "-n", "ns", "--kubeconfig", str(kubeconfig))
    assert result.exit_code == 2
    assert "cannot reach the API server" in result.stderr


def test_show_without_any_kubeconfig_exits_2(tmp_path: Path) -> None:
    result = run("show", "p", "--kubeconfig", str(tmp_path / "absent"))
    assert result.exit_code == 2
    assert "error:" in result.stderr


def test_the_default_namespace_is_the_contexts(tmp_path: Path) -> None:
    kubeconfig = tmp_path / "kubeconfig"
    contexts = [
        {"name": "a", "context": {"cluster": "c", "user": "u", "namespace": "team-a"}},
        {"name": "b", "context": {"cluster": "c", "user": "u"}},
    ]
    kubeconfig.write_text(
        yaml.safe_dump(
            {
                "apiVersion": "v1",
                "kind": "Config",
                "clusters": [{"name": "c", "cluster": {"server": "http://127.0.0.1:1"}}],
                "users": [{"name": "u", "user": {"token": "t"}}],
                "contexts": contexts,
                "current-context": "a",
            }
        )
    )
    assert current_namespace(str(kubeconfig), None) == "team-a"
    assert current_namespace(str(kubeconfig), "b") == "default"
    assert current_namespace(str(tmp_path / "absent"), None) == "default"


# --- the tree --------------------------------------------------------------------------------


def parse(*steps: dict[str, Any], **over: Any) -> Plan:
    return Plan.model_validate(plan(*steps, **over))


def wait(key: str, *after: str) -> dict[str, Any]:
    return {
        "key": key,
        "title": f"wait {key}",
        "kind": "wait",
        "dependsOn": list(after),
        "waitSeconds": 5,
    }


def test_a_step_with_several_parents_appears_once_under_the_last() -> None:
    tree = render_tree(parse(wait("A"), wait("B"), wait("C", "B", "A"), wait("D", "C")), {})
    assert tree == [
        "steps",
        "├── A [pending] wait: wait A",
        "│     waits 5 s",
        "└── B [pending] wait: wait B",
        "    │ waits 5 s",
        "    └── C [pending] wait: wait C",
        "        │ waits 5 s",
        "        │ also after A",
        "        └── D [pending] wait: wait D",
        "              waits 5 s",
    ]
    assert sum(line.count(" C [") for line in tree) == 1


def test_steps_on_a_cycle_are_listed_with_what_they_wait_for() -> None:
    shape = layout(parse(wait("A", "B"), wait("B", "A"), wait("C", "A"), wait("D")).steps)
    assert shape.roots == [0, 1, 2, 3]
    assert shape.notes[0] == ["cannot be ordered: on a dependency cycle; after B"]
    assert shape.notes[2] == ["cannot be ordered: after a dependency cycle; after A"]
    assert shape.notes[3] == []


def test_unknown_self_and_duplicate_dependencies_are_noted_not_fatal() -> None:
    steps = parse(wait("A", "Z9"), wait("B", "B"), wait("A")).steps
    shape = layout(steps)
    assert shape.notes[0] == ["after Z9, which is not a step of this plan"]
    assert shape.notes[1] == ["depends on itself"]
    assert shape.notes[2] == ["duplicate key: another step is already A"]
    assert shape.roots == [0, 1, 2]
    tree = render_tree(parse(wait("A"), wait("A")), {})
    assert [line for line in tree if " A [" in line] == [
        "├── A [pending] wait: wait A",
        "└── A [pending] wait: wait A",
    ]


def test_a_plan_without_steps_renders() -> None:
    assert render_tree(parse(), {}) == ["steps", "└── (none)"]


def test_status_is_rendered_per_step_and_bad_entries_are_skipped() -> None:
    spec = parse(capability("D1"), capability("P1", "service.restart", dependsOn=["D1"]))
    status = {
        "steps": [
            "not a mapping",
            {"status": "completed"},
            {
                "key": "D1",
                "status": "completed",
                "attempts": 2,
                "executionRef": "41",
                "predictionRef": "p-7",
                "observation": {"summary": "degraded", "holds": False},
                "reason": "second attempt succeeded",
            },
            {
                "key": "P1",
                "status": "executing",
                "grantRef": "g-1",
                "lease": {"holder": "controller-0", "expiresAt": "2025-03-01T12:01:30Z"},
                "nextRunAt": "2025-03-01T12:02:00Z",
            },
            {"key": "D1", "status": "failed"},
        ]
    }
    text = "\n".join(render_tree(spec, status))
    assert "D1 [completed] capability: step D1" in text
    assert "observed: degraded (does not hold)" in text
    assert "reason: second attempt succeeded" in text
    assert "execution 41 · prediction p-7 · 2 attempts" in text
    assert "P1 [executing] capability: step P1" in text
    assert "grant g-1" in text
    assert "claimed by controller-0 until 2025-03-01T12:01:30Z" in text
    assert "next run at 2025-03-01T12:02:00Z" in text
    assert "[failed]" not in text


def test_the_header_without_status_says_nobody_judged_the_plan() -> None:
    spec = parse(capability("D1"), capability("D2"))
    header = render_header("p", "ns", spec, {})
    assert header[0] == "Plan ns/p: look after atlas-worker"
    assert header[1] == "mind (none) · origin operator · strategy authored · revision 1"
    assert "no controller has judged this plan yet" in header[2]
    assert not any(line.startswith("validation") for line in header)


def test_the_header_with_status_shows_phase_progress_and_findings() -> None:
    spec = parse(
        capability("D1"),
        capability("D2"),
        revision=2,
        supersedes="p-r1",
        assumptions=[{"belief": "atlas-worker is degraded", "minConfidence": 0.5}],
    )
    status = {
        "phase": "draft",
        "steps": [{"key": "D1", "status": "completed"}],
        "reason": "kept as a draft",
        "validation": {
            "errors": [
                {"code": "unknown_mind", "message": "no mind", "field": "mind"},
                # A code from a newer controller, and an entry that is not one.
                {"code": "from_the_future", "message": "new rule", "steps": ["D1", "D2"]},
                "garbage",
            ],
            "warnings": [{"code": "policy_denies", "message": "denied", "step": "D2"}],
        },
    }
    header = render_header("p", "ns", spec, status)
    assert "supersedes p-r1" in header
    assert "phase draft · progress 1/2" in header
    assert "reason: kept as a draft" in header
    assert "assumes: atlas-worker is degraded (confidence at least 0.5)" in header
    assert "validation: 2 errors, 1 warning" in header
    assert "  error unknown_mind (field mind): no mind" in header
    assert "  error from_the_future (steps D1, D2): new rule" in header
    assert "  warning policy_denies (step D2): denied" in header
    garbled = render_header("p", "ns", spec, {"phase": "draft", "validation": {"errors": 3}})
    assert not any(line.startswith("validation") for line in garbled)


def test_every_kind_says_what_it_does() -> None:
    request = {
        "key": "R1",
        "title": "ask for logs",
        "kind": "request_capability",
        "request": {
            "capability": "logs.query",
            "targetPattern": "default/atlas-worker",
            "durationSeconds": 1800,
            "operationCap": 20,
            "reason": "see why it restarts",
            "risk": "personal identifiers",
            "mitigation": "masking",
            "fallback": "ask the operator",
        },
    }
    summary = {
        "key": "S1",
        "title": "summarise",
        "kind": "internal",
        "dependsOn": ["R1"],
        "internalAction": "summarise_findings",
    }
    notify = {
        "key": "N1",
        "title": "tell the operator",
        "kind": "internal",
        "dependsOn": ["S1"],
        "internalAction": "notify_operator",
        "note": "tried a restart",
    }
    steps = (request, summary, notify, wait("W1", "N1"), monitor(dependsOn=["W1"]))
    text = render_show("p", "ns", parse(*steps), {})
    assert "asks for logs.query on default/atlas-worker for 30 min, at most 20 operations" in text
    assert "risk: personal identifiers; mitigation: masking; fallback: ask the operator" in text
    assert "│ summarise_findings" in text
    assert "│ notify_operator" in text
    assert "│ note: tried a restart" in text
    assert "│ waits 5 s" in text
    assert "holds: service.status on default/atlas-worker: state == running" in text
    assert "stable for 15 min, or fails at 1 h" in text


@pytest.mark.parametrize(
    ("value", "text"),
    [
        (45, "45 s"),
        (119, "119 s"),
        (150, "150 s"),
        (600, "10 min"),
        (3600, "1 h"),
        (5400, "1 h 30 min"),
        (86400, "24 h"),
    ],
)
def test_seconds_read_as_people_say_them(value: int, text: str) -> None:
    assert seconds(value) == text


# --- DOT -------------------------------------------------------------------------------------


def test_dot_draws_work_flowing_from_dependencies_coloured_by_status() -> None:
    spec = Plan.model_validate(spec_of(EXAMPLE))
    dot = render_dot(spec, {"steps": [{"key": "D1", "status": "completed"}]}, "restart")
    assert dot.startswith('digraph "restart" {\n')
    assert dot.endswith("}\n")
    assert '"D1" -> "P1";' in dot
    assert '"P1" -> "V1" [label="verifies"];' in dot
    assert (
        '"D1" [label="D1 · capability\\nread the status of atlas-worker\\n[completed]", '
        'fillcolor="palegreen"];' in dot
    )
    assert 'fillcolor="white"' in dot


def test_dot_marks_cycles_and_missing_steps_in_red() -> None:
    spec = Plan.model_validate(spec_of(INVALID))
    dot = render_dot(spec, {})
    assert '"V1" -> "P1" [color=red];' in dot
    assert '"P1" -> "V1" [label="verifies", color=red];' in dot
    missing = render_dot(parse(wait("A", "Z9"), wait("B", "B")), {})
    assert '"Z9" -> "A" [style=dashed, color=red];' in missing
    assert '"Z9" [label="Z9\\n(not a step of this plan)", style=dashed, color=red];' in missing
    assert '"B" -> "B" [color=red];' in missing


def test_dot_quotes_what_people_write() -> None:
    assert quote('say "hi"\\now\nthen') == '"say \\"hi\\"\\\\now\\nthen"'
    dot = render_dot(parse(wait("A"), objective='the "main" one'), {})
    assert 'label="the \\"main\\" one"' in dot


# --- the budget in show ----------------------------------------------------------------------


def budget_lines(status: dict[str, Any], now: Any = None) -> dict[str, list[str]]:

    spec = Plan.model_validate(plan(capability("R1")))
    lines = render_budget(
        spec, status, datetime.fromisoformat(now).replace(tzinfo=UTC) if now else None
    )
    assert lines[0].split() == ["budget", "used", "cap", "estimate"]
    return {" ".join(line.split()[:-3]): line.split()[-3:] for line in lines[1:]}


def test_show_renders_each_budget_kind_used_of_its_cap() -> None:
    status = {
        "phase": "blocked",
        "actual": {"invocations": 3, "checks": 200, "approvals": 1, "money": 1.5},
        "budget": {"invocations": 20, "checks": 200, "approvals": 2, "money": 5},
        "estimate": {"invocations": 3, "checks": 31, "approvals": 1},
        "steps": [{"key": "R1", "status": "blocked", "startedAt": "2026-01-01T00:00:00Z"}],
    }
    shown = budget_lines(status, "2026-01-01T00:10:00")
    assert shown == {
        "invocations": ["3", "20", "3"],
        "checks": ["200", "200", "31"],
        "approvals": ["1", "2", "1"],
        "wall seconds": ["600", "-", "0"],
        "money": ["1.5", "5", "0"],
    }


def test_show_reads_a_garbled_budget_leniently_and_a_plan_at_rest_spends_no_more_time() -> None:
    status = {
        "phase": "completed",
        "actual": "lots",
        "budget": {"invocations": -1},
        "steps": [
            {"key": "R1", "status": "completed", "startedAt": "2026-01-01T00:00:00Z",
             "finishedAt": "2026-01-01T00:00:42Z"},
        ],
    }  # fmt: skip
    shown = budget_lines(status, "2026-03-01T00:00:00")
    # The spec's budget (20 invocations by default), nothing used, no estimate.
    assert shown["invocations"] == ["0", "20", "-"]
    assert shown["wall seconds"] == ["42", "-", "-"]
    assert budget_lines(status)["wall seconds"] == ["-", "-", "-"]

"""docs/planning.md says only what is true.

Every fenced block in the doc carries a `<!-- check: ... -->` marker saying what it claims, and
this module holds each claim to the code: plans validate (or fail with the named codes) as
claimed, outputs are the commands' real outputs, tables match the capability registry and the
CRD, the scores are the planner's. Every command in the doc's `sh` blocks is run, either here or
in tests/e2e/test_plan_cli.py against the real control plane, and the two lists together must
be exactly the doc's commands.
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import pytest
import yaml
from typer.testing import CliRunner

from minds.cli.main import app
from minds.cli.plan_input import plan_spec
from minds.cli.plan_render import render_show, render_tree
from minds.devenv.install import repo_root
from minds.domain.capabilities.registry import REGISTRY, Targeting
from minds.domain.planning import (
    FailedAttempt,
    IntentionKind,
    IntentionView,
    InternalAction,
    IssueCode,
    Means,
    MindView,
    Plan,
    PlanStatus,
    StepKind,
    StepStatus,
    Strategy,
    Workload,
    estimate,
    make_plan,
    validate,
)
from minds.domain.planning.model import Comparison, PlanOrigin
from minds.domain.resources.kinds import PLAN
from tests.e2e.test_plan_cli import DOC_COMMANDS as E2E_COMMANDS

REPO = repo_root()
DOC = REPO / "docs" / "planning.md"
NOW = datetime(2025, 3, 1, 12, 0, tzinfo=UTC)

#: The doc's commands run by this module, with the exit code each must give.
RUN_HERE: dict[str, int] = {
    "minds plan validate examples/plan.yaml": 0,
    "minds plan validate --mind-file examples/mind.yaml examples/plan.yaml": 0,
    "minds plan validate examples/plan-invalid.yaml": 1,
    "minds plan validate -o json examples/plan-invalid.yaml": 1,
    "minds plan validate - < examples/plan.yaml": 0,
}

#: The status behind the doc's `minds plan show` and `kubectl get plans` outputs: the restart
#: waits for approval after D1 read the workload. The e2e test writes it into a real Plan.
SHOWN_STATUS: dict[str, Any] = {
    "phase": "awaiting_approval",
    "progress": "1/3",
    "waitingOn": "approval restart-atlas-worker-p1",
    "validation": {"errors": [], "warnings": [], "order": ["D1", "P1", "V1"]},
    # D1 read once; P1 looked at its precondition, then asked (an invocation and an approval).
    "actual": {"invocations": 2, "checks": 1, "approvals": 1},
    "budget": {"invocations": 20, "checks": 200},
    "estimate": {"invocations": 2, "checks": 7, "approvals": 1, "wallSeconds": 74},
    "steps": [
        {
            "key": "D1",
            "status": "completed",
            "attempts": 1,
            "executionRef": "41",
            "observation": {
                "summary": "atlas-worker is degraded: 0 of 1 replicas ready, 4 restarts",
                "fields": {"state": "degraded", "readyReplicas": 0, "restarts": 4},
                "holds": None,
            },
        },
        {"key": "P1", "status": "awaiting_approval", "approvalRef": "restart-atlas-worker-p1"},
        {"key": "V1", "status": "pending"},
    ],
}

_MARKER = re.compile(r"^<!-- check: (?P<claim>.+?) -->$")


@dataclass(frozen=True)
class Block:
    lang: str
    body: str
    claim: str | None
    line: int


def doc_text() -> str:
    return DOC.read_text(encoding="utf-8")


def blocks(text: str) -> list[Block]:
    """The fenced blocks, each with the marker on the line before its fence, if any."""
    found: list[Block] = []
    lines = text.splitlines()
    i = 0
    while i < len(lines):
        if lines[i].startswith("```"):
            lang = lines[i][3:].strip()
            end = next(j for j in range(i + 1, len(lines)) if lines[j].startswith("```"))
            marker = _MARKER.match(lines[i - 1]) if i > 0 else None
            found.append(
                Block(lang, "\n".join(lines[i + 1 : end]), marker and marker["claim"], i + 1)
            )
            i = end
        i += 1
    return found


def normalise(command: str) -> str:
    return shlex.join(shlex.split(command, comments=True))


def doc_commands() -> list[str]:
    return [
        normalise(line)
        for block in blocks(doc_text())
        if block.lang == "sh"
        for line in block.body.splitlines()
        if line.strip() and not line.lstrip().startswith("#")
    ]


def doc_table(claim: str) -> list[list[str]]:
    """The rows of the Markdown table after a `<!-- check: CLAIM -->` marker (no header)."""
    lines = doc_text().splitlines()
    start = lines.index(f"<!-- check: {claim} -->") + 1
    rows: list[list[str]] = []
    for line in lines[start:]:
        if not line.startswith("|"):
            break
        rows.append([cell.strip() for cell in line.strip("|").split("|")])
    return rows[2:]


def run_minds(command: str, monkeypatch: pytest.MonkeyPatch) -> Any:
    """A doc command run as the doc runs it: from the repository root, `<` feeding stdin."""
    argv = shlex.split(command, comments=True)
    assert argv[0] == "minds"
    stdin = None
    if "<" in argv:
        at = argv.index("<")
        stdin = (REPO / argv[at + 1]).read_text()
        argv = argv[:at]
    monkeypatch.chdir(REPO)
    return CliRunner().invoke(app, argv[1:], input=stdin)


def plan_of(body: str) -> Plan:
    return Plan.model_validate(plan_spec(yaml.safe_load(body), "docs/planning.md"))


def judged(plan: Plan) -> Any:
    """Validation as `minds plan validate` runs it: computed estimate, a Mind with no rules."""
    mind = MindView()
    plan = plan.model_copy(update={"estimate": estimate(plan, REGISTRY, mind, NOW)})
    return validate(plan, REGISTRY, mind)


# --- every block and every command is accounted for ------------------------------------------

KNOWN_CLAIMS = re.compile(
    r"^(plan valid(, same as \S+)?|plan invalid( \w+)+|output of .+|tree of the plan above|"
    r"show \S+ in \S+|columns of kubectl get plans)$"
)


def test_every_block_but_commands_states_a_checked_claim() -> None:
    for block in blocks(doc_text()):
        if block.lang == "sh":
            continue
        assert block.claim is not None, f"line {block.line}: a {block.lang} block with no claim"
        assert KNOWN_CLAIMS.match(block.claim), f"line {block.line}: unknown claim {block.claim}"


def test_every_command_in_the_doc_is_run_by_a_test() -> None:
    commands = doc_commands()
    assert len(commands) == len(set(commands)), "a command is listed twice"
    run = {normalise(c) for c in RUN_HERE} | {normalise(c) for c in E2E_COMMANDS}
    assert set(commands) == run


@pytest.mark.parametrize("command", sorted(RUN_HERE))
def test_commands_run_here(command: str, monkeypatch: pytest.MonkeyPatch) -> None:
    result = run_minds(command, monkeypatch)
    assert result.exit_code == RUN_HERE[command], result.output
    if "plan-invalid" in command:
        assert "dependency_cycle" in result.stdout
        assert "P1" in result.stdout
        assert "V1" in result.stdout


# --- what the blocks claim --------------------------------------------------------------------


def claimed(prefix: str) -> list[tuple[Block, str]]:
    return [
        (b, b.claim[len(prefix) :].strip())
        for b in blocks(doc_text())
        if b.claim is not None and b.claim.startswith(prefix)
    ]


def test_plans_in_the_doc_validate_as_claimed() -> None:
    plans = claimed("plan ")
    assert len(plans) >= 3
    for block, claim in plans:
        result = judged(plan_of(block.body))
        where = f"line {block.line}"
        if claim.startswith("valid"):
            assert result.ok, (where, result)
            assert not result.warnings, (where, result)
            if ", same as " in claim:
                path = claim.split(", same as ")[1]
                assert yaml.safe_load(block.body) == yaml.safe_load((REPO / path).read_text())
        else:
            codes = set(claim.removeprefix("invalid").split())
            assert {e.code.value for e in result.errors} == codes, (where, result)


def test_outputs_in_the_doc_are_the_commands_outputs(monkeypatch: pytest.MonkeyPatch) -> None:
    outputs = claimed("output of ")
    assert outputs
    for block, command in outputs:
        assert normalise(command) in {normalise(c) for c in RUN_HERE}
        result = run_minds(command, monkeypatch)
        assert result.stdout.rstrip("\n") == block.body, f"line {block.line}"


def test_the_tree_is_the_rendering_of_the_plan_above_it() -> None:
    found = blocks(doc_text())
    trees = [i for i, b in enumerate(found) if b.claim == "tree of the plan above"]
    assert trees
    for i in trees:
        source = next(b for b in reversed(found[:i]) if b.lang == "yaml")
        assert render_tree(plan_of(source.body), {}) == found[i].body.splitlines()


def named_plan(name: str) -> Plan:
    for block in blocks(doc_text()):
        document = yaml.safe_load(block.body) if block.lang == "yaml" else None
        if isinstance(document, dict) and document.get("metadata", {}).get("name") == name:
            return plan_of(block.body)
    raise AssertionError(f"no plan named {name} in the doc")


def shown_block() -> tuple[Block, str, str]:
    [(block, rest)] = claimed("show ")
    name, _, namespace = rest.split()
    return block, name, namespace


def test_the_show_output_is_the_rendering_of_the_example_with_its_status() -> None:
    block, name, namespace = shown_block()
    plan = named_plan(name)
    assert render_show(name, namespace, plan, SHOWN_STATUS) == block.body
    # The status is one the model accepts, so the controller could have written it.
    PLAN.status.model_validate(SHOWN_STATUS)


def get_plans_block() -> Block:
    return next(b for b in blocks(doc_text()) if b.claim == "columns of kubectl get plans")


def test_the_get_plans_output_has_the_crds_columns_and_the_example_values() -> None:
    header, row = (line.split() for line in get_plans_block().body.splitlines())
    columns = [c.name.upper() for c in PLAN.columns if c.priority == 0]
    assert header == ["NAME", *columns]
    values = [*row[:4], " ".join(row[4:6]), *row[6:]]
    plan = named_plan("restart-atlas-worker")
    expected = {
        "NAME": "restart-atlas-worker",
        "MIND": plan.mind,
        "PHASE": SHOWN_STATUS["phase"],
        "PROGRESS": SHOWN_STATUS["progress"],
        "WAITING-ON": SHOWN_STATUS["waitingOn"],
        "STRATEGY": plan.strategy.value,
        "REVISION": str(plan.revision),
    }
    assert dict(zip(header, values, strict=True)) | {"AGE": "?"} == expected | {"AGE": "?"}


# --- tables and vocabularies ------------------------------------------------------------------

TARGETS = {
    Targeting.WORKLOAD: "`namespace/name`",
    Targeting.HOST: "`host`",
    Targeting.URL_HOST: "URL host",
}


def test_the_capability_table_is_the_registry() -> None:
    rows = doc_table("capability table")
    assert [row[0] for row in rows] == [f"`{name}`" for name in REGISTRY]
    for name, access, idempotent, target, reports, default in rows:
        spec = REGISTRY[name.strip("`")]
        assert access == ("reads" if spec.read_only else "writes"), name
        assert idempotent == ("yes" if spec.idempotent else "no"), name
        assert target == TARGETS[spec.targeting], name
        fields = ", ".join(f"`{f}`" for f in spec.observation_fields) or "nothing"
        assert reports == fields, name
        assert default == spec.default_decision.value, name


@pytest.mark.parametrize(
    "vocabulary",
    [IssueCode, StepKind, InternalAction, Comparison, PlanStatus, StepStatus, Strategy, PlanOrigin],
)
def test_every_word_of_the_vocabularies_is_documented(vocabulary: Any) -> None:
    text = doc_text()
    missing = [m.value for m in vocabulary if f"`{m.value}`" not in text]
    assert not missing


def test_the_validation_table_names_every_code_that_validation_gives() -> None:
    rows = doc_table("validation table")
    codes = {c for row in rows for c in re.findall(r"`(\w+)`", row[1])}
    proposal_codes = {
        IssueCode.MALFORMED_PROPOSAL,
        IssueCode.PROPOSAL_TOO_LARGE,
        IssueCode.PROPOSAL_TOO_DEEP,
        IssueCode.PROPOSAL_SCHEMA,
        IssueCode.IGNORED_FIELD,
    }
    assert codes == {c.value for c in IssueCode} - {c.value for c in proposal_codes}


# --- the planner's numbers --------------------------------------------------------------------

RESTART = Means(
    capability="service.restart", parameters={"namespace": "default", "name": "atlas-worker"}
)
SCORED = [
    IntentionView(
        id="i1",
        objective="restart atlas-worker",
        kind=IntentionKind.ACTION,
        means=RESTART,
        requires_approval=True,
    ),
    IntentionView(
        id="i2",
        objective="find out why atlas-worker fails",
        kind=IntentionKind.INVESTIGATION,
        workload=Workload(namespace="default", name="atlas-worker"),
    ),
    IntentionView(
        id="i1",
        objective="restart atlas-worker",
        kind=IntentionKind.ACTION,
        means=RESTART,
        requires_approval=True,
        revision=2,
        failures=(FailedAttempt(strategy=Strategy.DIRECT, revision=1),),
    ),
]


@pytest.mark.parametrize("intention", SCORED, ids=["direct", "diagnose", "escalate"])
def test_the_scores_in_the_doc_are_the_planners(intention: IntentionView) -> None:
    result = make_plan(intention, MindView(), now=NOW)
    chosen = next(a for a in result.alternatives if a.selected)
    assert chosen.estimate is not None
    assert chosen.expected_confidence is not None
    assert chosen.score is not None
    use = chosen.estimate
    minus, times = "\u2212", "\u00d7"  # as the doc prints them
    worked = (
        f"{chosen.expected_confidence:g} {minus} 0.05 {times} {use.approvals} {minus} 0.001 "
        f"{times} {use.wall_seconds} = {chosen.score:g}"
    )
    assert worked in " ".join(doc_text().split()), worked


def test_the_examples_on_disk_are_the_ones_the_doc_shows() -> None:
    for path in (REPO / "examples" / "plan.yaml", REPO / "examples" / "plan-invalid.yaml"):
        document = yaml.safe_load(path.read_text())
        assert "namespace" not in document["metadata"], "apply must pick the namespace"
        assert document["spec"]["origin"] == "operator"
        assert any(
            yaml.safe_load(b.body) == document for b in blocks(doc_text()) if b.lang == "yaml"
        )

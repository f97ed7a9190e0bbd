"""``minds plan validate`` and ``minds plan show``: plans as an operator checks and reads them.

`validate` runs the controller's own validation offline, so a person finds out what is wrong
with a plan before applying it; `show` reads a Plan from the cluster and draws its dependency
graph with what happened to each step.

Exit codes are part of the interface (scripts and CI use them): 0 the plan is valid (or was
shown), 1 it is invalid (or not found), 2 the input or the cluster could not be read.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import typer

from minds.adapters.kube.client import current_namespace
from minds.cli.options import CONTEXT, KUBECONFIG, NAMESPACE, OUTPUT, Output, emit
from minds.cli.plan_dot import render_dot
from minds.cli.plan_input import (
    Unreadable,
    load_mapping,
    mind_view,
    parse_plan,
    plan_spec,
    read_text,
)
from minds.cli.plan_render import Finding, count, findings, render_finding, render_show
from minds.domain.capabilities.registry import PriceError, priced_by
from minds.domain.planning.budget import number
from minds.domain.planning.model import Plan, ValidationResult
from minds.domain.planning.scoring import estimate
from minds.domain.planning.validation import validate as validate_plan
from minds.domain.planning.views import MindView

app = typer.Typer(
    help="Check plans before applying them; read plans in the cluster.", no_args_is_help=True
)

VALID, INVALID, UNREADABLE = 0, 1, 2


def _fail(message: str, code: int = UNREADABLE) -> typer.Exit:
    typer.echo(f"error: {message}", err=True)
    return typer.Exit(code)


def _report_data(result: ValidationResult | None, shape: list[Finding]) -> dict[str, Any]:
    if result is None:
        body: dict[str, Any] = {
            "valid": False,
            "errors": [f.as_json() for f in shape],
            "warnings": [],
            "order": None,
        }
    else:
        dumped = result.model_dump(mode="json", by_alias=True, exclude_none=True)
        body = {"valid": result.ok, **dumped, "order": result.order}
    return body


def _use(plan: Plan) -> str:
    use, budget = plan.estimate, plan.budget
    parts = [
        f"{count(use.invocations, 'invocation')} (budget {budget.invocations})",
        f"{count(use.checks, 'check')} (budget {budget.checks})",
        count(use.approvals, "approval"),
        f"{use.wall_seconds} s wall time",
    ]
    if use.network_operations:
        parts.append(count(use.network_operations, "network operation"))
    if use.money:
        cap = f" (budget {number(budget.money)})" if budget.money is not None else ""
        parts.append(f"{number(use.money)} money{cap}")
    return ", ".join(parts)


def _report_text(plan: Plan | None, result: ValidationResult | None, shape: list[Finding]) -> str:
    lines: list[str] = []
    if plan is not None:
        lines.append(
            f"plan: {plan.objective} (origin {plan.origin}, strategy {plan.strategy}, "
            f"{count(len(plan.steps), 'step')})"
        )
    listed = shape if result is None else findings(result)
    lines.extend(render_finding(f) for f in listed)
    if result is not None and result.order is not None:
        lines.append("order: " + " → ".join(result.order))
    if plan is not None and result is not None and result.ok:
        lines.append(f"estimate: {_use(plan)}")
    errors = len(shape) if result is None else len(result.errors)
    warnings = 0 if result is None else len(result.warnings)
    tally = f"{count(errors, 'error')}, {count(warnings, 'warning')}"
    if errors:
        lines.append(f"invalid ({tally}): it would stay a draft and never run")
    else:
        lines.append(f"valid ({tally})")
    return "\n".join(lines)


@app.command()
def validate(
    file: str = typer.Argument(
        ..., metavar="FILE", help="A Plan manifest or spec, YAML or JSON; - reads stdin."
    ),
    mind_file: str | None = typer.Option(
        None,
        "--mind-file",
        metavar="MIND.yaml",
        help="Judge against this Mind's locked capabilities and policy (default: none).",
    ),
    prices: str = typer.Option(
        "",
        "--prices",
        metavar="JSON",
        help="Capability prices as the controller has them (its capabilities.prices), e.g. "
        "'{\"service.restart\": 2.5}' (default: every capability costs 0).",
    ),
    output: Output = OUTPUT,
) -> None:
    """Validate a plan as the controller would; exit 0 valid, 1 invalid, 2 unreadable."""
    try:
        spec = plan_spec(load_mapping(read_text(file), file), file)
        mind = mind_view(mind_file) if mind_file else MindView()
        registry = priced_by(prices)
    except Unreadable as exc:
        raise _fail(str(exc)) from exc
    except PriceError as exc:
        raise _fail(f"--prices: {exc}") from exc
    plan, shape = parse_plan(spec)
    result = None
    if plan is not None:
        # The estimate is computed, never taken from the spec: the budget rule should judge
        # what the plan would really use, not what its author says it would.
        used = estimate(plan, registry, mind, datetime.now(UTC))
        plan = plan.model_copy(update={"estimate": used})
        result = validate_plan(plan, registry, mind)
    emit(output, _report_data(result, shape), lambda: _report_text(plan, result, shape))
    if result is None or not result.ok:
        raise typer.Exit(INVALID)


def _read_plan(
    name: str, namespace: str, kubeconfig: str | None, context: str | None
) -> dict[str, Any]:
    from minds.adapters.kube.client import KubeResources
    from minds.cli import failures
    from minds.cli.kube import connect
    from minds.domain.resources.kinds import PLAN

    try:
        with connect(kubeconfig, context) as api:
            return KubeResources(api).get(PLAN, namespace, name)
    except Exception as exc:  # answered by the shared table, or re-raised by report()
        raise typer.Exit(failures.report(exc)) from exc


@app.command()
def show(
    name: str = typer.Argument(..., help="The Plan's name."),
    namespace: str | None = NAMESPACE,
    kubeconfig: str | None = KUBECONFIG,
    context: str | None = CONTEXT,
    dot: bool = typer.Option(False, "--dot", help="Print Graphviz DOT instead of a tree."),
    output: Output = OUTPUT,
) -> None:
    """Show a plan's dependency graph, each step's status, expectation and links."""
    if dot and output is not Output.TEXT:
        raise _fail(f"choose one of --dot and -o {output}")
    namespace = namespace or current_namespace(kubeconfig, context)
    body = _read_plan(name, namespace, kubeconfig, context)
    if output is not Output.TEXT:
        emit(output, body, str)
        return
    plan, shape = parse_plan(body.get("spec") or {})
    if plan is None:
        for finding in shape:
            typer.echo(render_finding(finding), err=True)
        raise _fail(f"plan {namespace}/{name} does not fit this version's plan model", INVALID)
    status = body.get("status") or {}
    if dot:
        typer.echo(render_dot(plan, status, name), nl=False)
    else:
        typer.echo(render_show(name, namespace, plan, status, datetime.now(UTC)))

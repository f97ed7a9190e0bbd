"""The options every command shares, defined once: the same flag means the same thing (and is
refused the same way) in each command that takes it."""

from __future__ import annotations

import json
from collections.abc import Callable
from enum import StrEnum
from typing import Any

import typer


class Output(StrEnum):
    """What a command that prints can print. typer refuses any other value before the command
    runs, naming the option and these values, with the usage errors' exit code (2)."""

    TEXT = "text"
    JSON = "json"
    YAML = "yaml"


OUTPUT = typer.Option(
    Output.TEXT, "--output", "-o", help="text (for people), json or yaml (the same data)."
)
NAMESPACE = typer.Option(
    None, "--namespace", "-n", help="Default: the kubeconfig context's namespace."
)
KUBECONFIG = typer.Option(
    None, "--kubeconfig", envvar="KUBECONFIG", help="Default: $KUBECONFIG, then ~/.kube/config."
)
CONTEXT = typer.Option(None, "--context", help="The kubeconfig context (who you are).")


def emit(output: Output, data: Any, text: Callable[[], str]) -> None:
    """Print ``data`` as JSON or YAML, or ``text()`` for people. YAML is the JSON document
    read back, so the two never differ (a timestamp is the same string in both)."""
    if output is Output.TEXT:
        shown = text()
        if shown:  # nothing to tell is no output, not an empty line
            typer.echo(shown)
        return
    encoded = json.dumps(data, indent=2, default=str)
    if output is Output.JSON:
        typer.echo(encoded)
        return
    import yaml  # only here: most commands never print YAML

    typer.echo(yaml.safe_dump(json.loads(encoded), sort_keys=False), nl=False)

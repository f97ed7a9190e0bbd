"""Reading what a person hands `minds plan validate`: a Plan (manifest or bare spec) and,
optionally, the Mind it would serve.

Input that cannot be read at all (no file, not YAML or JSON, not one mapping, another kind)
raises `Unreadable`. Input that reads but does not fit the plan model becomes `schema`
findings with the field path in the resource's own spelling (`steps[1].dependsOn[0]`), never a
traceback.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import yaml
from pydantic import ValidationError

from minds.cli.plan_render import Finding
from minds.domain.planning.model import STEP_KEY_PATTERN, IssueCode, Plan
from minds.domain.planning.views import MindView
from minds.domain.resources.common import API_GROUP
from minds.domain.resources.mind import MindSpec

SCHEMA = IssueCode.SCHEMA.value
_STEP_PATH = re.compile(r"^steps\[(\d+)\]")


class Unreadable(Exception):
    """The input is not something validation can judge; the message says why."""


def read_text(source: str) -> str:
    """The text of a file, or of stdin for `-`."""
    if source == "-":
        return sys.stdin.read()
    try:
        return Path(source).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise Unreadable(f"cannot read {source}: {exc}") from exc


def load_mapping(text: str, source: str) -> dict[str, Any]:
    """Exactly one YAML (or JSON, which YAML reads too) document that is a mapping."""
    try:
        documents = [d for d in yaml.safe_load_all(text) if d is not None]
    except yaml.YAMLError as exc:
        raise Unreadable(f"{source} is neither YAML nor JSON: {exc}") from exc
    if len(documents) != 1:
        raise Unreadable(f"{source} holds {len(documents)} documents; give exactly one")
    document = documents[0]
    if not isinstance(document, dict):
        raise Unreadable(f"{source} is a {type(document).__name__}, not a mapping")
    return document


def _spec_of(document: dict[str, Any], kind: str, source: str) -> tuple[dict[str, Any], str]:
    """The spec and name of a manifest of `kind`, or the document itself when it is a spec."""
    if "kind" not in document and "apiVersion" not in document:
        return document, ""
    if document.get("kind") != kind:
        raise Unreadable(f"{source} is a {document.get('kind')!r}, not a {kind}")
    api_version = str(document.get("apiVersion", ""))
    if api_version.split("/")[0] != API_GROUP:
        raise Unreadable(f"{source} has apiVersion {api_version!r}, not {API_GROUP}/...")
    spec = document.get("spec")
    if not isinstance(spec, dict):
        raise Unreadable(f"{source} has no spec mapping")
    metadata = document.get("metadata")
    name = metadata.get("name", "") if isinstance(metadata, dict) else ""
    return spec, str(name)


def plan_spec(document: dict[str, Any], source: str) -> dict[str, Any]:
    return _spec_of(document, "Plan", source)[0]


def _path(loc: tuple[int | str, ...]) -> str:
    out = ""
    for part in loc:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out


def _step_key(path: str, spec: Mapping[str, Any]) -> str | None:
    match = _STEP_PATH.match(path)
    steps = spec.get("steps")
    if match is None or not isinstance(steps, list) or int(match.group(1)) >= len(steps):
        return None
    step = steps[int(match.group(1))]
    key = step.get("key") if isinstance(step, dict) else None
    return key if isinstance(key, str) and re.fullmatch(STEP_KEY_PATTERN, key) else None


def parse_plan(spec: dict[str, Any]) -> tuple[Plan | None, list[Finding]]:
    """The plan, or the shape errors that keep it from being one."""
    try:
        return Plan.model_validate(spec), []
    except ValidationError as exc:
        problems = []
        for error in exc.errors():
            path = _path(error["loc"])
            message = "unknown field" if error["type"] == "extra_forbidden" else error["msg"]
            problems.append(
                Finding("error", SCHEMA, message, _step_key(path, spec), path or "spec")
            )
        return None, problems


def mind_view(source: str) -> MindView:
    """The mind's authority (locked capabilities, policy, budget) from a Mind manifest or spec.
    A Mind that does not fit its model is unreadable: validating against a guess would mislead."""
    document = load_mapping(read_text(source), source)
    spec, name = _spec_of(document, "Mind", source)
    try:
        parsed = MindSpec.model_validate(spec)
    except ValidationError as exc:
        detail = "; ".join(f"{_path(e['loc'])}: {e['msg']}" for e in exc.errors()[:5])
        raise Unreadable(f"{source} is not a valid Mind: {detail}") from exc
    metadata = document.get("metadata")
    namespace = metadata.get("namespace") if isinstance(metadata, dict) else None
    return MindView.from_spec(name, str(namespace or "default"), parsed)

"""Reading a model's plan proposal into the same structure every plan has.

A proposal is untrusted text. Reading it never raises: text that is not JSON, too large, too
deeply nested, of the wrong shape or with unknown fields becomes a validation error with the
field path, and the result is a draft that never runs.

Fields that could carry authority or claim progress (`approved`, `authorised`, `status`,
`completed`, `policy`, `requireApproval`, `granted`, and anything else of that kind) are not
part of a plan. They are removed wherever they appear, however deeply nested, and each is listed
as ignored in the warnings with its path: approval requirements come only from commitments and
policy, and progress only from observation. Fields the planner owns (origin, strategy, revision,
budget, estimate, alternatives, links, the objective) are likewise ignored and set by the
planner.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Final

from pydantic import ValidationError

from minds.domain.capabilities.registry import CapabilityRegistry
from minds.domain.planning.model import (
    MAX_ISSUES,
    MAX_STEPS,
    STEP_KEY_PATTERN,
    Comparison,
    InternalAction,
    IssueCode,
    Plan,
    PlanOrigin,
    Step,
    Strategy,
    ValidationIssue,
    ValidationResult,
)
from minds.domain.planning.validation import KIND_FIELDS, bounded, validate
from minds.domain.planning.views import MindView

MAX_PROPOSAL_BYTES: Final = 64 * 1024
MAX_PROPOSAL_DEPTH: Final = 16

# Key names are compared after lower-casing and dropping everything but letters and digits, so
# `require_approval`, `requireApproval` and `Require-Approval` are one name.
# fmt: off
AUTHORITY_KEYS: Final = frozenset({
    "status", "state", "phase", "completed", "complete", "done", "finished", "succeeded",
    "success", "result", "results", "outcome", "executed", "verified", "confirmed", "decision",
    "decidedby", "attempts", "lease", "observation", "observations", "sudo", "trusted",
    "allowed", "allow", "elevated", "admin",
})
# Any key containing one of these is about authority, whatever surrounds it
# (`approvalStatus`, `grantedBy`, `policyOverride`, `preauthorized`, `bypassChecks`).
AUTHORITY_MARKERS: Final = (
    "authori", "approv", "grant", "polic", "permi", "privileg", "bypass", "override", "skipcheck",
)
PLANNER_KEYS: Final = frozenset({
    "objective", "origin", "strategy", "revision", "supersedes", "supersededby", "intention",
    "mind", "estimate", "budget", "alternatives", "validation",
})
# fmt: on
_FENCE = re.compile(r"^\s*```[A-Za-z]*[ \t]*\r?\n(?P<body>.*?)\r?\n\s*```\s*$", re.DOTALL)
_STEPS_PATH = re.compile(r"^steps\[(\d+)\]")


def normalise_key(key: str) -> str:
    return "".join(ch for ch in key.lower() if ch.isalnum())


def claims_authority(key: str) -> bool:
    name = normalise_key(key)
    return name in AUTHORITY_KEYS or any(marker in name for marker in AUTHORITY_MARKERS)


@dataclass
class ProposalReading:
    """A proposal read into a plan, before validation: the plan (with no steps when the text
    could not be read at all) and what reading it found."""

    plan: Plan
    errors: list[ValidationIssue] = field(default_factory=list)
    warnings: list[ValidationIssue] = field(default_factory=list)

    @property
    def readable(self) -> bool:
        return not self.errors


class _Unreadable(Exception):
    def __init__(self, code: IssueCode, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


def read_proposal(
    text: str | bytes,
    *,
    objective: str,
    intention: str | None = None,
    mind: str | None = None,
    revision: int = 1,
) -> ProposalReading:
    """Read a proposal into a `model`-origin plan; never raises. The caller validates it."""
    skeleton = Plan(
        objective=(objective.strip() or "(no objective)")[:500],
        origin=PlanOrigin.MODEL,
        strategy=Strategy.MODEL,
        intention=intention,
        mind=mind,
        revision=revision,
    )
    try:
        document = _load(text)
    except _Unreadable as problem:
        return ProposalReading(skeleton, errors=[_issue(problem.code, problem.message)])
    ignored: list[str] = []
    cleaned = _strip(document, "", ignored)
    assert isinstance(cleaned, dict)
    warnings = [
        _issue(
            IssueCode.IGNORED_FIELD,
            f"ignored {path}: authority and progress come only from policy, commitments, "
            "approvals and observation, never from a proposal",
            field=path,
        )
        for path in ignored
    ]
    for key in sorted(k for k in cleaned if normalise_key(k) in PLANNER_KEYS):
        del cleaned[key]
        warnings.append(
            _issue(IssueCode.IGNORED_FIELD, f"ignored {key}: the planner sets it", field=key)
        )
    try:
        plan = Plan.model_validate({**cleaned, **_owned(skeleton)})
    except ValidationError as error:
        return ProposalReading(skeleton, errors=_schema_issues(error, cleaned), warnings=warnings)
    return ProposalReading(plan, warnings=warnings)


def parse_proposal(
    text: str | bytes,
    *,
    objective: str,
    registry: CapabilityRegistry,
    mind: MindView,
    intention: str | None = None,
    revision: int = 1,
) -> tuple[Plan, ValidationResult]:
    """Read and validate a proposal: the draft and its full validation result."""
    reading = read_proposal(
        text,
        objective=objective,
        intention=intention,
        mind=mind.name or None,
        revision=revision,
    )
    return reading.plan, combine(reading, validate(reading.plan, registry, mind))


def combine(reading: ProposalReading, result: ValidationResult) -> ValidationResult:
    """Reading issues first, then validation's; an unreadable proposal reports only why."""
    if not reading.readable:
        return ValidationResult(errors=bounded(reading.errors), warnings=bounded(reading.warnings))
    return ValidationResult(
        errors=bounded([*reading.errors, *result.errors]),
        warnings=bounded([*reading.warnings, *result.warnings]),
        order=result.order,
    )


def _owned(skeleton: Plan) -> dict[str, Any]:
    return skeleton.model_dump(
        by_alias=True,
        exclude_none=True,
        include={"objective", "origin", "strategy", "intention", "mind", "revision"},
    )


def _issue(code: IssueCode, message: str, *, field: str | None = None) -> ValidationIssue:
    return ValidationIssue(code=code, message=message[:2000], field=field[:300] if field else None)


def _load(text: str | bytes) -> dict[str, Any]:
    raw = text if isinstance(text, bytes) else text.encode("utf-8", errors="replace")
    if len(raw) > MAX_PROPOSAL_BYTES:
        raise _Unreadable(
            IssueCode.PROPOSAL_TOO_LARGE,
            f"the proposal is {len(raw)} bytes; at most {MAX_PROPOSAL_BYTES} are read",
        )
    try:
        decoded = raw.decode("utf-8") if isinstance(text, bytes) else text
    except UnicodeDecodeError as error:
        raise _Unreadable(
            IssueCode.MALFORMED_PROPOSAL, f"the proposal is not UTF-8 text: {error.reason}"
        ) from None
    fenced = _FENCE.match(decoded)
    body = fenced.group("body") if fenced else decoded
    if _depth_exceeds(body, MAX_PROPOSAL_DEPTH):
        raise _Unreadable(
            IssueCode.PROPOSAL_TOO_DEEP,
            f"the proposal nests deeper than {MAX_PROPOSAL_DEPTH} levels",
        )
    try:
        document = json.loads(
            body,
            object_pairs_hook=_no_duplicate_keys,
            parse_constant=_no_constant,
            parse_float=_finite_float,
        )
    except (ValueError, RecursionError) as error:
        raise _Unreadable(
            IssueCode.MALFORMED_PROPOSAL, f"the proposal is not valid JSON: {error}"
        ) from None
    if not isinstance(document, dict):
        raise _Unreadable(
            IssueCode.MALFORMED_PROPOSAL,
            f"a proposal is a JSON object with steps, not {type(document).__name__}",
        )
    return document


def _depth_exceeds(text: str, limit: int) -> bool:
    """Whether JSON brackets nest deeper than `limit`, counted before parsing so a hostile
    document cannot exhaust the parser."""
    depth = 0
    in_string = escaped = False
    for ch in text:
        if in_string:
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == '"':
                in_string = False
        elif ch == '"':
            in_string = True
        elif ch in "[{":
            depth += 1
            if depth > limit:
                return True
        elif ch in "]}":
            depth -= 1
    return False


def _no_duplicate_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    document: dict[str, Any] = {}
    for key, value in pairs:
        if key in document:
            # A repeated key lets two readers see two different plans; refuse it.
            raise ValueError(f"key {key!r} appears twice in one object")
        document[key] = value
    return document


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON number")


def _finite_float(text: str) -> float:
    number = float(text)
    if not math.isfinite(number):
        raise ValueError(f"{text} is out of range")
    return number


def _strip(value: Any, path: str, ignored: list[str]) -> Any:
    """A copy without authority-claiming keys, recording each removed key's path."""
    if isinstance(value, dict):
        kept: dict[str, Any] = {}
        for key, item in value.items():
            here = f"{path}.{key}" if path else key
            if claims_authority(key):
                ignored.append(here)
                continue
            kept[key] = _strip(item, here, ignored)
        return kept
    if isinstance(value, list):
        return [_strip(item, f"{path}[{i}]", ignored) for i, item in enumerate(value)]
    return value


_FRIENDLY: Final[dict[str, Callable[[dict[str, Any]], str]]] = {
    "extra_forbidden": lambda _: "unknown field",
    "missing": lambda _: "required field is missing",
}


def _schema_issues(error: ValidationError, document: dict[str, Any]) -> list[ValidationIssue]:
    issues: list[ValidationIssue] = []
    for problem in error.errors()[:MAX_ISSUES]:
        path = _path(problem["loc"])
        friendly = _FRIENDLY.get(problem["type"])
        message = friendly(dict(problem)) if friendly else problem["msg"]
        issues.append(
            ValidationIssue(
                code=IssueCode.PROPOSAL_SCHEMA,
                message=f"{path or 'proposal'}: {message}"[:2000],
                field=path[:300] or None,
                step=_step_key(path, document),
            )
        )
    return issues


def _path(loc: tuple[int | str, ...]) -> str:
    out = ""
    for part in loc:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out


def _step_key(path: str, document: dict[str, Any]) -> str | None:
    match = _STEPS_PATH.match(path)
    steps = document.get("steps")
    if match is None or not isinstance(steps, list):
        return None
    index = int(match.group(1))
    step = steps[index] if index < len(steps) else None
    key = step.get("key") if isinstance(step, dict) else None
    if isinstance(key, str) and re.fullmatch(STEP_KEY_PATTERN, key):
        return key
    return None


def proposal_vocabulary(registry: CapabilityRegistry, mind: MindView) -> dict[str, Any]:
    """What a model may use in a proposal, as JSON, for the prompt of the `plan` role.

    Locked capabilities are left out. The same rules are enforced on the answer whatever the
    prompt said; this only helps a model propose something that can pass.
    """

    def alias(name: str) -> str:
        return Step.model_fields[name].alias or name

    return {
        "maxSteps": MAX_STEPS,
        "stepKeyPattern": STEP_KEY_PATTERN,
        "stepKinds": {
            kind.value: {
                "required": sorted(alias(n) for n in required),
                "optional": sorted(alias(n) for n in optional),
            }
            for kind, (required, optional) in KIND_FIELDS.items()
        },
        "internalActions": [action.value for action in InternalAction],
        "comparisons": [comparison.value for comparison in Comparison],
        "capabilities": [
            {
                "name": spec.name,
                "summary": spec.summary,
                "readOnly": spec.read_only,
                "idempotent": spec.idempotent,
                "parameters": spec.parameters.model_json_schema(by_alias=True),
                "observationFields": {k: v.value for k, v in spec.observation_fields.items()},
            }
            for spec in registry.specs.values()
            if not mind.locked(spec.name)
        ],
        "notes": [
            "Answer with one JSON object with steps, and optionally assumptions, "
            "completionCriteria, abortConditions and risk.",
            "Fields about approval, authority or progress are ignored: approval comes only "
            "from policy and commitments, progress only from observation.",
        ],
    }

"""The plan as data: what the planner writes, what validation judges and what the executor runs.

One `Plan` model renders to the `Plan` custom resource spec (`to_k8s()`) and parses back from it
(`Plan.model_validate`). The schema is generated for the API server, so it stays structural:
one `Step` model with a `kind` and optional per-kind fields instead of a union, string enums,
integer seconds for durations, no recursion, bounded lists and strings.

The model checks *shape* only (types, enums, lengths, key syntax). Everything that needs the
plan as a whole, the capability vocabulary or the mind (step count, graph, capabilities,
per-kind fields, checks) is judged by `validation.validate`, because an invalid draft must still
be representable: it is stored as a `draft` with its errors and never runs.

Runtime state (per-step status, leases, attempts, observations, approval and grant refs) is
not part of the spec: it lives in `PlanStatusBlock` under the resource's `status`.
"""

from __future__ import annotations

import math
from datetime import datetime
from enum import StrEnum
from typing import Annotated, Any

from pydantic import Field, field_validator

from minds.domain.base import Model
from minds.domain.free_form import FreeForm
from minds.domain.resources.common import CAPABILITY_NAME
from minds.domain.resources.mind import PlanBudget

# The seed's limit on plan size; the model also bounds the stored list so a resource stays small.
MAX_STEPS = 30
STEP_KEY_PATTERN = r"^[A-Z][A-Z0-9]{0,7}$"
DAY_SECONDS = 86_400
WEEK_SECONDS = 7 * DAY_SECONDS

DEFAULT_VERIFY_INTERVAL_SECONDS = 10
DEFAULT_MONITOR_INTERVAL_SECONDS = 30

StepKey = Annotated[str, Field(pattern=STEP_KEY_PATTERN, min_length=1, max_length=8)]
CapabilityName = Annotated[str, Field(pattern=CAPABILITY_NAME, min_length=1, max_length=128)]
ShortText = Annotated[str, Field(max_length=200)]
Text = Annotated[str, Field(max_length=2000)]
Confidence = Annotated[float, Field(ge=0.0, le=1.0)]


class PlanStatus(StrEnum):
    """Plan lifecycle, exactly the seed's vocabulary."""

    DRAFT = "draft"
    VALIDATED = "validated"
    WAITING = "waiting"
    EXECUTING = "executing"
    BLOCKED = "blocked"
    AWAITING_APPROVAL = "awaiting_approval"
    REPLANNING = "replanning"
    COMPLETED = "completed"
    FAILED = "failed"
    ABANDONED = "abandoned"
    SUPERSEDED = "superseded"


class StepStatus(StrEnum):
    """Step lifecycle, exactly the seed's vocabulary."""

    PENDING = "pending"
    READY = "ready"
    EXECUTING = "executing"
    AWAITING_APPROVAL = "awaiting_approval"
    AWAITING_GRANT = "awaiting_grant"
    WAITING = "waiting"
    COMPLETED = "completed"
    FAILED = "failed"
    SKIPPED = "skipped"
    BLOCKED = "blocked"
    CANCELLED = "cancelled"


class StepKind(StrEnum):
    """The closed vocabulary of step kinds."""

    CAPABILITY = "capability"
    REQUEST_CAPABILITY = "request_capability"
    VERIFY = "verify"
    MONITOR = "monitor"
    WAIT = "wait"
    INTERNAL = "internal"


class PlanOrigin(StrEnum):
    """Who or what produced the plan. No origin carries authority."""

    TEMPLATE = "template"
    MODEL = "model"
    OPERATOR = "operator"
    DREAM = "dream"
    REPLAN = "replan"


class Strategy(StrEnum):
    """How the plan was made: the planner's strategies, or `authored` by a person."""

    DIRECT = "direct"
    DIAGNOSE = "diagnose"
    DIAGNOSE_THEN_ESCALATE = "diagnose_then_escalate"
    MODEL = "model"
    AUTHORED = "authored"


class InternalAction(StrEnum):
    """Deterministic internal actions (closed vocabulary).

    `summarise_findings` turns the results of its dependencies into one observation that
    re-enters cognition. `notify_operator` carries the escalation note of
    `diagnose_then_escalate`: it tells the operator what was tried and seen. It acts on nothing
    and needs no capability, so it is an internal action rather than a new step kind.
    """

    SUMMARISE_FINDINGS = "summarise_findings"
    NOTIFY_OPERATOR = "notify_operator"


class Comparison(StrEnum):
    """How a check compares an observed field with the expected value."""

    EQUALS = "equals"
    NOT_EQUALS = "not_equals"
    LESS_THAN = "less_than"
    LESS_OR_EQUAL = "less_or_equal"
    GREATER_THAN = "greater_than"
    GREATER_OR_EQUAL = "greater_or_equal"
    CONTAINS = "contains"

    @property
    def numeric(self) -> bool:
        return self in _NUMERIC_COMPARISONS

    def holds(self, observed: object, expected: str) -> bool:
        """Whether `observed` compares as required with `expected` (always a string).

        Unparseable numbers do not hold: an observation that cannot be compared is not
        evidence that the expectation was met.
        """
        if self.numeric:
            left, right = as_number(observed), as_number(expected)
            if left is None or right is None:
                return False
            return _compare_numbers(self, left, right)
        if self in (Comparison.EQUALS, Comparison.NOT_EQUALS):
            left, right = as_number(observed), as_number(expected)
            if left is not None and right is not None:
                same = left == right
            else:
                same = render_scalar(observed) == expected
            return same if self is Comparison.EQUALS else not same
        text = render_scalar(observed)
        if isinstance(observed, list | tuple):
            return expected in (render_scalar(item) for item in observed)
        return expected in text


_NUMERIC_COMPARISONS = frozenset(
    {
        Comparison.LESS_THAN,
        Comparison.LESS_OR_EQUAL,
        Comparison.GREATER_THAN,
        Comparison.GREATER_OR_EQUAL,
    }
)


def _compare_numbers(comparison: Comparison, left: float, right: float) -> bool:
    if comparison is Comparison.LESS_THAN:
        return left < right
    if comparison is Comparison.LESS_OR_EQUAL:
        return left <= right
    if comparison is Comparison.GREATER_THAN:
        return left > right
    return left >= right


def render_scalar(value: object) -> str:
    """The canonical text of an observed or expected scalar (JSON spelling for booleans)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if value is None:
        return "null"
    return str(value)


def as_number(value: object) -> float | None:
    """A finite number from a JSON number or its text; None for anything else (booleans too)."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int | float):
        number = float(value)
    elif isinstance(value, str):
        try:
            number = float(value)
        except ValueError:
            return None
    else:
        return None
    return number if math.isfinite(number) else None


class Check(Model):
    """A read-only observation and what it must show.

    `value` is always text so the schema stays structural; numbers and booleans written by a
    person or a model are accepted and kept in their canonical spelling.
    """

    capability: CapabilityName
    parameters: FreeForm | None = None
    field: Annotated[str, Field(min_length=1, max_length=64)]
    comparison: Comparison
    value: Annotated[str, Field(max_length=200)]

    @field_validator("value", mode="before")
    @classmethod
    def _scalar_as_text(cls, value: object) -> object:
        if isinstance(value, bool | int | float):
            return render_scalar(value)
        return value


class Expectation(Model):
    """What should follow a capability step, how sure we are, and for how long to look."""

    description: Text
    check: Check
    confidence: Confidence
    window_seconds: Annotated[int, Field(ge=1, le=DAY_SECONDS)]


class Precondition(Model):
    """A read-only check that must hold before the step acts; otherwise the step is skipped.

    `fulfils_intention_on_skip` says that the world already is as the intention wanted (the unit
    is healthy again), so skipping fulfils the intention without acting.
    """

    description: Text
    check: Check
    fulfils_intention_on_skip: bool = False


class CapabilityRequest(Model):
    """A structured request for temporary, scoped authority, decided by an operator."""

    capability: CapabilityName
    target_pattern: Annotated[str, Field(max_length=253)]
    parameter_limits: FreeForm | None = None
    duration_seconds: Annotated[int, Field(ge=60, le=WEEK_SECONDS)]
    operation_cap: Annotated[int, Field(ge=1, le=1000)]
    reason: Text
    risk: Text
    mitigation: Text
    fallback: Text
    alternatives: Annotated[list[ShortText], Field(max_length=10)] = []


class Step(Model):
    """One node of the plan's graph. Which optional fields apply depends on `kind`:

    - capability: `capability`, `parameters`, `target`, `expectation`, `precondition`,
      `requiresApproval`, `maxAttempts`;
    - request_capability: `request`;
    - verify: `verifies` (the step whose expectation it resolves), `intervalSeconds`;
    - monitor: `check`, `stableSeconds`, `deadlineSeconds`, `intervalSeconds`;
    - wait: `waitSeconds`;
    - internal: `internalAction`, `note`.
    """

    key: StepKey
    title: ShortText
    kind: StepKind
    depends_on: Annotated[list[StepKey], Field(max_length=MAX_STEPS)] = []
    capability: CapabilityName | None = None
    parameters: FreeForm | None = None
    target: Annotated[str, Field(max_length=253)] | None = None
    expectation: Expectation | None = None
    precondition: Precondition | None = None
    requires_approval: bool = False
    max_attempts: Annotated[int, Field(ge=1, le=10)] | None = None
    request: CapabilityRequest | None = None
    verifies: StepKey | None = None
    check: Check | None = None
    stable_seconds: Annotated[int, Field(ge=1, le=WEEK_SECONDS)] | None = None
    deadline_seconds: Annotated[int, Field(ge=1, le=WEEK_SECONDS)] | None = None
    interval_seconds: Annotated[int, Field(ge=1, le=DAY_SECONDS)] | None = None
    wait_seconds: Annotated[int, Field(ge=1, le=WEEK_SECONDS)] | None = None
    internal_action: InternalAction | None = None
    note: Text | None = None

    @property
    def attempts_allowed(self) -> int:
        return self.max_attempts if self.max_attempts is not None else 1

    @property
    def poll_interval_seconds(self) -> int:
        """How often a verify or monitor step looks, when the step does not say."""
        if self.interval_seconds is not None:
            return self.interval_seconds
        if self.kind == StepKind.MONITOR:
            return DEFAULT_MONITOR_INTERVAL_SECONDS
        return DEFAULT_VERIFY_INTERVAL_SECONDS


class Assumption(Model):
    """A belief the plan relies on, and the confidence below which the plan is reconsidered."""

    belief: Text
    min_confidence: Confidence


class ResourceUse(Model):
    """Resources a plan is estimated to use, or actually used."""

    invocations: Annotated[
        int,
        Field(ge=0, description="Capability invocations of capability steps (not checks)."),
    ] = 0
    checks: Annotated[
        int,
        Field(
            ge=0,
            description="Looks of read-only checks: preconditions, verify and monitor polls.",
        ),
    ] = 0
    approvals: Annotated[
        int, Field(ge=0, description="Approvals asked of people, capability requests included.")
    ] = 0
    wall_seconds: Annotated[
        int, Field(ge=0, description="Seconds from the first step on (estimated only).")
    ] = 0
    network_operations: Annotated[
        int, Field(ge=0, description="Invocations that leave the cluster and the host.")
    ] = 0
    money: Annotated[
        float,
        Field(ge=0.0, description="Money, as the capability registry prices capabilities."),
    ] = 0.0
    tokens: Annotated[
        int, Field(ge=0, description="Model tokens used to propose the plan (estimated only).")
    ] = 0


# An estimate measures the same resources as actual use.
Estimate = ResourceUse

# The Mind's per-plan budget is the plan's budget: one type, so the planner copies it as it is.
# Invocations (20) and checks (200) are always capped; wall time, money and approvals optionally.
Budget = PlanBudget


class Alternative(Model):
    """A strategy the planner considered, what it would have cost and why it was (not) chosen.

    Estimate, confidence and score are absent for strategies that did not apply at all.
    """

    strategy: Strategy
    selected: bool
    reason: Text
    estimate: ResourceUse | None = None
    expected_confidence: Confidence | None = None
    score: float | None = None


class Cancellation(Model):
    """A person stopped the plan, in their own name (admission checks `by`)."""

    by: Annotated[str, Field(min_length=1, max_length=253)] = Field(
        description="Who cancelled the plan: the authenticated username of the requester."
    )
    reason: Annotated[str, Field(min_length=1, max_length=1024)] = Field(
        description="Why the plan was cancelled; kept in the ledger with the name."
    )


class Plan(Model):
    """The `Plan` resource's spec: explicit, revisable work for one intention."""

    objective: Annotated[str, Field(min_length=1, max_length=500)]
    origin: PlanOrigin
    strategy: Strategy
    mind: Annotated[str, Field(max_length=253)] | None = None
    intention: Annotated[str, Field(max_length=128)] | None = None
    revision: Annotated[int, Field(ge=1, le=1000)] = 1
    supersedes: Annotated[str, Field(max_length=253)] | None = None
    superseded_by: Annotated[str, Field(max_length=253)] | None = None
    steps: Annotated[list[Step], Field(max_length=MAX_STEPS)] = []
    assumptions: Annotated[list[Assumption], Field(max_length=20)] = []
    completion_criteria: Annotated[list[Text], Field(max_length=20)] = []
    abort_conditions: Annotated[list[Text], Field(max_length=20)] = []
    risk: Text | None = None
    estimate: ResourceUse = ResourceUse()
    budget: Budget = Budget()
    alternatives: Annotated[list[Alternative], Field(max_length=10)] = []
    #: Who wrote a plan applied by a person (origin ``operator``): the admission policy
    #: requires it to be the requester's own username, so four eyes can hold (the author does
    #: not approve its steps unless the Mind says so).
    author: Annotated[str, Field(min_length=1, max_length=253)] | None = None
    cancellation: Cancellation | None = Field(
        default=None,
        description="Set by a person to stop the plan (kubectl minds cancel plan): the executor "
        "stops it at a safe point, withdraws its pending Approvals and concludes its intention. "
        "The only field of a Plan's spec a person may change after creation, once.",
    )

    def step(self, key: str) -> Step | None:
        return next((step for step in self.steps if step.key == key), None)


MAX_ISSUES = 100


class IssueCode(StrEnum):
    """Every reason validation or proposal parsing can give, so readers can grep for it."""

    STEP_COUNT = "step_count"
    INVALID_KEY = "invalid_key"
    DUPLICATE_KEY = "duplicate_key"
    MISSING_TITLE = "missing_title"
    UNKNOWN_DEPENDENCY = "unknown_dependency"
    SELF_DEPENDENCY = "self_dependency"
    DUPLICATE_DEPENDENCY = "duplicate_dependency"
    DEPENDENCY_CYCLE = "dependency_cycle"
    UNKNOWN_KIND = "unknown_kind"
    MISSING_FIELD = "missing_field"
    FIELD_NOT_ALLOWED = "field_not_allowed"
    UNKNOWN_CAPABILITY = "unknown_capability"
    LOCKED_CAPABILITY = "locked_capability"
    INVALID_PARAMETERS = "invalid_parameters"
    TARGET_MISMATCH = "target_mismatch"
    CHECK_NOT_READ_ONLY = "check_not_read_only"
    UNKNOWN_COMPARISON = "unknown_comparison"
    UNKNOWN_OBSERVATION_FIELD = "unknown_observation_field"
    COMPARISON_TYPE = "comparison_type"
    CHECK_TARGET_DIFFERS = "check_target_differs"
    VERIFY_UNKNOWN_STEP = "verify_unknown_step"
    VERIFY_NOT_DEPENDENT = "verify_not_dependent"
    VERIFY_NO_EXPECTATION = "verify_no_expectation"
    UNKNOWN_INTERNAL_ACTION = "unknown_internal_action"
    SUMMARY_WITHOUT_DEPENDENCIES = "summary_without_dependencies"
    MONITOR_STABLE_EXCEEDS_DEADLINE = "monitor_stable_exceeds_deadline"
    TOO_MANY_ATTEMPTS = "too_many_attempts"
    MISSING_EXPECTATION = "missing_expectation"
    POLICY_DENIES = "policy_denies"
    ESTIMATE_OVER_BUDGET = "estimate_over_budget"
    MALFORMED_PROPOSAL = "malformed_proposal"
    PROPOSAL_TOO_LARGE = "proposal_too_large"
    PROPOSAL_TOO_DEEP = "proposal_too_deep"
    PROPOSAL_SCHEMA = "proposal_schema"
    IGNORED_FIELD = "ignored_field"
    TRUNCATED = "truncated"
    UNKNOWN_MIND = "unknown_mind"
    SCHEMA = "schema"
    DREAM = "dream"


class ValidationIssue(Model):
    """One finding, precise enough for a `kubectl describe` reader to find the field.

    `field` is a path in the spec's own spelling, such as `steps[2].parameters.name`; `steps`
    names every step involved when there are several (a dependency cycle).
    """

    code: IssueCode
    message: Text
    step: StepKey | None = None
    field: Annotated[str, Field(max_length=300)] | None = None
    steps: Annotated[list[StepKey], Field(max_length=MAX_STEPS)] | None = None


class ValidationResult(Model):
    """Errors make a draft; warnings do not. `order` is a topological order of the step keys
    (Kahn's algorithm, ties broken by position in the plan), present when the graph has one."""

    errors: Annotated[list[ValidationIssue], Field(max_length=MAX_ISSUES)] = []
    warnings: Annotated[list[ValidationIssue], Field(max_length=MAX_ISSUES)] = []
    order: Annotated[list[StepKey], Field(max_length=MAX_STEPS)] | None = None

    @property
    def ok(self) -> bool:
        return not self.errors

    @property
    def status(self) -> PlanStatus:
        """The status the plan must get: only a plan without errors may leave `draft`."""
        return PlanStatus.VALIDATED if self.ok else PlanStatus.DRAFT


class Lease(Model):
    """Who claimed a step and until when; an expired lease means the claimant stopped."""

    holder: Annotated[str, Field(max_length=253)]
    expires_at: datetime


class Observation(Model):
    """What a step saw: a summary for people and the reported fields for checks."""

    summary: Text
    fields: dict[str, Any] | None = None
    holds: bool | None = None
    observed_at: datetime | None = None


class StepState(Model):
    """Runtime state of one step, kept under the resource's `status`."""

    key: StepKey
    status: StepStatus = StepStatus.PENDING
    attempts: Annotated[int, Field(ge=0)] = 0
    lease: Lease | None = None
    next_run_at: datetime | None = None
    started_at: datetime | None = None
    finished_at: datetime | None = None
    observation: Observation | None = None
    reason: Text | None = None
    approval_ref: Annotated[str, Field(max_length=253)] | None = None
    grant_ref: Annotated[str, Field(max_length=253)] | None = None
    execution_ref: Annotated[str, Field(max_length=253)] | None = None
    prediction_ref: Annotated[str, Field(max_length=253)] | None = None
    #: A monitor's check has held without interruption since this time.
    holds_since: datetime | None = None


class PlanStatusBlock(Model):
    """The `Plan` resource's status: phase, per-step state, actual use and validation."""

    phase: PlanStatus = PlanStatus.DRAFT
    steps: Annotated[list[StepState], Field(max_length=MAX_STEPS)] = []
    actual: ResourceUse = ResourceUse()
    validation: ValidationResult | None = None
    reason: Text | None = None

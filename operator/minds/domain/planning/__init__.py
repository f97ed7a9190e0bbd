"""Planning: the plan model, validation, model proposals, strategies and the planner.

Everything here is pure: the engine reads the world, calls these functions with what it read
(and the clock), and writes the result.
"""

from minds.domain.planning.model import (
    Alternative,
    Assumption,
    Budget,
    CapabilityRequest,
    Check,
    Comparison,
    Expectation,
    InternalAction,
    IssueCode,
    Plan,
    PlanOrigin,
    PlanStatus,
    PlanStatusBlock,
    Precondition,
    ResourceUse,
    Step,
    StepKind,
    StepState,
    StepStatus,
    Strategy,
    ValidationIssue,
    ValidationResult,
)
from minds.domain.planning.planner import (
    ModelProposal,
    PlanningOutcome,
    PlanningResult,
    make_plan,
)
from minds.domain.planning.proposal import parse_proposal, proposal_vocabulary, read_proposal
from minds.domain.planning.scoring import estimate, score
from minds.domain.planning.validation import validate
from minds.domain.planning.views import (
    FailedAttempt,
    IntentionKind,
    IntentionView,
    Means,
    MindView,
    Workload,
)

__all__ = [
    "Alternative",
    "Assumption",
    "Budget",
    "CapabilityRequest",
    "Check",
    "Comparison",
    "Expectation",
    "FailedAttempt",
    "IntentionKind",
    "IntentionView",
    "InternalAction",
    "IssueCode",
    "Means",
    "MindView",
    "ModelProposal",
    "Plan",
    "PlanOrigin",
    "PlanStatus",
    "PlanStatusBlock",
    "PlanningOutcome",
    "PlanningResult",
    "Precondition",
    "ResourceUse",
    "Step",
    "StepKind",
    "StepState",
    "StepStatus",
    "Strategy",
    "ValidationIssue",
    "ValidationResult",
    "Workload",
    "estimate",
    "make_plan",
    "parse_proposal",
    "proposal_vocabulary",
    "read_proposal",
    "score",
    "validate",
]

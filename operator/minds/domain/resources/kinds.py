"""The table of our custom resource kinds: names, models and what ``kubectl get`` shows.

One table serves the CRD generator, the controller's handler registration and the RBAC
manifest, so a new column or short name is declared once.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from minds.domain.base import Model
from minds.domain.resources.approval import ApprovalSpec, ApprovalStatus
from minds.domain.resources.common import API_GROUP, API_VERSION
from minds.domain.resources.grant import CapabilityGrantSpec, CapabilityGrantStatus
from minds.domain.resources.mind import MindSpec, MindStatus
from minds.domain.resources.plan import PlanResourceStatus, PlanSpec

#: ``kubectl get minds-all`` lists every kind of ours. Not ``minds``: a category named like a
#: resource's plural shadows it, and ``kubectl get minds`` would print every kind.
CATEGORY = "minds-all"


@dataclass(frozen=True)
class Column:
    name: str
    json_path: str
    type: str = "string"
    priority: int = 0
    description: str = ""
    format: str | None = None


@dataclass(frozen=True)
class Kind:
    kind: str
    plural: str
    singular: str
    short_names: tuple[str, ...]
    spec: type[Model]
    status: type[Model]
    columns: tuple[Column, ...] = field(default_factory=tuple)
    description: str = ""

    @property
    def group(self) -> str:
        return API_GROUP

    @property
    def version(self) -> str:
        return API_VERSION

    @property
    def crd_name(self) -> str:
        return f"{self.plural}.{API_GROUP}"


_READY = '.status.conditions[?(@.type=="Ready")].status'
_AGE = Column("Age", ".metadata.creationTimestamp", "date")
#: The timestamp itself: kubectl renders a ``date`` column as the age, and a time still to come
#: has no age (it prints ``<invalid>``).
_EXPIRES = Column("Expires", ".spec.expiresAt", description="When it expires (UTC).")

MIND = Kind(
    kind="Mind",
    plural="minds",
    singular="mind",
    short_names=(),
    spec=MindSpec,
    status=MindStatus,
    description="A mind: an agent that looks after infrastructure under inspectable authority.",
    columns=(
        Column("Active", ".spec.active", "boolean"),
        Column("Ready", _READY),
        Column(
            "Reason",
            '.status.conditions[?(@.type=="Ready")].reason',
            description="Why the Mind is (not) Ready: Accepted, LedgerUnavailable, CycleStalled...",
        ),
        Column(
            "Attention",
            '.status.conditions[?(@.type=="NeedsAttention")].reason',
            description="What most needs a person (kubectl describe names each item).",
        ),
        Column("Wants", ".status.openWants", "integer"),
        Column("Intentions", ".status.openIntentions", "integer"),
        Column("Plans", ".status.openPlans", "integer"),
        Column("Approvals", ".status.pendingApprovals", "integer"),
        Column("Last-Cycle", ".status.lastCycleAt", "date"),
        _AGE,
    ),
)

PLAN = Kind(
    kind="Plan",
    plural="plans",
    singular="plan",
    short_names=("mplan",),
    spec=PlanSpec,
    status=PlanResourceStatus,
    description="A validated, revisable graph of typed steps serving one intention of a mind.",
    columns=(
        Column("Mind", ".spec.mind"),
        Column("Phase", ".status.phase"),
        Column("Progress", ".status.progress"),
        Column("Waiting-On", ".status.waitingOn"),
        Column("Strategy", ".spec.strategy"),
        Column("Revision", ".spec.revision", "integer"),
        Column("Objective", ".spec.objective", priority=1),
        _AGE,
    ),
)

APPROVAL = Kind(
    kind="Approval",
    plural="approvals",
    singular="approval",
    short_names=("mapproval", "apv"),
    spec=ApprovalSpec,
    status=ApprovalStatus,
    description="A request from a mind that a person decides with kubectl patch.",
    columns=(
        Column("Mind", ".spec.mind"),
        Column("Kind", ".spec.kind"),
        Column("Capability", ".spec.capability"),
        Column("Target", ".spec.target"),
        Column("Phase", ".status.phase"),
        Column("Decided-By", ".spec.decidedBy"),
        _EXPIRES,
        Column("What", ".spec.explanation.what", priority=1),
        _AGE,
    ),
)

CAPABILITY_GRANT = Kind(
    kind="CapabilityGrant",
    plural="capabilitygrants",
    singular="capabilitygrant",
    short_names=("grant", "cgrant"),
    spec=CapabilityGrantSpec,
    status=CapabilityGrantStatus,
    description="Temporary, scoped authority for one mind to use one capability.",
    columns=(
        Column("Mind", ".spec.mind"),
        Column("Capability", ".spec.capability"),
        Column("Target", ".spec.targetPattern"),
        Column("Phase", ".status.phase"),
        Column("Used", ".status.operationsUsed", "integer"),
        Column("Cap", ".spec.operationCap", "integer"),
        _EXPIRES,
        _AGE,
    ),
)

KINDS: tuple[Kind, ...] = (MIND, PLAN, APPROVAL, CAPABILITY_GRANT)

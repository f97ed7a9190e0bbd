"""Executions: what a mind did through a capability, recorded before and after the act.

The write-ahead row is written before the side effect, keyed by the origin of the invocation
(plan uid, step, attempt; or the cycle of a check). Its outcome is a second row written
after. A write-ahead row without an outcome is evidence that the action may have happened:
after a crash, nothing pretends to know more than that.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Annotated

from pydantic import AwareDatetime, Field, JsonValue

from minds.domain.base import Model
from minds.domain.ledger import idempotency_key

Name = Annotated[str, Field(min_length=1, max_length=253)]


class ExecutionOrigin(Model):
    """Where an invocation came from: a plan step (plan uid, step, attempt), or failing that an
    approval or a cycle. The
    origin key is derived from that alone, never from the clock nor from the Approval that
    authorised it: an Approval deleted and re-created (another uid) still names the same step
    and attempt, so its decision finds the row already written and nothing runs twice.
    ``approval`` and ``approvalUid`` only say which Approval object was the authority."""

    plan: str | None = None
    plan_uid: str | None = None
    step: str | None = None
    attempt: int | None = Field(default=None, ge=1)
    approval: str | None = None
    approval_uid: str | None = None
    cycle: str | None = None

    def key(self) -> str:
        if self.plan_uid and self.step and self.attempt:
            return idempotency_key("execution", "step", self.plan_uid, self.step, str(self.attempt))
        if self.approval_uid:
            return idempotency_key("execution", "approval", self.approval_uid)
        if self.cycle:
            return idempotency_key("execution", "cycle", self.cycle)
        raise ValueError("an execution origin names a plan step, an approval or a cycle")


class ExecutionStatus(StrEnum):
    EXECUTED = "executed"
    FAILED = "failed"


class ExecutionRecord(Model):
    """The write-ahead row."""

    origin_key: Annotated[str, Field(min_length=1, max_length=200)]
    mind: Name
    namespace: Name
    capability: Name
    target: Annotated[str, Field(max_length=2048)]
    parameters: dict[str, JsonValue] = Field(default_factory=dict)
    origin: ExecutionOrigin
    evidence: dict[str, JsonValue] = Field(default_factory=dict)
    authority: dict[str, JsonValue] = Field(default_factory=dict)
    started_at: AwareDatetime
    id: int | None = None


class ExecutionOutcome(Model):
    """The row written after the act: what the driver reported, bounded."""

    execution_id: int
    status: ExecutionStatus
    summary: Annotated[str, Field(max_length=4096)]
    fields: dict[str, JsonValue] = Field(default_factory=dict)
    output: JsonValue = None
    error: Annotated[str, Field(max_length=4096)] | None = None
    finished_at: AwareDatetime

"""Adopting what happened: the status a step gets after it acted, observed or waited.

Each function takes the step's state as freshly read and what the world reported, and returns
the new state plus the records that must follow it in the ledger (``Effect``). They are pure
and deterministic, so the engine can re-apply one to a re-read status after a write conflict
without changing the outcome.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timedelta
from enum import StrEnum
from typing import Any

from minds.domain.execution.machine import retry_delay
from minds.domain.planning.model import (
    Check,
    Observation,
    Plan,
    Step,
    StepKind,
    StepState,
    StepStatus,
)

#: When the operator-attention cap is reached, a request step asks again after this long.
ATTENTION_RETRY = timedelta(minutes=10)


class ActKind(StrEnum):
    EXECUTED = "executed"
    PENDING = "pending"
    DENIED = "denied"
    FAILED = "failed"
    DEFERRED = "deferred"


@dataclass(frozen=True)
class Acted:
    """What the capability layer said about one invocation."""

    kind: ActKind
    summary: str
    fields: dict[str, Any] = field(default_factory=dict)
    execution: str | None = None
    approval: str | None = None


class EffectKind(StrEnum):
    OPEN_PREDICTION = "open_prediction"
    CONFIRM_PREDICTION = "confirm_prediction"
    REFUTE_PREDICTION = "refute_prediction"
    EXPIRE_PREDICTION = "expire_prediction"
    BLOCK_INTENTION = "block_intention"
    RESUME_INTENTION = "resume_intention"
    SUSPEND_INTENTION = "suspend_intention"
    UNVERIFIED_INTENTION = "unverified_intention"
    FULFIL_INTENTION = "fulfil_intention"
    FORM_SUBORDINATE = "form_subordinate"
    FULFIL_SUBORDINATE = "fulfil_subordinate"
    RECORD_OBSERVATION = "record_observation"
    NOTIFY_OPERATOR = "notify_operator"


@dataclass(frozen=True)
class Effect:
    kind: EffectKind
    step: str
    reason: str = ""
    data: dict[str, Any] = field(default_factory=dict)


def _finish(state: StepState, status: StepStatus, now: datetime, **update: Any) -> StepState:
    return state.model_copy(
        update={"status": status, "lease": None, "finished_at": now, "next_run_at": None, **update}
    )


def _wait(state: StepState, until: datetime, **update: Any) -> StepState:
    return state.model_copy(
        update={"status": StepStatus.WAITING, "lease": None, "next_run_at": until, **update}
    )


def after_act(
    step: Step, state: StepState, acted: Acted, now: datetime
) -> tuple[StepState, list[Effect]]:
    """A capability or request step has invoked the capability layer."""
    observation = Observation(
        summary=acted.summary[:2000], fields=acted.fields or None, observed_at=now
    )
    if acted.kind is ActKind.EXECUTED:
        effects: list[Effect] = []
        if step.expectation is not None:
            effects.append(
                Effect(
                    EffectKind.OPEN_PREDICTION,
                    step.key,
                    data={
                        "window_start": now,
                        "window_end": now + timedelta(seconds=step.expectation.window_seconds),
                        "confidence": step.expectation.confidence,
                        "check": step.expectation.check.to_k8s(),
                        "description": step.expectation.description,
                        "execution": acted.execution,
                    },
                )
            )
        done = _finish(
            state,
            StepStatus.COMPLETED,
            now,
            observation=observation,
            execution_ref=acted.execution,
            reason=None,
        )
        return done, effects
    if acted.kind is ActKind.PENDING:
        waiting = (
            StepStatus.AWAITING_GRANT
            if step.kind is StepKind.REQUEST_CAPABILITY
            else StepStatus.AWAITING_APPROVAL
        )
        new = state.model_copy(
            update={
                "status": waiting,
                "lease": None,
                "approval_ref": acted.approval,
                "reason": acted.summary[:2000],
            }
        )
        return new, [
            Effect(EffectKind.BLOCK_INTENTION, step.key, f"waiting for approval {acted.approval}"),
            Effect(
                EffectKind.FORM_SUBORDINATE,
                step.key,
                f"obtain approval {acted.approval}",
                data={"approval": acted.approval},
            ),
        ]
    if acted.kind is ActKind.DEFERRED:
        return _wait(state, now + ATTENTION_RETRY, reason=acted.summary[:2000]), []
    if acted.kind is ActKind.DENIED:
        return _finish(
            state,
            StepStatus.FAILED,
            now,
            reason=f"denied: {acted.summary}"[:2000],
            observation=observation,
        ), []
    # failed: an idempotent step tries again with backoff while attempts remain
    if state.attempts < step.attempts_allowed:
        return _wait(
            state,
            now + retry_delay(state.attempts),
            reason=f"attempt {state.attempts} failed: {acted.summary}"[:2000],
        ), []
    return _finish(
        state,
        StepStatus.FAILED,
        now,
        reason=f"failed: {acted.summary}"[:2000],
        execution_ref=acted.execution,
        observation=observation,
    ), []


@dataclass(frozen=True)
class Looked:
    """The result of one check. ``observable`` False: the observation could not be made."""

    observable: bool
    holds: bool
    summary: str
    fields: dict[str, Any] = field(default_factory=dict)
    #: Denied by policy: waiting will not make it observable.
    permanent: bool = False


def observed_value(check: Check, fields: dict[str, Any]) -> tuple[bool, Any]:
    present = check.field in fields
    return present, fields.get(check.field)


def judge(check: Check, fields: dict[str, Any]) -> bool:
    present, value = observed_value(check, fields)
    return present and check.comparison.holds(value, check.value)


def verify_window(
    plan: Plan, step: Step, states: dict[str, StepState]
) -> tuple[datetime, datetime]:
    """The verified step's window: from when it completed, for its expectation's duration."""
    target = next(s for s in plan.steps if s.key == step.verifies)
    assert target.expectation is not None, "validation guarantees a verified step expects"
    start = states[target.key].finished_at
    assert start is not None, "a verify step runs only after the step it verifies completed"
    return start, start + timedelta(seconds=target.expectation.window_seconds)


def after_verify(
    plan: Plan,
    step: Step,
    state: StepState,
    states: dict[str, StepState],
    looked: Looked,
    now: datetime,
) -> tuple[StepState, list[Effect]]:
    _, window_end = verify_window(plan, step, states)
    observation = Observation(
        summary=looked.summary[:2000],
        fields=looked.fields or None,
        holds=looked.holds if looked.observable else None,
        observed_at=now,
    )
    if looked.observable and looked.holds:
        return _finish(state, StepStatus.COMPLETED, now, observation=observation, reason=None), [
            Effect(
                EffectKind.CONFIRM_PREDICTION,
                step.verifies or step.key,
                data={"observation": observation.to_k8s()},
            )
        ]
    if looked.observable and now >= window_end:
        return _finish(
            state,
            StepStatus.FAILED,
            now,
            observation=observation,
            reason="expectation failed: the check did not hold within the window",
        ), [
            Effect(
                EffectKind.REFUTE_PREDICTION,
                step.verifies or step.key,
                data={"observation": observation.to_k8s()},
            )
        ]
    if not looked.observable and (looked.permanent or now >= window_end):
        return _finish(
            state,
            StepStatus.FAILED,
            now,
            observation=observation,
            reason=f"outcome unverified: {looked.summary}"[:2000],
        ), [
            Effect(
                EffectKind.EXPIRE_PREDICTION,
                step.verifies or step.key,
                data={"observation": observation.to_k8s()},
            )
        ]
    again = min(now + timedelta(seconds=step.poll_interval_seconds), window_end)
    return _wait(state, again, observation=observation), []


def after_monitor(
    step: Step, state: StepState, looked: Looked, now: datetime
) -> tuple[StepState, list[Effect]]:
    assert step.stable_seconds is not None
    assert step.deadline_seconds is not None
    started = state.started_at or now
    deadline = started + timedelta(seconds=step.deadline_seconds)
    observation = Observation(
        summary=looked.summary[:2000],
        fields=looked.fields or None,
        holds=looked.holds if looked.observable else None,
        observed_at=now,
    )
    holds_since = (state.holds_since or now) if looked.observable and looked.holds else None
    if holds_since is not None and now - holds_since >= timedelta(seconds=step.stable_seconds):
        return _finish(
            state,
            StepStatus.COMPLETED,
            now,
            observation=observation,
            holds_since=holds_since,
            reason=None,
        ), []
    if now >= deadline or (not looked.observable and looked.permanent):
        reason = (
            "not stable before the deadline"
            if looked.observable
            else f"not observable: {looked.summary}"
        )
        return _finish(
            state,
            StepStatus.FAILED,
            now,
            observation=observation,
            holds_since=holds_since,
            reason=reason[:2000],
        ), []
    again = now + timedelta(seconds=step.poll_interval_seconds)
    if holds_since is not None:
        again = min(again, holds_since + timedelta(seconds=step.stable_seconds))
    return _wait(state, min(again, deadline), observation=observation, holds_since=holds_since), []


def after_precondition(
    step: Step, state: StepState, looked: Looked, now: datetime
) -> tuple[StepState, list[Effect]] | None:
    """None: the precondition holds, act. Otherwise the step is skipped or blocked."""
    assert step.precondition is not None
    if looked.observable and looked.holds:
        return None
    observation = Observation(
        summary=looked.summary[:2000],
        fields=looked.fields or None,
        holds=looked.holds if looked.observable else None,
        observed_at=now,
    )
    if not looked.observable:
        # Acting blind is what the precondition exists to prevent.
        return _finish(
            state,
            StepStatus.BLOCKED,
            now,
            observation=observation,
            reason=f"precondition not observable: {looked.summary}"[:2000],
        ), []
    effects = []
    if step.precondition.fulfils_intention_on_skip:
        effects.append(
            Effect(
                EffectKind.FULFIL_INTENTION,
                step.key,
                "the world already is as intended; nothing to do",
            )
        )
    skipped = _finish(
        state,
        StepStatus.SKIPPED,
        now,
        observation=observation,
        reason=f"precondition does not hold: {step.precondition.description}"[:2000],
    )
    # The claim counted an attempt; a skipped step never acted.
    return skipped.model_copy(update={"attempts": max(0, state.attempts - 1)}), effects


def after_wait(step: Step, state: StepState, now: datetime) -> tuple[StepState, list[Effect]]:
    assert step.wait_seconds is not None
    until = (state.started_at or now) + timedelta(seconds=step.wait_seconds)
    if now >= until:
        return _finish(state, StepStatus.COMPLETED, now, reason=None), []
    return _wait(state, until), []


def after_approval(
    step: Step,
    state: StepState,
    phase: str,
    message: str,
    now: datetime,
    outcome: Acted | None,
) -> tuple[StepState, list[Effect]] | None:
    """Following an Approval. None: still waiting."""
    if phase in ("Pending", "Approved"):
        return None
    if phase == "Executed":
        if step.kind is StepKind.REQUEST_CAPABILITY:
            done = _finish(
                state, StepStatus.COMPLETED, now, grant_ref=state.approval_ref, reason=None
            )
            return done, [
                Effect(EffectKind.RESUME_INTENTION, step.key, "grant obtained"),
                Effect(EffectKind.FULFIL_SUBORDINATE, step.key, "grant obtained"),
            ]
        assert outcome is not None
        new, effects = after_act(step, state, outcome, now)
        return new, [
            Effect(EffectKind.RESUME_INTENTION, step.key, "approved and executed"),
            Effect(EffectKind.FULFIL_SUBORDINATE, step.key, "approved and executed"),
            *effects,
        ]
    if phase == "Denied":
        reason = f"approval denied: {message}"
    elif phase == "Withdrawn":
        reason = f"approval withdrawn: {message}"
    else:
        reason = "approval expired: nobody decided in time"
    return _finish(state, StepStatus.FAILED, now, reason=reason[:2000]), [
        Effect(EffectKind.RESUME_INTENTION, step.key, reason)
    ]


def summarise_findings(plan: Plan, step: Step, states: dict[str, StepState]) -> str:
    lines = []
    by_key = {s.key: s for s in plan.steps}
    for key in step.depends_on:
        seen = states[key].observation
        title = by_key[key].title if key in by_key else key
        lines.append(f"{title}: {seen.summary if seen else states[key].reason or 'no observation'}")
    return "; ".join(lines)[:2000]

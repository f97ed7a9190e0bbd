"""The approval rules over the fakes of the engine's ports, with a clock the test moves: a
forged status, a decision first seen after the deadline, an approver the Mind no longer names,
each in milliseconds. Admission is not here (the fakes admit anything): these are the
controller's own rules, the ones that must hold without it. The e2e tests
(tests/e2e/test_approval_*.py, test_approvers.py) prove the same against real components."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

import pytest

from minds.domain.approvals import APPROVED_SHOWN_AFTER, Recorded
from minds.domain.errors import Refused
from minds.domain.ledger import EventRecord, SubjectRef, idempotency_key
from minds.domain.resources.kinds import APPROVAL, MIND, Kind
from minds.engine.approval_service import ApprovalService
from tests.unit.engine.harness import NAMESPACE, PAST_THE_LEASE, Crash, World, restart

DAY = timedelta(hours=24)


def stored(world: World, kind: Kind, name: str) -> dict[str, Any]:
    """The object as the API server holds it, to write it as a person (or a forger) would."""
    return world.resources._objects[(kind.plural, NAMESPACE, name)]


def asking() -> tuple[World, str]:
    """A keeper whose policy asks before a restart, named approvers, and a plan waiting."""
    world = World()
    spec = stored(world, MIND, "keeper")["spec"]
    spec["capabilityPolicy"] = [{"capability": "service.restart", "decision": "approve"}]
    spec["approvers"] = {"groups": ["sre"]}
    world.plan("heal", [restart("P1")])
    world.run(world.executor("a"), "heal", until=lambda: "approvalRef" in world.step("heal", "P1"))
    return world, world.step("heal", "P1")["approvalRef"]


def decide(world: World, name: str, decision: str = "Approved", by: str = "alice") -> None:
    stored(world, APPROVAL, name)["spec"] |= {"decision": decision, "decidedBy": by}


def approvals(world: World) -> ApprovalService:
    return ApprovalService(
        resources=world.resources, ledger=world.ledger, events=world.events, clock=world.clock
    )


def looks(world: World, name: str) -> None:
    """What the controller does when the Approval changes: the asking plan's executor looks
    (and acts if it may), and the Approval's handler shows in status what the ledger says."""
    world.executor("a").tick(NAMESPACE, "heal")
    approvals(world).reconcile(NAMESPACE, name)


def phase(world: World, name: str) -> str:
    return str(world.resources.get(APPROVAL, NAMESPACE, name)["status"]["phase"])


def types(world: World, name: str) -> set[str]:
    uid = world.resources.get(APPROVAL, NAMESPACE, name)["metadata"]["uid"]
    return {e.type for e in world.ledger.events(subject_uid=uid)}


def test_a_forged_approved_status_is_put_back_and_nothing_runs() -> None:
    world, name = asking()
    stored(world, APPROVAL, name)["status"] = {"phase": "Approved", "message": "trust me"}
    looks(world, name)
    assert phase(world, name) == "Pending"
    assert world.steps("heal") == {"P1": "awaiting_approval"}
    assert "approval_approved" not in types(world, name)
    assert world.driver.calls == {}


def test_a_decision_in_time_acts_once() -> None:
    world, name = asking()
    decide(world, name)
    world.run(
        world.executor("a"), "heal", until=lambda: world.steps("heal")["P1"] != "awaiting_approval"
    )
    assert phase(world, name) == "Executed"
    assert world.driver.calls == {"service.restart": 1}


def test_a_decision_first_seen_after_the_deadline_is_late_and_nothing_runs() -> None:
    world, name = asking()
    decide(world, name)  # in time; but the controller is away until after the deadline
    world.clock.now += DAY + timedelta(seconds=1)
    looks(world, name)
    assert phase(world, name) == "Expired"
    assert "approval_decision_late" in types(world, name)
    assert "approve a fresh request" in stored(world, APPROVAL, name)["status"]["message"]
    assert world.steps("heal") == {"P1": "failed"}
    assert world.driver.calls == {}


def test_an_approver_the_mind_no_longer_names_approves_nothing() -> None:
    world, name = asking()
    stored(world, MIND, "keeper")["spec"]["approvers"] = {"groups": ["another-team"]}
    decide(world, name)
    looks(world, name)
    assert phase(world, name) == "Withdrawn"
    assert "approval_decision_refused" in types(world, name)
    assert world.steps("heal") == {"P1": "failed"}
    assert world.driver.calls == {}


def test_an_approval_recorded_before_the_mind_changed_is_refused_before_acting() -> None:
    world, name = asking()
    decide(world, name)
    approvals(world).reconcile(NAMESPACE, name)  # recorded, not acted on yet
    assert "approval_approved" in types(world, name)
    stored(world, MIND, "keeper")["spec"]["approvers"] = {}
    looks(world, name)
    assert phase(world, name) == "Withdrawn"
    assert world.driver.calls == {}


def test_the_handler_never_shows_a_phase_the_executor_moved_past() -> None:
    """The handler settles a decision; before it writes the status, the executor acts and
    records Executed. The handler's write must show Executed (the ledger read for the object it
    writes), not the Approved it settled: the status guard refuses a terminal phase going back,
    and the refusal was the settlement race that failed the controller."""
    world, name = asking()
    decide(world, name)

    class Overtaken(ApprovalService):
        def settle(
            self, namespace: str, name: str, *, owner_checked: bool = False
        ) -> tuple[dict[str, Any], Recorded]:
            settled = super().settle(namespace, name, owner_checked=owner_checked)
            world.run(
                world.executor("a"),
                "heal",
                until=lambda: world.steps("heal")["P1"] != "awaiting_approval",
            )
            return settled

    handler = Overtaken(
        resources=world.resources, ledger=world.ledger, events=world.events, clock=world.clock
    )
    written = _status_writes(world)
    handler.reconcile(NAMESPACE, name)
    assert phase(world, name) == "Executed"
    assert written[-1] == "Executed"
    assert "Approved" not in written[written.index("Executed") :]
    assert world.driver.calls == {"service.restart": 1}


def test_a_terminal_status_the_guard_keeps_is_reported_and_decides_nothing() -> None:
    """The controller's own token, in other hands, writes Withdrawn where the ledger records
    nothing of the kind. The status guard keeps a terminal phase, so the handler cannot put it
    back: it says so in a Warning, answers with the ledger's phase (Pending, so the expiry is
    still timed) and does not fail; the executor goes on reading the ledger."""
    world, name = asking()
    stored(world, APPROVAL, name)["status"] = {"phase": "Withdrawn", "message": "trust me"}
    replace = world.resources.replace_status

    def guarded(kind: Kind, body: dict[str, Any], status: dict[str, Any]) -> dict[str, Any]:
        held = world.resources.get(kind, NAMESPACE, body["metadata"]["name"])
        if kind is APPROVAL and held["status"]["phase"] == "Withdrawn" != status["phase"]:
            raise Refused(f"status.phase Withdrawn is terminal: it cannot become {status['phase']}")
        return replace(kind, body, status)

    world.resources.replace_status = guarded  # type: ignore[method-assign]
    shown = approvals(world).reconcile(NAMESPACE, name)
    assert shown["status"]["phase"] == "Pending"
    assert phase(world, name) == "Withdrawn"
    [(_, kind, _, message)] = [e for e in world.events.posted if e[2] == "StatusNotShown"]
    assert kind == "Warning"
    assert "shows Withdrawn" in message
    assert "records Pending" in message
    world.executor("a").tick(NAMESPACE, "heal")
    assert world.steps("heal") == {"P1": "awaiting_approval"}
    assert types(world, name) == {"approval_requested"}


def _status_writes(world: World) -> list[str]:
    """The phases written to Approvals' status from now on."""
    written: list[str] = []
    replace = world.resources.replace_status

    def recording(kind: Kind, body: dict[str, Any], status: dict[str, Any]) -> dict[str, Any]:
        if kind is APPROVAL:
            written.append(str(status.get("phase")))
        return replace(kind, body, status)

    world.resources.replace_status = recording  # type: ignore[method-assign]
    return written


def test_an_approval_acted_on_at_once_is_shown_by_the_action_alone() -> None:
    """The handler records the decision but leaves Approved unshown; the executor acts and
    shows Executed; the handler's later look finds nothing to write: one status write."""
    world, name = asking()
    decide(world, name)
    written = _status_writes(world)
    shown, show_at = approvals(world).decided(NAMESPACE, name)
    assert shown["status"]["phase"] == "Approved"
    assert show_at == world.clock() + APPROVED_SHOWN_AFTER
    assert phase(world, name) == "Pending"
    world.run(
        world.executor("a"), "heal", until=lambda: world.steps("heal")["P1"] != "awaiting_approval"
    )
    approvals(world).reconcile(NAMESPACE, name)  # the handler's later look
    assert written == ["Executed"]
    assert world.driver.calls == {"service.restart": 1}


def test_an_approval_not_acted_on_in_time_is_shown_approved_then() -> None:
    world, name = asking()
    decide(world, name)
    written = _status_writes(world)
    _, show_at = approvals(world).decided(NAMESPACE, name)
    assert show_at is not None
    assert phase(world, name) == "Pending"
    approvals(world).reconcile(NAMESPACE, name)  # the executor has not acted by then
    assert written == ["Approved"]
    # Every other change is shown at once: a denial needs no executor to show it.
    assert approvals(world).decided(NAMESPACE, name)[1] is None


def test_a_minds_approved_restart_is_told_once_on_each_object() -> None:
    """The asking is told on the Mind only (not again on the Plan or the Approval), the
    decision on the Approval, the execution by the Approval's status, not an Event, and the
    plan's own life (valid, completed) on the Plan: four Events in all."""
    world, name = asking()
    decide(world, name)
    world.run(
        world.executor("a"), "heal", until=lambda: world.steps("heal")["P1"] != "awaiting_approval"
    )
    approvals(world).reconcile(NAMESPACE, name)

    assert phase(world, name) == "Executed"
    assert world.events.reasons(of=name) == ["Approved"]
    assert world.events.reasons(of="heal") == ["Validated", "Completed"]
    assert world.events.reasons(of="keeper") == ["ApprovalRequested"]


def test_an_approval_its_plan_waits_on_is_recorded_by_the_plan_with_its_action() -> None:
    """One owner: the Approval's own work leaves an approval the asking plan waits on to that
    plan, whose executor records it in the write-ahead row's transaction. A write-ahead row
    that fails takes the record of the approval with it; the next look records both, once."""
    world, name = asking()
    decide(world, name)
    approvals(world).decided(NAMESPACE, name)
    assert types(world, name) == {"approval_requested"}
    begin = world.ledger.begin_execution

    def die(record: Any, told: Any = None) -> Any:
        assert "approval_approved" in types(world, name)  # written in this transaction...
        world.ledger.begin_execution = begin  # type: ignore[method-assign]
        raise Crash("the write-ahead row failed")

    world.ledger.begin_execution = die  # type: ignore[method-assign]
    with pytest.raises(Crash):
        world.executor("a").tick(NAMESPACE, "heal")
    assert types(world, name) == {"approval_requested"}  # ...and rolled back with it
    assert world.driver.calls == {}
    world.clock.advance(PAST_THE_LEASE)
    world.run(world.executor("b"), "heal", until=lambda: world.steps("heal")["P1"] == "completed")
    uid = world.resources.get(APPROVAL, NAMESPACE, name)["metadata"]["uid"]
    approved = world.ledger.events(subject_uid=uid, type="approval_approved")
    assert len(approved) == 1
    assert world.driver.calls == {"service.restart": 1}
    assert phase(world, name) == "Executed"


def test_an_approval_its_plan_has_not_recorded_is_recorded_as_first_seen() -> None:
    """The plan that asked did not act in time (its controller busy): the Approval's work
    records the approval when it shows it, as of when the controller first saw it, so a
    decision seen a second before the deadline is not turned late by the wait."""
    world, name = asking()
    expires = datetime.fromisoformat(stored(world, APPROVAL, name)["spec"]["expiresAt"])
    world.clock.now = expires - timedelta(seconds=1)
    decide(world, name)
    seen = world.clock()
    handler = approvals(world)  # one controller's: it remembers what it saw
    _, show_at = handler.decided(NAMESPACE, name)
    assert types(world, name) == {"approval_requested"}
    world.clock.now = show_at  # past the deadline
    handler.reconcile(NAMESPACE, name)
    uid = world.resources.get(APPROVAL, NAMESPACE, name)["metadata"]["uid"]
    [approved] = world.ledger.events(subject_uid=uid, type="approval_approved")
    assert approved.occurred_at == seen
    assert "approval_decision_late" not in types(world, name)
    assert phase(world, name) == "Approved"
    world.executor("a").tick(NAMESPACE, "heal")
    assert world.driver.calls == {"service.restart": 1}


def test_an_approval_that_expired_while_the_plan_claimed_it_runs_nothing() -> None:
    """Between the executor reading the approval and recording it with its action, the
    Approval's history moved (its expiry recorded by another controller): nothing is written,
    nothing runs, and the step ends as the Approval does."""
    world, name = asking()
    decide(world, name)
    engine = world.engine("a")
    asked = engine.approvals
    within = asked.approve_within

    def expired_meanwhile(deferred: Any) -> str | None:
        meta = deferred.body["metadata"]
        world.ledger.append_event(
            EventRecord(
                mind="keeper",
                namespace=NAMESPACE,
                type="approval_expired",
                subject=SubjectRef(kind="Approval", name=meta["name"], uid=meta["uid"]),
                payload={"message": "nobody decided in time"},
                occurred_at=world.clock(),
                idempotency_key=idempotency_key("approval", "approval_expired", meta["uid"]),
            )
        )
        return within(deferred)

    asked.approve_within = expired_meanwhile  # type: ignore[method-assign]
    engine.executor.tick(NAMESPACE, "heal")
    assert world.driver.calls == {}
    assert world.ledger.executions(namespace=NAMESPACE) == []
    assert "approval_approved" not in types(world, name)
    p1 = world.step("heal", "P1")
    assert p1["status"] == "failed"
    assert "approval expired" in p1["reason"]

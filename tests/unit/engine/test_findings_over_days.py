"""A finding moves the mind, over simulated days, with the real cycle, planner and executor
over the engine's fakes: a question about a workload forms one investigation; its finding is
taken in once; an unhealthy finding leads to one restart (and, when the restart does not heal,
one escalation), a healthy one to nothing more. The clock runs a minute a cycle for two days
and the test counts what the mind did."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from minds.domain.base import Model
from minds.domain.capabilities.results import DriverResult
from minds.domain.intentions import IntentionKind
from minds.domain.resources.kinds import MIND, PLAN
from minds.domain.volition.findings import TAKEN_IN
from minds.domain.volition.wants import WantOrigin
from minds.engine.cycle import MindCycle
from tests.fakes.ledger import FakeLedger
from tests.unit.engine.harness import NAMESPACE, WORKLOAD, FakeDriver, World, restart
from tests.unit.engine.test_reconsidering_over_fakes import admit

DAYS = 2
SUBJECT = f"{NAMESPACE}/atlas-worker"
EXPECTED = f"{SUBJECT} is running normally within 60 s"


class VolitionLedger(FakeLedger):
    """The fake ledger with the cycle's own tables (wants, conflicts, commitment states)."""

    def __init__(self) -> None:
        super().__init__()
        self.stored_wants: dict[str, dict[str, Any]] = {}
        self.stored_conflicts: dict[str, dict[str, Any]] = {}
        self.commitments: dict[str, str] = {}

    def wants(self, namespace: str, mind: str) -> list[dict[str, Any]]:
        return [dict(w) for w in self.stored_wants.values()]

    def upsert_want(self, *, want_id: str, data: dict[str, Any], **_: Any) -> None:
        self.stored_wants[want_id] = data

    def conflicts(self, namespace: str, mind: str) -> list[dict[str, Any]]:
        return list(self.stored_conflicts.values())

    def save_conflict(self, *, conflict_id: str, data: dict[str, Any], **_: Any) -> None:
        self.stored_conflicts[conflict_id] = data

    def commitment_states(self, namespace: str, mind: str) -> dict[str, str]:
        return dict(self.commitments)

    def set_commitment_state(
        self, namespace: str, mind: str, name: str, state: str, *_: Any
    ) -> None:
        self.commitments[name] = state


@dataclass
class Workload(FakeDriver):
    """The world: atlas-worker in `state`; a restart heals it only when `heals`."""

    state: str = "degraded"
    heals: bool = False

    def invoke(self, capability_name: str, parameters: Model, **how: Any) -> DriverResult:
        said = super().invoke(capability_name, parameters, **how)
        if capability_name == "service.restart" and self.heals:
            self.state = "running"
        if capability_name != "service.status":
            return said
        return DriverResult.success(
            f"atlas-worker is {self.state}",
            fields={"state": self.state, "ready": self.state == "running"},
        )


QUESTION = [{"name": "queue", "text": "is atlas-worker ok?", "subject": {"name": "atlas-worker"}}]


def asking_world(
    state: str, requests: list[dict[str, Any]] = QUESTION, ledger: VolitionLedger | None = None
) -> tuple[World, Workload, MindCycle]:
    driver = Workload(state=state)
    world = World(driver=driver, ledger=ledger or VolitionLedger())
    spec = {
        "capabilityPolicy": [
            {"capability": "service.restart", "decision": "allow"},
            {"capability": "logs.query", "decision": "deny"},
        ],
        "budget": {"invocations": 100},
        "requests": requests,
    }
    world.resources._objects[(MIND.plural, NAMESPACE, "keeper")]["spec"] = spec
    world.resources._objects[(MIND.plural, NAMESPACE, "keeper")]["metadata"]["uid"] = "mind-uid"
    return world, driver, world.engine("a").cycle


def run_days(world: World, cycle: MindCycle, days: float = DAYS) -> None:
    """A cycle a minute; every plan admitted as it appears and ticked after each cycle."""
    executor = world.executor("a")
    for _ in range(int(days * 24 * 60)):
        cycle._run(NAMESPACE, "keeper")  # the fake ledger holds no advisory lock
        for plan in world.resources.list(PLAN, NAMESPACE):
            name = plan["metadata"]["name"]
            if not (plan.get("status") or {}).get("phase"):
                admit(world, name)
            executor.tick(NAMESPACE, name)
        world.clock.now += timedelta(minutes=1)


def ledger(world: World) -> VolitionLedger:
    assert isinstance(world.ledger, VolitionLedger)
    return world.ledger


def investigations(world: World) -> int:
    return sum(
        1
        for i in world.ledger.intentions(namespace=NAMESPACE, mind="keeper")
        if i.kind is IntentionKind.INVESTIGATION
    )


def finding_wants(world: World) -> list[dict[str, Any]]:
    return [
        w for w in ledger(world).wants(NAMESPACE, "keeper") if w["origin"] == WantOrigin.FINDING
    ]


def test_an_unhealthy_finding_restarts_once_and_escalates_once_over_days() -> None:
    world, driver, cycle = asking_world("degraded")
    run_days(world, cycle)
    assert investigations(world) == 1  # one question, one investigation
    assert world.ledger.types().count(TAKEN_IN) == 1  # its finding re-entered once
    [want] = finding_wants(world)  # the finding made the want to restore atlas-worker
    assert want["terms"][0]["name"].startswith("finding:")
    assert driver.calls["service.restart"] == 1  # restarted once, never again
    escalations = world.ledger.types().count("operator_notified")
    assert escalations == 1  # the refuted restart was told to a person once


def test_a_healthy_finding_answers_the_question_and_nothing_more_happens() -> None:
    world, driver, cycle = asking_world("running")
    run_days(world, cycle)
    assert investigations(world) == 1
    assert world.ledger.types().count(TAKEN_IN) == 1
    assert finding_wants(world) == []
    assert driver.calls["service.restart"] == 0
    [request] = [w for w in ledger(world).wants(NAMESPACE, "keeper") if w["origin"] == "request"]
    assert request["status"] == "satisfied"


def expected_restart(key: str) -> dict[str, Any]:
    return {
        **restart(key),
        "expectation": {
            "description": EXPECTED,
            "check": {
                "capability": "service.status",
                "parameters": WORKLOAD,
                "field": "state",
                "comparison": "equals",
                "value": "running",
            },
            "confidence": 0.8,
            "windowSeconds": 60,
        },
    }


def test_a_refuted_restart_weakens_the_open_plan_that_assumed_it_would_heal() -> None:
    """A person's first restart does not heal atlas-worker: its prediction is refuted, which
    lowers the belief in the restart's outcome below the 0.8 a second, waiting restart plan
    assumed. The next cycle's review reconsiders that plan (a person's plan: abandoned) and
    withdraws its Approval; nothing is restarted twice. The mind has no goal, so no observation
    is weighed: the review runs because the cycle reviews every time."""
    world, driver, cycle = asking_world("degraded", requests=[])
    world.plan(
        "second",
        [{**restart("P1"), "requiresApproval": True}],
    )
    stored = world.resources._objects[(PLAN.plural, NAMESPACE, "second")]
    stored["spec"]["assumptions"] = [{"belief": EXPECTED, "minConfidence": 0.8}]
    world.plan(
        "first",
        [
            expected_restart("P1"),
            {
                "key": "V1",
                "title": "verify",
                "kind": "verify",
                "dependsOn": ["P1"],
                "verifies": "P1",
            },
        ],
    )
    run_days(world, cycle, days=15 / (24 * 60))
    [belief] = [b for b in world.ledger.beliefs(NAMESPACE, "keeper") if b.statement == EXPECTED]
    assert belief.confidence < 0.8
    weakened = [
        (d.subjects.get("plan"), d.outcome)
        for d in world.ledger.decisions(namespace=NAMESPACE, kind="reconsideration")
        if d.data["inputs"]["trigger"] == "weakened_belief"
    ]
    assert weakened == [("second", "abandon")]
    assert world.resources.get(PLAN, NAMESPACE, "second")["status"]["phase"] == "abandoned"
    assert driver.calls["service.restart"] == 1

"""The Mind's health as the controller keeps it: checked through the work queue, written only
when it changes, and carried by the cycle's own write (never one of its own)."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from minds.domain.resources.kinds import MIND
from tests.unit.engine.harness import NAMESPACE, World

INTERVAL = timedelta(seconds=5)


def world() -> World:
    w = World()
    w.resources.patch_spec(
        MIND, w.resources.get(MIND, NAMESPACE, "keeper"), {"cycleIntervalSeconds": 5}
    )
    return w


def shown(w: World) -> dict[str, tuple[str, str]]:
    body: dict[str, Any] = w.resources.get(MIND, NAMESPACE, "keeper")
    return {
        c["type"]: (c["status"], c["reason"])
        for c in body["status"]["conditions"]
        if c["type"] in ("Ready", "Degraded")
    }


def test_ready_turns_false_while_the_ledger_is_down_and_true_once_it_answers() -> None:
    w = world()
    engine = w.engine()
    engine.minds.reconcile(NAMESPACE, "keeper")
    assert shown(w) == {"Ready": ("True", "Accepted"), "Degraded": ("False", "AsExpected")}

    w.ledger.down = True
    w.clock.advance(timedelta(seconds=4))  # past the pulse: the ledger is asked again
    checked = engine.minds.check(NAMESPACE, "keeper")
    assert checked is not None
    assert not checked.recovered
    assert checked.again == INTERVAL
    assert shown(w) == {
        "Ready": ("False", "LedgerUnavailable"),
        "Degraded": ("True", "LedgerUnavailable"),
    }

    w.ledger.down = False
    w.clock.advance(timedelta(seconds=4))
    checked = engine.minds.check(NAMESPACE, "keeper")
    assert checked is not None
    assert checked.recovered
    assert shown(w)["Ready"] == ("True", "Accepted")


def test_a_check_that_finds_nothing_new_writes_nothing() -> None:
    w = world()
    engine = w.engine()
    engine.minds.reconcile(NAMESPACE, "keeper")
    before = w.resources.writes
    for _ in range(5):
        w.clock.advance(timedelta(seconds=1))
        assert engine.minds.check(NAMESPACE, "keeper") is not None
    assert w.resources.writes == before
    w.ledger.down = True
    w.clock.advance(timedelta(seconds=4))
    for _ in range(3):
        engine.minds.check(NAMESPACE, "keeper")
    assert w.resources.writes == before + 1  # the change, once


def test_a_stalled_cycle_is_told_and_the_next_cycle_heals_it_in_its_own_write() -> None:
    w = world()
    engine = w.engine()
    engine.minds.reconcile(NAMESPACE, "keeper")
    engine.cycle.run(NAMESPACE, "keeper")
    w.clock.advance(2 * INTERVAL + timedelta(seconds=1))
    engine.minds.check(NAMESPACE, "keeper")
    assert shown(w) == {"Ready": ("False", "CycleStalled"), "Degraded": ("True", "CycleStalled")}
    before = w.resources.writes
    engine.cycle.run(NAMESPACE, "keeper")
    assert shown(w) == {"Ready": ("True", "Accepted"), "Degraded": ("False", "AsExpected")}
    assert w.resources.writes == before + 1  # the cycle's summary carried it


def test_many_minds_checked_at_once_ask_the_ledger_once() -> None:
    w = world()
    for name in ("a", "b", "c"):
        w.resources.create(MIND, NAMESPACE, {"metadata": {"name": name}, "spec": {}})
    engine = w.engine()
    asked: list[bool] = []
    w.ledger.answers = lambda: asked.append(True) or True  # type: ignore[method-assign]
    for name in ("keeper", "a", "b", "c"):
        engine.minds.reconcile(NAMESPACE, name)
        engine.minds.check(NAMESPACE, name)
    assert len(asked) == 1


def test_a_mind_whose_spec_is_refused_or_that_is_gone_has_no_check() -> None:
    w = world()
    engine = w.engine()
    body = w.resources.get(MIND, NAMESPACE, "keeper")
    w.resources.patch_spec(MIND, body, {"lockedCapabilities": ["no.such"]})
    engine.minds.reconcile(NAMESPACE, "keeper")
    assert shown(w) == {"Ready": ("False", "InvalidSpec"), "Degraded": ("True", "SpecRejected")}
    assert engine.minds.check(NAMESPACE, "keeper") is None
    assert engine.minds.check(NAMESPACE, "nobody") is None

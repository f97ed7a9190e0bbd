"""Promises outlive the Mind object that made them: one test per row of the table in
``minds.domain.volition.promises``, pure, with the clock passed in; then days of the real cycle
over the fakes."""

from __future__ import annotations

from datetime import datetime, timedelta

import pytest

from minds.domain.ledger import EventRecord, SubjectRef
from minds.domain.resources.mind import Commitment, MindSpec
from minds.domain.volition.promises import (
    Declared,
    KeptPromise,
    kept,
    left_by_earlier,
    promises,
)
from tests.unit.volition.builders import MIND, NS, T0
from tests.unit.volition.simulator import Simulation, Spell
from tests.unit.volition.test_over_days import the_mind

NEVER_RESTART = Commitment.model_validate(
    {
        "name": "no-restart",
        "mode": "refrain",
        "capability": "service.restart",
        "target": "shop/atlas-worker",
        "revocable": False,
        "reason": "a freeze for the audit",
    }
)


def made(*commitments: Commitment, uid: str = "uid-a", at: int = 0) -> Declared:
    return Declared(uid, T0 + timedelta(hours=at), commitments)


def spec(*commitments: Commitment) -> MindSpec:
    return MindSpec(commitments=list(commitments))


def test_an_irrevocable_commitment_of_an_earlier_object_is_a_promise() -> None:
    revocable = NEVER_RESTART.model_copy(update={"name": "soft", "revocable": True})
    [promise] = promises([made(NEVER_RESTART, revocable)], "keeper")
    assert promise.name == "no-restart"
    assert promise.capability == "service.restart"
    assert "keeper of uid uid-a" in promise.label(0)


def test_the_first_object_that_declared_a_name_made_the_promise() -> None:
    later = NEVER_RESTART.model_copy(update={"target": "shop/*"})
    [promise] = promises([made(NEVER_RESTART), made(later, uid="uid-b", at=1)], "keeper")
    assert promise.target == "shop/atlas-worker"
    assert "uid-a" in promise.kept_from


def test_a_new_object_that_declares_nothing_keeps_the_promise() -> None:
    made_ = promises([made(NEVER_RESTART)], "keeper")
    binding = kept(spec(), made_, T0)
    [promise] = binding.commitments
    assert isinstance(promise, KeptPromise)
    assert promise.revocable is False


def test_the_same_declaration_is_not_kept_twice_even_with_another_note() -> None:
    again = NEVER_RESTART.model_copy(update={"reason": "[masked]"})
    declared = spec(again)
    assert kept(declared, promises([made(NEVER_RESTART)], "keeper"), T0) is declared


def test_a_declaration_with_other_terms_is_set_aside_in_its_place() -> None:
    other = Commitment.model_validate({"name": "watch", "mode": "refrain", "capability": "x.*"})
    weaker = NEVER_RESTART.model_copy(update={"revocable": True})
    binding = kept(spec(weaker, other), promises([made(NEVER_RESTART)], "keeper"), T0)
    first, second = binding.commitments
    assert isinstance(first, KeptPromise)
    assert first.revocable is False
    assert second == other  # commitments[1] still names the spec's own


def test_an_expired_promise_binds_nothing() -> None:
    ending = NEVER_RESTART.model_copy(update={"expires_at": T0 + timedelta(days=1)})
    made_ = promises([made(ending)], "keeper")
    assert len(kept(spec(), made_, T0).commitments) == 1
    assert kept(spec(), made_, T0 + timedelta(days=1)).commitments == []


def test_a_recreated_mind_keeps_a_promise_through_days_of_a_broken_workload() -> None:
    """The real cycle and executor over the fakes: atlas-worker is broken for three days and the
    Mind's policy allows restarts, but an earlier object of its name promised never to restart
    it. Nothing is restarted, and the promise's state is recorded like any commitment's."""
    sim = Simulation(
        spec=the_mind(None, False),
        spells=(Spell(T0, timedelta(days=3)),),
        restart_heals=True,
    )
    earlier = NEVER_RESTART.model_copy(update={"target": f"{NS}/atlas-worker"})
    sim.ledger.append_event(
        EventRecord(
            mind=MIND,
            namespace=NS,
            type="mind_registered",
            subject=SubjectRef(kind="Mind", name=MIND, uid="uid-earlier"),
            payload={"spec": {"commitments": [earlier.model_dump(mode="json", by_alias=True)]}},
            occurred_at=T0 - timedelta(days=1),
            idempotency_key="earlier-registered",
        )
    )
    sim.run(T0, days=3, every=timedelta(minutes=10))
    assert sim.restarts == {}
    assert sim.ledger.commitment_states(NS, MIND) == {"no-restart": "active"}


@pytest.mark.parametrize(
    ("at", "promised", "left"),
    [
        (T0 - timedelta(hours=2), (), {"nightly"}),  # an earlier object's record
        (T0 - timedelta(hours=1), (), {"nightly"}),  # written as it ended
        (T0 + timedelta(seconds=1), (), set()),  # this object's own
        (T0 - timedelta(hours=2), ("nightly",), set()),  # a promise carries its state
    ],
)
def test_only_a_promise_carries_its_recorded_state_to_a_new_object(
    at: datetime, promised: tuple[str, ...], left: set[str]
) -> None:
    ended = T0 - timedelta(hours=1)
    assert left_by_earlier({"nightly": at}, promised, ended) == left
    assert left_by_earlier({"nightly": at}, promised, None) == set()  # no earlier object


def earlier_object(sim: Simulation, *, ended: datetime) -> None:
    """An earlier Mind object of the same name, registered a day before it was deleted."""
    for type_, when in (("mind_registered", ended - timedelta(days=1)), ("mind_deleted", ended)):
        sim.ledger.append_event(
            EventRecord(
                mind=MIND,
                namespace=NS,
                type=type_,
                subject=SubjectRef(kind="Mind", name=MIND, uid="uid-earlier"),
                payload={"spec": {}},
                occurred_at=when,
                idempotency_key=f"earlier-{type_}",
            )
        )


def test_a_new_do_commitment_is_not_born_fulfilled_by_an_earlier_one_of_its_name() -> None:
    sim = Simulation(spec=the_mind(30, False), spells=(), restart_heals=True)
    earlier_object(sim, ended=T0 - timedelta(hours=1))
    fulfilled = T0 - timedelta(hours=3)
    sim.ledger.set_commitment_state(NS, MIND, "nightly-restart", "fulfilled", None, fulfilled)
    sim.run(T0, days=1, every=timedelta(minutes=10))
    assert sim.acts_for == {"nightly-restart": 1}
    assert sim.commitments["nightly-restart"].value == "fulfilled"


def test_a_new_refrain_is_not_born_revoked_and_is_told_once() -> None:
    spec = the_mind(None, False).to_k8s()
    spec["commitments"] = [{"name": "hold", "mode": "refrain", "capability": "service.restart"}]
    sim = Simulation(spec=MindSpec.model_validate(spec), spells=(), restart_heals=True)
    earlier_object(sim, ended=T0 - timedelta(hours=1))
    sim.ledger.set_commitment_state(NS, MIND, "hold", "revoked", "by admin", T0 - timedelta(days=1))
    sim.run(T0, days=1, every=timedelta(minutes=10))
    assert sim.ledger.commitment_states(NS, MIND) == {"hold": "active"}
    told = sim.ledger.decisions(namespace=NS, mind=MIND, kind="commitment_state")
    assert [(d.outcome, d.data["inputs"]["was"]) for d in told] == [("active", "revoked")]

"""One cycle's deliberation, computed whole before anything is written: each step sees what the
steps before it changed, as it did when each step wrote to the ledger before the next read."""

from __future__ import annotations

from datetime import timedelta

from minds.domain.intentions import IntentionStatus
from minds.domain.volition.commitments import CommitmentState
from minds.domain.volition.decisions import DecisionKind
from minds.domain.volition.deliberation import Held, deliberate
from minds.domain.volition.lapse import LAPSE_AFTER
from minds.domain.volition.wants import Want, WantStatus
from tests.unit.volition.builders import ATLAS, MIND, NS, T0, a_spec, a_want, an_intention, seen

LATER = T0 + LAPSE_AFTER


def held(intentions: list, wants: list[Want], **fields: object) -> Held:  # type: ignore[type-arg]
    base: dict[str, object] = {
        "commitments": {},
        "commitments_at": {},
        "conflicts": [],
        "predictions": [],
        "beliefs": [],
    }
    base.update(fields)
    return Held(intentions=intentions, wants=wants, **base)  # type: ignore[arg-type]


def test_an_intention_that_lapses_settles_its_want_in_the_same_cycle() -> None:
    waiting = an_intention(status=IntentionStatus.BLOCKED, reason="escalated")
    want = a_want(intention=waiting.id)
    done = deliberate(a_spec(), held([waiting], [want]), [], LATER, namespace=NS, mind=MIND)

    [lapsed] = done.lapsed
    assert lapsed.intention.status is IntentionStatus.ABANDONED
    # Settlement saw the lapse: the want is suppressed and forgets its intention, once.
    settled = done.wants[0]
    assert (settled.id, settled.status, settled.intention) == (
        want.id,
        WantStatus.SUPPRESSED,
        None,
    )
    assert done.everything[want.id].intention is None
    kinds = [d.kind for d in done.decisions]
    assert kinds[:2] == [DecisionKind.RECONSIDERATION, DecisionKind.SUPPRESSION]


def test_a_commitment_fulfilled_by_settlement_is_judged_fulfilled() -> None:
    spec = a_spec(
        commitments=[
            {
                "name": "nightly-restart",
                "mode": "do",
                "capability": "service.restart",
                "target": ATLAS,
            }
        ]
    )
    done_intention = an_intention(
        status=IntentionStatus.FULFILLED,
        reason="restarted",
        means_capability="service.restart",
    )
    want = a_want(intention=done_intention.id, commitment="nightly-restart")
    done = deliberate(spec, held([done_intention], [want]), [], T0, namespace=NS, mind=MIND)

    [settled, *judged] = done.commitments
    assert (settled.name, settled.state) == ("nightly-restart", CommitmentState.FULFILLED)
    # The commitment's judgement, written after, starts from the settled state, not the one
    # the ledger held when the cycle began (none).
    assert [c.state for c in judged] == [CommitmentState.FULFILLED]


def test_wants_are_derived_over_the_wants_settlement_left() -> None:
    fulfilled = an_intention(status=IntentionStatus.FULFILLED, reason="restarted")
    want = a_want(intention=fulfilled.id)
    # The workload is still broken when the cycle looks: the want the intention served is
    # satisfied by settlement, and the observation does not reinforce it (it would have, had
    # wants been derived over the want as the ledger held it, active and linked).
    done = deliberate(
        a_spec(),
        held([fulfilled], [want]),
        [seen("degraded", T0 + timedelta(minutes=1))],
        T0 + timedelta(minutes=1),
        namespace=NS,
        mind=MIND,
    )
    stored = [w for w in done.wants if w.id == want.id]
    assert [w.status for w in stored] == [WantStatus.SATISFIED]
    assert done.everything[want.id].status is WantStatus.SATISFIED
    assert done.active == []


def test_nothing_held_and_nothing_seen_decides_nothing() -> None:
    done = deliberate(a_spec(), held([], []), [], T0, namespace=NS, mind=MIND)
    assert (done.lapsed, done.commitments, done.wants, done.conflicts, done.decisions) == (
        (),
        (),
        (),
        (),
        (),
    )

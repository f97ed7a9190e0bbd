"""A mind's cycle killed between deciding and applying, against the real control plane and
Postgres: the failpoint ``cycle-applying`` SIGKILLs the controller after the first half of a
cycle's deliberation is written (intentions, commitments, wants) and before the rest (conflicts,
decisions). The cycle reads, decides, then writes what it decided in one transaction, so
the crash leaves none of it; the next controller decides it again, once (docs/volition.md,
The cycle)."""

from __future__ import annotations

import pytest

from minds.adapters.ledger import Ledger
from tests.e2e.executor_support import asking_keeper, deployment, set_health
from tests.fixtures.cluster import Cluster, ControllerFactory
from tests.fixtures.waiting import eventually

MIND = "keeper"


@pytest.mark.usefixtures("alone")
def test_a_cycle_killed_while_applying_leaves_nothing_half_written(
    cluster: Cluster, namespace: str, e2e_ledger: Ledger, controller_factory: ControllerFactory
) -> None:
    deployment(cluster, namespace)
    set_health(cluster, namespace, healthy=False)  # news for the mind: a want to restore it
    asking_keeper(cluster, namespace, MIND)

    crashing = controller_factory(
        "crashing", extra_env={"MINDS_FAILPOINTS": f"cycle-applying:{namespace}/{MIND}"}
    )
    eventually(lambda: not crashing.alive(), timeout=60, what="the controller killed itself")

    # The observation is a read recorded before deciding, so the cycle did reach the apply...
    observed = e2e_ledger.events(namespace=namespace, mind=MIND, type="policy_decision")
    assert observed, "the cycle observed its goal before it died"
    # ...and nothing it decided is there: not the want written before the failpoint, not the
    # decisions after it, and no completed cycle.
    assert e2e_ledger.wants(namespace, MIND) == []
    assert e2e_ledger.decisions(namespace=namespace, mind=MIND) == []
    assert e2e_ledger.events(namespace=namespace, mind=MIND, type="cycle_completed") == []

    controller_factory("normal")
    eventually(
        lambda: e2e_ledger.events(namespace=namespace, mind=MIND, type="cycle_completed"),
        timeout=60,
        what="a completed cycle",
    )
    [want] = e2e_ledger.wants(namespace, MIND)
    # The want and the decision that derived it are both there, once each.
    derived = [
        d
        for d in e2e_ledger.decisions(namespace=namespace, mind=MIND)
        if d.subjects.get("want") == want["id"] and d.kind == "derivation"
    ]
    assert len(derived) == 1, derived

"""A want is read back by the references it holds: its own id, the intention formed for it, the
intention that fulfilled it. The ledger masks what it stores (``mask_secrets``), and content
masking alone reads a run of digits inside a hex digest as a card number or an IBAN. In namespace
``t-72a42a4c5c`` (an e2e run on four workers) the question's want id
``want-11e923231c0054434169691d`` came back as ``want-11e923231c[card]d``: the cycle found no
stored want under the id it derives, derived the question again as new (active, no intention)
every cycle, and formed a new investigation whenever none was live; its findings were taken
in twice, then three times. Not a race: it depends on the namespace's name only.

These tests run the real cycle, planner and executor over the fakes, with a ledger that stores
wants as the real one does, and a question whose want id masking would mangle in namespace
``shop``."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from minds.domain.ledger import mask_secrets
from minds.domain.masking import mask_text
from minds.domain.resources.kinds import PLAN
from minds.domain.volition.findings import TAKEN_IN
from minds.domain.volition.wants import WantOrigin, want_id
from tests.unit.engine.harness import NAMESPACE, World
from tests.unit.engine.test_findings_over_days import (
    VolitionLedger,
    asking_world,
    investigations,
    ledger,
)
from tests.unit.engine.test_reconsidering_over_fakes import admit

#: A question whose want id content masking alone reads as an IBAN (``want-[iban]``).
MANGLED = "q1489"


class MaskingLedger(VolitionLedger):
    """Stores a want's data as the real ledger does (``store_volition.upsert_want``)."""

    def upsert_want(self, *, want_id: str, data: dict[str, Any], **_: Any) -> None:
        self.stored_wants[want_id] = mask_secrets(data)


def test_the_question_chosen_has_a_want_id_content_masking_would_mangle() -> None:
    wid = want_id(NAMESPACE, "keeper", f"request:{MANGLED}", WantOrigin.REQUEST)
    assert mask_text(wid)[0] != wid  # what the test is about
    assert mask_secrets({"id": wid})["id"] == wid


def test_a_question_whose_want_id_looks_like_an_iban_is_investigated_once() -> None:
    question = {"name": MANGLED, "text": "is atlas-worker ok?", "subject": {"name": "atlas-worker"}}
    world, _, cycle = asking_world("running", requests=[question], ledger=MaskingLedger())
    executor = world.executor("a")
    for _ in range(20):
        world.clock.now += timedelta(seconds=5)
        cycle._run(NAMESPACE, "keeper")  # the fake ledger holds no advisory lock
        for plan in world.resources.list(PLAN, NAMESPACE):
            name = plan["metadata"]["name"]
            if not (plan.get("status") or {}).get("phase"):
                admit(world, name)
            world.run(executor, name, until=lambda n=name: _ended(world, n))
    assert investigations(world) == 1
    assert world.ledger.types().count(TAKEN_IN) == 1
    [request] = [w for w in ledger(world).wants(NAMESPACE, "keeper") if w["origin"] == "request"]
    assert request["status"] == "satisfied"
    assert request["id"] == want_id(NAMESPACE, "keeper", f"request:{MANGLED}", WantOrigin.REQUEST)


def _ended(world: World, name: str) -> bool:
    phase = (world.resources.get(PLAN, NAMESPACE, name).get("status") or {}).get("phase")
    return phase in ("completed", "failed")

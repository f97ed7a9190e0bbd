"""The references the operator mints from digests are stored as they are, wherever they sit
in a payload: content masking alone mangles about one in six hundred (a run of digits that
passes as a card number or an IBAN), and a record found by a changed reference is another."""

from __future__ import annotations

from collections.abc import Callable
from itertools import islice

import pytest

from minds.domain.beliefs import belief_id, prediction_id
from minds.domain.intentions import intention_id
from minds.domain.ledger import mask_secrets
from minds.domain.masking import mask_json, mask_text
from minds.domain.procedures import procedure_id
from minds.domain.volition.conflicts import conflict_id
from minds.domain.volition.wants import WantOrigin, want_id

MINTERS: dict[str, Callable[[str], str]] = {
    "want": lambda n: want_id("ns", "keeper", f"request:q{n}", WantOrigin.REQUEST),
    "intention": lambda n: intention_id("ns", "keeper", str(n)),
    "belief": lambda n: belief_id("ns", "keeper", f"statement {n}"),
    "prediction": lambda n: prediction_id("plan-uid", f"S{n}", "1"),
    "procedure": lambda n: procedure_id("ns", "keeper", f"plan-{n}"),
    "conflict": lambda n: conflict_id(f"want-a{n}", f"want-b{n}"),
}


def mangled_by_content(mint: Callable[[str], str]) -> list[str]:
    """Minted ids that content masking alone would change (searched, so the test is about
    the ids that matter)."""
    ids = (mint(str(n)) for n in range(20_000))
    return list(islice((i for i in ids if mask_text(i)[0] != i), 3))


@pytest.mark.parametrize("kind", sorted(MINTERS))
def test_a_minted_id_content_masking_would_mangle_is_kept_whole(kind: str) -> None:
    mangled = mangled_by_content(MINTERS[kind])
    assert mangled, f"no {kind} id among 20,000 that content masking changes"
    for minted in mangled:
        payload = {"id": minted, "refs": [minted], "nested": {"intention": minted}}
        assert mask_secrets(payload) == payload
        assert mask_json(minted) == minted


def test_only_a_whole_minted_id_is_kept() -> None:
    card = "4111111111111111"
    assert mask_json(f"want-{card}") != f"want-{card}"  # not 24 hex digits
    assert mask_json(f"card {card}") != f"card {card}"
    minted = mangled_by_content(MINTERS["want"])[0]
    assert mask_json(f"about {minted}") != f"about {minted}"  # inside free text: text rules

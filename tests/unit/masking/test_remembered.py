"""Masked texts are remembered by digest: the same answer as masking anew, a bounded memory,
and no raw secret kept in it."""

from __future__ import annotations

from minds.domain.masking.blocks import mask_text
from minds.domain.masking.structured import _Remembered, mask_mapping

SECRET = "password=hunter2hunter2 and mail bob@example.com"


def test_a_remembered_text_is_masked_as_anew_and_never_kept_raw() -> None:
    remembered = _Remembered(size=8)
    first = remembered(SECRET)
    assert first == remembered(SECRET) == mask_text(SECRET)[0]
    assert "hunter2" not in first
    held = [*remembered._masked.keys(), *remembered._masked.values()]
    assert not any(b"hunter2" in k if isinstance(k, bytes) else "hunter2" in k for k in held)


def test_memory_is_bounded_least_recently_used_first_out() -> None:
    remembered = _Remembered(size=2)
    remembered("a@example.com")
    remembered("b@example.com")
    remembered("a@example.com")  # used again: b is now the oldest
    remembered("c@example.com")
    assert len(remembered._masked) == 2
    assert remembered("a@example.com") == mask_text("a@example.com")[0]


def test_payloads_mask_the_same_every_time() -> None:
    payload = {"note": SECRET, "step": "S1", "nested": [{"token": "x", "text": SECRET}]}
    assert mask_mapping(payload) == mask_mapping(payload)
    assert "hunter2" not in str(mask_mapping(payload))

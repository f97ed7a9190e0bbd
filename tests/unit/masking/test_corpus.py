"""The masking corpus: every sensitive string is masked, few harmless ones change.

`corpus.yaml` holds strings as they appear in log lines, notes and explanations, each either
sensitive (with the parts that must be gone) or a harmless look-alike (a version, a timestamp,
a UUID, a private address, a digest, prose). The measured rates are printed in the summary.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from minds.domain.ledger import mask_secrets
from minds.domain.masking import mask_text
from tests.unit.masking.conftest import CORPUS_RESULTS

CORPUS: dict[str, list[dict[str, Any]]] = yaml.safe_load(
    (Path(__file__).parent / "corpus.yaml").read_text(encoding="utf-8")
)
SENSITIVE = CORPUS["sensitive"]
HARMLESS = CORPUS["harmless"]
HARMLESS_CHANGED_AT_MOST = 0.03

# Every shape the masking promises to cover has examples in the corpus.
SHAPES = {
    "email",
    "email-intl",
    "email-quoted",
    "phone-intl",
    "phone-national",
    "iban",
    "card",
    "bearer",
    "basic",
    "jwt",
    "token",
    "access-key",
    "encoded-key",
    "url-password",
    "key",
    "env-pair",
    "pem",
    "yaml-block",
    "yaml-env",
    "json-block",
    "ip",
    "aws-secret",
    "cli-password",
    "ssn",
    "nino",
    "secret-ref",
    "secret-manifest",
    "webhook",
}


def _leaks(entry: dict[str, Any], masked: str) -> list[str]:
    return [secret for secret in entry["secrets"] if secret in masked]


def test_the_corpus_is_large_and_covers_every_shape() -> None:
    assert len(SENSITIVE) + len(HARMLESS) >= 200
    assert {entry["shape"] for entry in SENSITIVE} >= SHAPES
    assert all(entry["secrets"] for entry in SENSITIVE)
    assert not any("secrets" in entry for entry in HARMLESS)


def test_every_sensitive_string_is_masked_and_few_harmless_ones_change(
    request: pytest.FixtureRequest, record_property: Any
) -> None:
    leaked = {
        entry["text"]: leaks
        for entry in SENSITIVE
        if (leaks := _leaks(entry, mask_text(entry["text"])[0]))
    }
    changed = [entry["text"] for entry in HARMLESS if mask_text(entry["text"])[0] != entry["text"]]
    masked_share = (len(SENSITIVE) - len(leaked)) / len(SENSITIVE)
    changed_share = len(changed) / len(HARMLESS)
    results = [
        f"sensitive masked: {len(SENSITIVE) - len(leaked)}/{len(SENSITIVE)} ({masked_share:.1%})",
        f"harmless changed: {len(changed)}/{len(HARMLESS)} ({changed_share:.1%}, "
        f"at most {HARMLESS_CHANGED_AT_MOST:.0%} allowed)",
    ]
    request.config.stash[CORPUS_RESULTS] = [*request.config.stash.get(CORPUS_RESULTS, []), *results]
    record_property("sensitive_masked", masked_share)
    record_property("harmless_changed", changed_share)
    assert leaked == {}
    assert changed_share <= HARMLESS_CHANGED_AT_MOST, changed


@pytest.mark.parametrize("entry", SENSITIVE, ids=lambda entry: entry["shape"])
def test_a_sensitive_string_in_a_ledger_payload_is_masked(entry: dict[str, Any]) -> None:
    """The ledger's choke point masks the same strings as free text, wherever they sit."""
    payload = {"note": entry["text"], "observations": [{"summary": entry["text"]}]}
    stored = repr(mask_secrets(payload))
    assert _leaks(entry, stored.replace("\\\\", "\\")) == []


@pytest.mark.parametrize("entry", SENSITIVE, ids=lambda entry: entry["shape"])
def test_masking_a_sensitive_string_twice_changes_nothing(entry: dict[str, Any]) -> None:
    once, _ = mask_text(entry["text"])
    assert mask_text(once) == (once, {})


@settings(max_examples=200)
@given(st.lists(st.sampled_from(SENSITIVE + HARMLESS), min_size=1, max_size=8))
def test_corpus_strings_written_one_after_another_are_all_masked(
    entries: list[dict[str, Any]],
) -> None:
    """A log or a note holds many of these at once: none may unmask another."""
    once, _ = mask_text("\n".join(entry["text"] for entry in entries))
    for entry in entries:
        if "secrets" in entry:
            assert _leaks(entry, once) == []
    assert mask_text(once) == (once, {})

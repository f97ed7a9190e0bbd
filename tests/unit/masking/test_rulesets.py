"""The rule sets of gitleaks and detect-secrets, as a labelled corpus: every rule id is covered
by examples that must be masked, or listed with the reason it is knowingly left alone.

`rulesets.yaml` holds examples composed in each rule's format (fake values); the coverage is
printed in the summary with the corpus results.
"""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path
from typing import Any

import pytest
import yaml

from minds.domain.ledger import mask_secrets
from minds.domain.masking import LineMasker, mask_text
from tests.unit.masking.conftest import CORPUS_RESULTS

RULESETS: dict[str, Any] = yaml.safe_load(
    (Path(__file__).parent / "rulesets.yaml").read_text(encoding="utf-8")
)
SOURCES: dict[str, dict[str, int]] = RULESETS["sources"]
SENSITIVE: list[dict[str, Any]] = RULESETS["sensitive"]
HARMLESS: list[dict[str, Any]] = RULESETS["harmless"]
NOT_COVERED: list[dict[str, str]] = RULESETS["not_covered"]
GAPS: list[dict[str, str]] = RULESETS["gaps"]
HARMLESS_CHANGED_AT_MOST = 0.03


def _ids(entries: list[dict[str, Any]]) -> dict[str, set[str]]:
    found: dict[str, set[str]] = defaultdict(set)
    for entry in entries:
        found[entry["source"]].add(entry["rule"])
    return found


COVERED = _ids(SENSITIVE)
LEFT_OUT = _ids(NOT_COVERED)


def _leaks(entry: dict[str, Any], masked: str) -> list[str]:
    return [secret for secret in entry["secrets"] if secret in masked]


def test_every_rule_id_is_covered_or_left_out_with_a_reason() -> None:
    for source, declared in SOURCES.items():
        covered, left_out = COVERED[source], LEFT_OUT[source]
        assert not covered & left_out, (source, covered & left_out)
        assert len(covered | left_out) == declared["rules"], source
    assert all(entry["reason"].strip() for entry in NOT_COVERED + GAPS)
    assert all(entry["secrets"] for entry in SENSITIVE)
    assert not any("secrets" in entry for entry in HARMLESS)
    # A gap is a form of a covered rule that is knowingly not masked: its rule is covered.
    assert all(entry["rule"] in COVERED[entry["source"]] for entry in GAPS)


def test_every_covered_rule_is_masked_and_few_look_alikes_change(
    request: pytest.FixtureRequest, record_property: Any
) -> None:
    leaked = {
        f"{entry['source']}/{entry['rule']}: {entry['text']}": leaks
        for entry in SENSITIVE
        if (leaks := _leaks(entry, mask_text(entry["text"])[0]))
    }
    changed = [entry["text"] for entry in HARMLESS if mask_text(entry["text"])[0] != entry["text"]]
    changed_share = len(changed) / len(HARMLESS)
    lines = [
        f"rule sets, {source}: {len(COVERED[source])} of {declared['rules']} rules covered "
        f"({len(LEFT_OUT[source])} left out, each with a reason; "
        f"{sum(entry['source'] == source for entry in GAPS)} with a known gap)"
        for source, declared in SOURCES.items()
    ]
    lines += [
        f"rule-set examples masked: {len(SENSITIVE) - len(leaked)}/{len(SENSITIVE)}",
        f"rule-set look-alikes changed: {len(changed)}/{len(HARMLESS)} ({changed_share:.1%}, "
        f"at most {HARMLESS_CHANGED_AT_MOST:.0%} allowed)",
    ]
    request.config.stash[CORPUS_RESULTS] = [*request.config.stash.get(CORPUS_RESULTS, []), *lines]
    record_property("rulesets_masked", (len(SENSITIVE) - len(leaked)) / len(SENSITIVE))
    record_property("rulesets_changed", changed_share)
    assert leaked == {}
    assert changed_share <= HARMLESS_CHANGED_AT_MOST, changed


@pytest.mark.parametrize("entry", SENSITIVE, ids=lambda entry: f"{entry['source']}/{entry['rule']}")
def test_an_example_is_masked_in_a_ledger_payload_and_line_by_line(entry: dict[str, Any]) -> None:
    """The ledger's choke point, and a log read one line at a time, mask it as the text does."""
    stored = repr(mask_secrets({"note": entry["text"], "items": [entry["text"]]}))
    assert _leaks(entry, stored.replace("\\\\", "\\")) == []
    masker = LineMasker()
    lines = [masker.mask(line)[0] for line in entry["text"].split("\n")]
    assert "\n".join(lines) == mask_text(entry["text"])[0]


@pytest.mark.parametrize("entry", SENSITIVE, ids=lambda entry: f"{entry['source']}/{entry['rule']}")
def test_masking_an_example_twice_changes_nothing(entry: dict[str, Any]) -> None:
    once, _ = mask_text(entry["text"])
    assert mask_text(once) == (once, {})

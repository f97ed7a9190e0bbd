"""Ledger records: deterministic idempotency keys, secret masking, record validation."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

import pytest
from hypothesis import given
from hypothesis import strategies as st
from pydantic import ValidationError

from minds.domain.ledger import (
    IDEMPOTENCY_KEY_LENGTH,
    MASK,
    EventRecord,
    EventType,
    MindChange,
    MindRecord,
    SubjectRef,
    idempotency_key,
    is_secret_key,
    mask_secrets,
)

part = st.text(alphabet=st.characters(blacklist_characters="\x1f"), max_size=40)
parts = st.lists(part, min_size=1, max_size=6).map(tuple)

NOW = datetime(2025, 1, 2, 3, 4, 5, tzinfo=UTC)


def an_event(**overrides: object) -> EventRecord:
    fields: dict[str, object] = {
        "mind": "keeper",
        "namespace": "ops",
        "type": EventType.MIND_REGISTERED,
        "subject": SubjectRef(kind="Mind", name="keeper", uid="u-1"),
        "payload": {"generation": 1},
        "occurred_at": NOW,
        "idempotency_key": idempotency_key("mind", "registered", "u-1"),
    }
    fields.update(overrides)
    return EventRecord.model_validate(fields)


# -- idempotency keys ----------------------------------------------------------------------


@given(parts)
def test_same_parts_give_the_same_key(key_parts: tuple[str, ...]) -> None:
    assert idempotency_key(*key_parts) == idempotency_key(*key_parts)


@given(parts, parts)
def test_different_parts_give_different_keys(a: tuple[str, ...], b: tuple[str, ...]) -> None:
    if a != b:
        assert idempotency_key(*a) != idempotency_key(*b)


@given(parts)
def test_key_is_fixed_length_lowercase_hex(key_parts: tuple[str, ...]) -> None:
    key = idempotency_key(*key_parts)
    assert len(key) == IDEMPOTENCY_KEY_LENGTH
    assert set(key) <= set("0123456789abcdef")


def test_key_is_stable_across_releases() -> None:
    # Keys already in ledgers must keep matching after an upgrade: changing the derivation
    # would make every replay write duplicates. Do not update these values.
    assert idempotency_key("a") == "aaa8be88bd4afa32f5b8af336bd22184"
    assert (
        idempotency_key("mind", "mind_registered", "uid-1", "registered")
        == "01d36167a3a103a9da1a145b6424c8c6"
    )


@pytest.mark.parametrize(
    ("a", "b"),
    [
        (("ab", "c"), ("a", "bc")),  # boundaries matter
        (("a",), ("a", "")),  # a trailing empty part counts
        (("",), ("", "")),
        (("a", "b"), ("b", "a")),  # order matters
    ],
)
def test_look_alike_part_lists_differ(a: tuple[str, ...], b: tuple[str, ...]) -> None:
    assert idempotency_key(*a) != idempotency_key(*b)


def test_key_needs_parts() -> None:
    with pytest.raises(ValueError, match="at least one part"):
        idempotency_key()


def test_key_refuses_the_separator() -> None:
    with pytest.raises(ValueError, match="unit separator"):
        idempotency_key("a\x1fb")


def test_key_refuses_non_strings() -> None:
    with pytest.raises(TypeError, match="must be str"):
        idempotency_key("plan", 3)  # type: ignore[arg-type]


# -- secrets -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "key",
    [
        "password",
        "dbPassword",
        "api_key",
        "apiKey",
        "API-KEY",
        "githubToken",
        "access_token",
        "clientSecret",
        "secret",
        "privateKey",
        "Authorization",
        "credentials",
        "passwd",
    ],
)
def test_secret_keys_are_recognised(key: str) -> None:
    assert is_secret_key(key)


@pytest.mark.parametrize(
    "key", ["maxTokens", "tokensUsed", "secretRef", "secretName", "name", "passwordPolicy"]
)
def test_ordinary_keys_are_not_secret(key: str) -> None:
    assert not is_secret_key(key)


def test_mask_secrets_at_any_depth_without_touching_the_input() -> None:
    payload: dict[str, object] = {
        "generation": 2,
        "model": {"endpoint": "http://model:8080", "apiKey": "sk-123", "maxTokens": 512},
        "steps": [{"env": {"DB_PASSWORD": "hunter2"}}, "plain"],
        "token": None,
    }
    masked = mask_secrets(payload)  # type: ignore[arg-type]
    assert masked == {
        "generation": 2,
        "model": {"endpoint": "http://model:8080", "apiKey": MASK, "maxTokens": 512},
        "steps": [{"env": {"DB_PASSWORD": MASK}}, "plain"],
        "token": MASK,
    }
    assert payload["model"]["apiKey"] == "sk-123"  # type: ignore[index]


# -- records -------------------------------------------------------------------------------


def test_event_type_is_stored_as_its_plain_value() -> None:
    event = an_event(type=EventType.MIND_UPDATED)
    assert event.type == "mind_updated"
    assert type(event.type) is str


def test_event_round_trips_through_camel_case() -> None:
    event = an_event()
    dumped = event.model_dump(mode="json", by_alias=True)
    assert "occurredAt" in dumped
    assert "idempotencyKey" in dumped
    assert EventRecord.model_validate(dumped) == event


def test_unwritten_event_has_no_id_or_recorded_at() -> None:
    event = an_event()
    assert event.id is None
    assert event.recorded_at is None


@pytest.mark.parametrize(
    "overrides",
    [
        {"occurred_at": datetime(2025, 1, 1)},  # naive: ambiguous in a ledger
        {"type": "Mind Registered"},
        {"type": ""},
        {"mind": ""},
        {"idempotency_key": ""},
        {"unknown": 1},
        {"payload": {"when": datetime(2025, 1, 1, tzinfo=UTC)}},  # not JSON
    ],
)
def test_invalid_events_are_refused(overrides: dict[str, object]) -> None:
    with pytest.raises(ValidationError):
        an_event(**overrides)


def test_other_timezones_are_accepted() -> None:
    east = timezone(timedelta(hours=2))
    assert an_event(occurred_at=NOW.astimezone(east)).occurred_at == NOW


def test_events_are_immutable() -> None:
    event = an_event()
    with pytest.raises(ValidationError):
        event.mind = "other"  # type: ignore[misc]


def test_subject_uid_is_optional() -> None:
    assert SubjectRef(kind="Plan", name="restart-atlas").uid is None


def test_mind_record_needs_a_non_negative_generation() -> None:
    with pytest.raises(ValidationError):
        MindRecord(
            namespace="ops",
            name="keeper",
            uid="u",
            generation=-1,
            registered_at=NOW,
            updated_at=NOW,
        )


def test_mind_changes_map_to_event_types() -> None:
    assert MindChange.REGISTERED.event_type is EventType.MIND_REGISTERED
    assert MindChange.UPDATED.event_type is EventType.MIND_UPDATED
    assert MindChange.UNCHANGED.event_type is None

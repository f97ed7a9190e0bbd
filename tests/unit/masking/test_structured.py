"""The ledger's `mask_secrets`: secret keys, env entries, Secrets, and free text at any depth."""

from __future__ import annotations

import copy

from pydantic import JsonValue

from minds.domain.ledger import MASK, mask_note, mask_secrets
from minds.domain.masking import mask_json


def test_free_text_values_are_masked_at_any_depth() -> None:
    payload: dict[str, JsonValue] = {
        "note": "asked alice@example.com, she sent Bearer 5f2b8c1e9d7a4b3c6e0f",
        "steps": [{"explanation": "call +44 20 7946 0958"}, "refund DE89370400440532013000"],
        "generation": 3,
        "ok": True,
        "none": None,
    }
    assert mask_secrets(payload) == {
        "note": "asked [email], she sent Bearer [token]",
        "steps": [{"explanation": "call [phone]"}, "refund [iban]"],
        "generation": 3,
        "ok": True,
        "none": None,
    }


def test_values_under_secret_keys_are_masked_whole_whatever_they_are() -> None:
    payload: dict[str, JsonValue] = {
        "dbPass": "hunter2",
        "pwd": 1234,
        "auth": {"user": "bob", "password": "x"},
        "apikey": ["a", "b"],
        "passwordPolicy": "strong",
    }
    assert mask_secrets(payload) == {
        "dbPass": MASK,
        "pwd": MASK,
        "auth": MASK,
        "apikey": MASK,
        "passwordPolicy": "strong",
    }


def test_an_env_entry_named_as_a_secret_has_its_value_masked() -> None:
    env: JsonValue = [
        {"name": "DB_PASSWORD", "value": "hunter2"},
        {"name": "LOG_LEVEL", "value": "debug"},
        {"name": "API_TOKEN", "valueFrom": {"secretKeyRef": {"name": "api", "key": "token"}}},
    ]
    assert mask_json({"env": env}) == {
        "env": [
            {"name": "DB_PASSWORD", "value": MASK},
            {"name": "LOG_LEVEL", "value": "debug"},
            {"name": "API_TOKEN", "valueFrom": {"secretKeyRef": {"name": "api", "key": "token"}}},
        ]
    }


def test_the_data_of_a_kubernetes_secret_is_masked() -> None:
    secret: JsonValue = {
        "kind": "Secret",
        "metadata": {"name": "db"},
        "data": {"username": "YXBw", "host": "ZGI="},
        "stringData": {"url": "postgres://db"},
    }
    assert mask_json(secret) == {
        "kind": "Secret",
        "metadata": {"name": "db"},
        "data": {"username": MASK, "host": MASK},
        "stringData": {"url": MASK},
    }


def test_the_identity_that_decided_is_kept_for_the_audit() -> None:
    payload: dict[str, JsonValue] = {
        "decidedBy": "carol@example.com",
        "grantedBy": "dave@example.com",
        "note": "carol@example.com approved",
    }
    assert mask_secrets(payload) == {
        "decidedBy": "carol@example.com",
        "grantedBy": "dave@example.com",
        "note": "[email] approved",
    }


def test_an_identity_that_carries_more_than_an_address_is_masked() -> None:
    assert mask_secrets({"decidedBy": "carol@example.com password=x"}) == {
        "decidedBy": "[email] password=[secret]"
    }


def test_keys_are_masked_too_and_two_alike_stay_apart() -> None:
    masked = mask_secrets({"alice@example.com": 1, "bob@example.com": 2, "plain": 3})
    assert masked == {"[email]": 1, "[email]#2": 2, "plain": 3}


def test_the_input_is_not_changed() -> None:
    payload: dict[str, JsonValue] = {"a": {"token": "t"}, "b": ["x@example.com"]}
    before = copy.deepcopy(payload)
    mask_secrets(payload)
    assert payload == before


def test_a_note_is_masked_as_free_text() -> None:
    assert mask_note("ring 020 7946 0958, key:\n-----BEGIN PRIVATE KEY-----\nMIIE\n") == (
        "ring [phone], key:\n-----BEGIN PRIVATE KEY-----\n[secret]\n"
    )


def test_a_reference_to_a_secret_keeps_its_names_and_masks_a_secret_written_in_it() -> None:
    payload: dict[str, JsonValue] = {
        "envFrom": [{"secretRef": {"name": "db-creds"}}, {"secretRef": {"name": "db", "v": "x"}}],
        "valueFrom": {"secretKeyRef": {"name": "db", "key": "password", "optional": True}},
        "tls": {"secretName": "tls-atlas"},
        "leaked": {"secretRef": "Pa55w0rd!2024", "secretKeyRef": {"name": "db", "key": "S3cr3t!"}},
        "generated": {"secretName": "7c4a8d09ca3762af61e59520943dc264"},
        "empty": {"secretRef": ""},
    }
    assert mask_json(payload) == {
        "envFrom": [{"secretRef": {"name": "db-creds"}}, {"secretRef": {"name": "db", "v": MASK}}],
        "valueFrom": {"secretKeyRef": {"name": "db", "key": "password", "optional": True}},
        "tls": {"secretName": "tls-atlas"},
        "leaked": {"secretRef": MASK, "secretKeyRef": {"name": "db", "key": MASK}},
        "generated": {"secretName": MASK},
        "empty": {"secretRef": ""},
    }

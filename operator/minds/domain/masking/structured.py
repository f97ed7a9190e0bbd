"""Masking of JSON values (ledger payloads, specs, parameters) by key and by content.

A value whose key names a secret is replaced whole by `MASK`, whatever it is (a string, a
nested object, a list). So is the `value` of an entry whose `name` names a secret, as in a
container's env list (`{name: DB_PASSWORD, value: ...}`), and every value under `data` and
`stringData` of a Kubernetes Secret. Under a reference to a Secret (`secretRef`,
`secretKeyRef`), the names it holds are kept and any other value is replaced: a secret written
where its name belongs. Every other string, keys included, is masked as free text, so a note or
a summary holding an e-mail address or a token is masked too.

Values under keys naming who decided (`decidedBy`, `grantedBy`) keep their e-mail addresses:
the ledger exists to say who authorised what, and that identity is the authenticated user the
API server vouched for, not data a mind came across.
"""

from __future__ import annotations

import hashlib
import re
import threading
from collections import OrderedDict
from collections.abc import Mapping, Sequence
from typing import Final

from pydantic import JsonValue

from minds.domain.free_form import storable
from minds.domain.masking.blocks import mask_text
from minds.domain.masking.keys import (
    is_identity_key,
    is_reference_key,
    is_secret_key,
    reference_hides_secret,
)
from minds.domain.masking.kinds import MaskKind

MASK: Final = "***"

#: The references the operator mints from digests (a want's, an intention's, a belief's, a
#: prediction's, a procedure's and a conflict's id: a prefix and 24 hex digits). A value that is
#: one of them whole is kept as it is: content rules read a run of digits inside a digest as a
#: card number or an IBAN (about one id in six hundred), and a record found again by a changed
#: reference is another record (a want stored under `want-11e923231c[card]d` was never found by
#: its own id, and the mind investigated one question again and again). No secret fits here.
_MINTED: Final = re.compile(r"(?:want|int|bel|pred|proc|conflict)-[0-9a-f]{24}")

_SECRET_DATA_KEYS: Final = ("data", "stringData")

#: Texts up to this long are remembered once masked: a ledger payload repeats the same keys,
#: titles and objectives row after row, and masking one runs every rule over it.
_REMEMBERED_LENGTH: Final = 1024
_REMEMBERED_COUNT: Final = 4096


class _Remembered:
    """Masked texts by a digest of the text, never by the text: a text that held a secret must
    not outlive its masking in memory because it was remembered. Least recently used first out;
    thread-safe, since the controller masks from many threads."""

    def __init__(self, size: int) -> None:
        self._size = size
        self._masked: OrderedDict[bytes, str] = OrderedDict()
        self._lock = threading.Lock()

    def __call__(self, text: str) -> str:
        key = hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=16).digest()
        with self._lock:
            found = self._masked.get(key)
            if found is not None:
                self._masked.move_to_end(key)
                return found
        masked = mask_text(text)[0]
        with self._lock:
            self._masked[key] = masked
            if len(self._masked) > self._size:
                self._masked.popitem(last=False)
        return masked


_remembered = _Remembered(_REMEMBERED_COUNT)


def _masked(text: str) -> str:
    """``text`` masked as free text (the same answer whether remembered or not)."""
    return _remembered(text) if len(text) <= _REMEMBERED_LENGTH else mask_text(text)[0]


def mask_json(value: JsonValue) -> JsonValue:
    """A masked copy of a JSON value; the input is not changed."""
    return _value(value, identity=False)


def mask_mapping(payload: Mapping[str, JsonValue]) -> dict[str, JsonValue]:
    """A masked copy of a JSON object."""
    return _mapping(payload)


def _value(value: JsonValue, *, identity: bool) -> JsonValue:
    if isinstance(value, str):
        if _MINTED.fullmatch(value):
            return value
        return _identity_text(value) if identity else _masked(value)
    if isinstance(value, Mapping):
        return _mapping(value)
    if isinstance(value, Sequence):
        return [_value(item, identity=identity) for item in value]
    return value


def _mapping(mapping: Mapping[str, JsonValue]) -> dict[str, JsonValue]:
    secret_entry = _names_secret(mapping)
    secret_data = mapping.get("kind") == "Secret"
    masked: dict[str, JsonValue] = {}
    for key, value in mapping.items():
        name = _key(str(key), masked)
        if is_secret_key(name) or (secret_entry and key == "value"):
            masked[name] = MASK
        elif secret_data and key in _SECRET_DATA_KEYS and isinstance(value, Mapping):
            masked[name] = {_key(str(k), {}): MASK for k in value}
        elif is_reference_key(name):
            masked[name] = _reference(None, value)
        else:
            masked[name] = _value(value, identity=is_identity_key(name))
    return masked


def _reference(field: str | None, value: JsonValue) -> JsonValue:
    """A reference to a Secret (or one of its fields): names kept, anything else masked."""
    if field is None and isinstance(value, Mapping):
        return {_key(str(k), {}): _reference(str(k), v) for k, v in value.items()}
    if value is None or isinstance(value, bool) or value == "":
        return value
    if isinstance(value, str) and not reference_hides_secret(field, value):
        return value
    return MASK


def _names_secret(mapping: Mapping[str, JsonValue]) -> bool:
    """An env-style entry: `name` names a secret and `value` holds it."""
    name = mapping.get("name")
    return "value" in mapping and isinstance(name, str) and is_secret_key(name)


def _key(key: str, taken: Mapping[str, JsonValue]) -> str:
    """A key masked like text; two keys masked alike stay apart (`[email]`, `[email]#2`)."""
    masked = _masked(key)
    if masked == key or masked not in taken:
        return masked
    number = 2
    while f"{masked}#{number}" in taken:
        number += 1
    return f"{masked}#{number}"


def _identity_text(text: str) -> str:
    """An identity's text, its e-mail address kept and anything else masked."""
    masked = _masked(text)
    return storable(text) if masked == MaskKind.EMAIL.placeholder else masked

"""Masking of personal identifiers and secrets, in free text and in structured payloads.

One module decides what is masked wherever text leaves the controller: log lines and command
lines from drivers, the ledger's payloads and notes, Kubernetes Event messages, the
controller's own log records and what is sent to a model. Everything here is pure, so it is
the same rule in every place and is tested once.

- `mask_text`: free text of any number of lines (identifiers, secrets, multi-line blocks).
- `LineMasker`: the same, for lines that arrive one at a time.
- `mask_json`: a JSON value, by key name and by content at any depth.
- `is_secret_key`: whether a key or variable name names a secret.

Each kind of identifier is replaced by a typed placeholder (`[email]`, `[phone]`, ...), so a
reader still sees that something was there and what it was, never the value itself.
"""

from minds.domain.masking.blocks import LineMasker, mask_text
from minds.domain.masking.checks import iban_valid, is_phone_number, luhn_valid
from minds.domain.masking.keys import is_identity_key, is_secret_key, key_words
from minds.domain.masking.kinds import MaskCounts, MaskKind, merge_counts
from minds.domain.masking.structured import MASK, mask_json, mask_mapping

__all__ = [
    "MASK",
    "LineMasker",
    "MaskCounts",
    "MaskKind",
    "iban_valid",
    "is_identity_key",
    "is_phone_number",
    "is_secret_key",
    "key_words",
    "luhn_valid",
    "mask_json",
    "mask_mapping",
    "mask_text",
    "merge_counts",
]

"""What masking replaces a value with, and how it counts what it replaced."""

from __future__ import annotations

import re
from enum import StrEnum
from typing import Final


class MaskKind(StrEnum):
    EMAIL = "email"
    PHONE = "phone"
    IP = "ip"
    TOKEN = "token"  # noqa: S105 - a placeholder name, not a credential
    JWT = "jwt"
    ACCESS_KEY = "access-key"
    CARD = "card"
    IBAN = "iban"
    NATIONAL_ID = "national-id"
    SECRET = "secret"  # noqa: S105 - a placeholder name, not a credential

    @property
    def placeholder(self) -> str:
        return f"[{self.value}]"


MaskCounts = dict[str, int]

PLACEHOLDER: Final = "(?:" + "|".join(re.escape(kind.placeholder) for kind in MaskKind) + ")"
# A value must not already be a placeholder: that keeps masking idempotent.
NOT_MASKED: Final = rf"(?![\"']?{PLACEHOLDER})"


def merge_counts(into: MaskCounts, more: MaskCounts) -> MaskCounts:
    """Add `more` to `into` (in place) and return it."""
    for kind, count in more.items():
        into[kind] = into.get(kind, 0) + count
    return into

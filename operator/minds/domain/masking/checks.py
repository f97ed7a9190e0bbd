"""Checks that tell a real identifier from something shaped like one.

Cards carry a Luhn check digit and IBANs a mod-97 checksum, so a run of digits that fails its
check is left alone: that keeps order numbers, counters and hashes readable. Phone numbers are
validated against the numbering plans of `phonenumbers` (Google's libphonenumber metadata).
That library is pure data and code: it reads no file but its own modules, opens no socket and
reads no clock, which is why the domain may use it.
"""

from __future__ import annotations

import base64
import binascii
import string
from typing import Final

import phonenumbers

# Regions whose national format is recognised without a country code: NANP's (xxx) xxx-xxxx,
# and the plans that dial national numbers with a trunk 0. International numbers (+44...,
# 0044...) are recognised for every region.
NANP_REGIONS: Final = ("US",)
TRUNK_ZERO_REGIONS: Final = (
    "GB", "DE", "FR", "NL", "BE", "AT", "CH", "IT", "IE", "SE", "PL", "AU", "NZ", "IN", "JP", "ZA",
)  # fmt: skip

_PRINTABLE: Final = frozenset(string.printable) - frozenset("\t\n\r\x0b\x0c")


def luhn_valid(digits: str) -> bool:
    """The Luhn checksum every payment card number carries."""
    total = 0
    for position, char in enumerate(reversed(digits)):
        value = int(char)
        if position % 2 == 1:
            value *= 2
            if value > 9:
                value -= 9
        total += value
    return total % 10 == 0


def iban_valid(candidate: str) -> bool:
    """ISO 13616: 15 to 34 characters whose mod-97 checksum, country code moved last, is 1."""
    iban = candidate.upper()
    if not 15 <= len(iban) <= 34 or not iban.isascii() or not iban.isalnum():
        return False
    if not (iban[:2].isalpha() and iban[2:4].isdigit()):
        return False
    rearranged = iban[4:] + iban[:4]
    return int("".join(str(int(char, 36)) for char in rearranged)) % 97 == 1


def is_basic_credentials(encoded: str) -> bool:
    """Whether a word is base64 of `user:password`, as an HTTP Basic header carries."""
    try:
        decoded = base64.b64decode(encoded, validate=True).decode("utf-8")
    except (binascii.Error, UnicodeDecodeError):
        return False
    return ":" in decoded and set(decoded) <= _PRINTABLE


def is_phone_number(candidate: str, regions: tuple[str | None, ...]) -> bool:
    """Whether a candidate is a valid number in one of `regions` (None: it carries its own
    country code, after `+` or `00`)."""
    text = "+" + candidate[2:] if candidate.startswith("00") else candidate
    return any(_valid(text, region) for region in regions)


def _valid(text: str, region: str | None) -> bool:
    try:
        number = phonenumbers.parse(text, region)
    except phonenumbers.NumberParseException:
        return False
    return phonenumbers.is_valid_number(number)

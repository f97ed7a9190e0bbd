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
    "GB", "DE", "FR", "NL", "BE", "AT", "CH", "IT", "IE", "SE", "AU", "NZ", "IN", "JP", "ZA",
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


# The length of an IBAN in each country of the IBAN registry (ISO 13616). A candidate from a
# listed country must have exactly this length, which keeps a grouped IBAN from swallowing
# the word after it; one from a country not listed needs 15 to 34 characters.
IBAN_LENGTHS: Final = {
    "AD": 24, "AE": 23, "AL": 28, "AT": 20, "AZ": 28, "BA": 20, "BE": 16, "BG": 22, "BH": 22,
    "BR": 29, "BY": 28, "CH": 21, "CR": 22, "CY": 28, "CZ": 24, "DE": 22, "DK": 18, "DO": 28,
    "EE": 20, "EG": 29, "ES": 24, "FI": 18, "FO": 18, "FR": 27, "GB": 22, "GE": 22, "GI": 23,
    "GL": 18, "GR": 27, "GT": 28, "HR": 21, "HU": 28, "IE": 22, "IL": 23, "IQ": 23, "IS": 26,
    "IT": 27, "JO": 30, "KW": 30, "KZ": 20, "LB": 28, "LC": 32, "LI": 21, "LT": 20, "LU": 20,
    "LV": 21, "MC": 27, "MD": 24, "ME": 22, "MK": 19, "MR": 27, "MT": 31, "MU": 30, "NL": 18,
    "NO": 15, "PK": 24, "PL": 28, "PS": 29, "PT": 25, "QA": 29, "RO": 24, "RS": 22, "SA": 24,
    "SC": 31, "SE": 24, "SI": 19, "SK": 24, "SM": 27, "ST": 25, "SV": 28, "TL": 23, "TN": 24,
    "TR": 26, "UA": 29, "VA": 22, "VG": 24, "XK": 20,
}  # fmt: skip


def iban_length_fits(candidate: str) -> bool:
    """Whether a candidate has its country's IBAN length (15 to 34 if the country is unknown)."""
    iban = candidate.upper()
    expected = IBAN_LENGTHS.get(iban[:2])
    return len(iban) == expected if expected is not None else 15 <= len(iban) <= 34


def iban_valid(candidate: str) -> bool:
    """ISO 13616: the country's length, and a mod-97 checksum (country code moved last) of 1."""
    iban = candidate.upper()
    if not iban_length_fits(iban) or not iban.isascii() or not iban.isalnum():
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


def is_encoded_private_key(encoded: str) -> bool:
    """Whether a base64 word is a PEM private key (as in a Secret's `tls.key`)."""
    head = encoded[:96]
    head = head[: len(head) - len(head) % 4]
    try:
        decoded = base64.b64decode(head, validate=True).decode("ascii", "replace")
    except binascii.Error:
        return False
    return decoded.startswith("-----BEGIN ") and "PRIVATE KEY" in decoded


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


def ssn_valid(area: str, group: str, serial: str) -> bool:
    """Whether the three parts of a US Social Security number are ones the SSA issues: no area
    000, 666 or 900 to 999, no group 00 and no serial 0000."""
    return area not in ("000", "666") and area[0] != "9" and group != "00" and serial != "0000"


# A UK National Insurance number: two prefix letters, six digits, a suffix A to D. HMRC never
# uses D, F, I, Q, U or V in the prefix, nor O second, nor these pairs.
_NINO_FIRST: Final = frozenset("ABCEGHJKLMNOPRSTWXYZ")
_NINO_SECOND: Final = frozenset("ABCEGHJKLMNPRSTWXYZ")
_NINO_UNUSED: Final = frozenset({"BG", "GB", "NK", "KN", "TN", "NT", "ZZ"})


def nino_valid(candidate: str) -> bool:
    """Whether a candidate (spaces allowed) is a UK National Insurance number HMRC could issue."""
    nino = candidate.replace(" ", "")
    if len(nino) != 9 or not nino[2:8].isdigit() or nino[8] not in "ABCD":
        return False
    return nino[0] in _NINO_FIRST and nino[1] in _NINO_SECOND and nino[:2] not in _NINO_UNUSED


def _decoded(encoded: str, *, urlsafe: bool = False) -> str | None:
    """A base64 word decoded as ASCII (padding added), or None if it is not base64."""
    padded = encoded + "=" * (-len(encoded) % 4)
    try:
        raw = (
            base64.urlsafe_b64decode(padded) if urlsafe else base64.b64decode(padded, validate=True)
        )
    except (binascii.Error, ValueError):
        return None
    return raw.decode("ascii", "replace")


def is_discord_token(token: str) -> bool:
    """Whether a three-part dotted word is a Discord bot token: its first part is the bot's
    numeric id in base64."""
    decoded = _decoded(token.split(".", 1)[0], urlsafe=True)
    return decoded is not None and decoded.isdigit() and 15 <= len(decoded) <= 21


def is_encoded_jwt(encoded: str) -> bool:
    """Whether a base64 word is a JSON Web Token encoded once more (as a Secret's data holds a
    service account token)."""
    head = encoded[:64]
    decoded = _decoded(head[: len(head) - len(head) % 4])
    return decoded is not None and decoded.startswith("eyJ") and decoded[3:16].isalnum()

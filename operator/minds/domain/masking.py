"""Masking of personal identifiers and secrets in free text (log lines, command lines).

Pure text rules, so they live in the domain and are the same wherever text leaves a driver.
Each kind of identifier is replaced by a typed placeholder (`[email]`, `[ip]`, ...), so a
reader still sees that something was there and what it was, never the value itself.

The rules run in a fixed order, most specific first: a JWT inside `token=...` is reported as a
JWT, an e-mail address inside a URL's credentials as a secret. Masking is idempotent: no rule
matches a placeholder, so masking masked text changes nothing and counts nothing.

Rules err on the side of masking: a version string such as `1.2.3.4` is masked as an address,
and a long number that passes the Luhn check as a card.
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Callable
from dataclasses import dataclass
from enum import StrEnum
from typing import Final


class MaskKind(StrEnum):
    EMAIL = "email"
    IP = "ip"
    TOKEN = "token"  # noqa: S105 - a placeholder name, not a credential
    JWT = "jwt"
    ACCESS_KEY = "access-key"
    CARD = "card"
    SECRET = "secret"  # noqa: S105 - a placeholder name, not a credential

    @property
    def placeholder(self) -> str:
        return f"[{self.value}]"


MaskCounts = dict[str, int]

_PLACEHOLDER: Final = r"\[(?:email|ip|token|jwt|access-key|card|secret)\]"
# A secret's value must not already be a placeholder: that keeps masking idempotent.
_NOT_MASKED: Final = rf"(?![\"']?{_PLACEHOLDER})"

_SENSITIVE_NAMES: Final = (
    r"password|passwd|passphrase|pwd|secret|token|api[_-]?key|apikey|access[_-]?key"
    r"|private[_-]?key|credentials?|auth[_-]?key|session[_-]?id|cookie"
)

# Whatever the reader sees of a replaced match: a fixed placeholder, or a function of the match
# that returns None when the candidate turns out not to be one (a failed Luhn check, say).
Replacement = Callable[[re.Match[str]], str | None]


@dataclass(frozen=True, slots=True)
class _Rule:
    kind: MaskKind
    pattern: re.Pattern[str]
    replace: Replacement


def _whole(kind: MaskKind) -> Replacement:
    return lambda _match: kind.placeholder


def _keep_prefix(kind: MaskKind) -> Replacement:
    """Keep group 1 (a key, a scheme) and replace the rest: the reader keeps the context."""
    return lambda match: match.group(1) + kind.placeholder


def _quoted_value(match: re.Match[str]) -> str:
    value = match.group(2)
    quote = value[0] if value[:1] in ("'", '"') else ""
    return f"{match.group(1)}{quote}{MaskKind.SECRET.placeholder}{quote}"


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


def _card(match: re.Match[str]) -> str | None:
    """Card numbers inside a run of digit groups ("4111 1111 1111 1111", or one glued to an
    order id by a space): the leftmost, then longest, span of whole groups holding 13 to 19
    digits that passes the Luhn check is masked; then the rest of the run is searched."""
    groups = [(group.start(), group.end()) for group in re.finditer(r"\d+", match.group(0))]
    text = match.group(0)
    pieces: list[str] = []
    position = 0
    first = 0
    masked = False
    while first < len(groups):
        span = _card_span(text, groups, first)
        if span is None:
            first += 1
            continue
        last = span
        pieces.append(text[position : groups[first][0]])
        pieces.append(MaskKind.CARD.placeholder)
        position = groups[last][1]
        first = last + 1
        masked = True
    if not masked:
        return None
    pieces.append(text[position:])
    return "".join(pieces)


def _card_span(text: str, groups: list[tuple[int, int]], first: int) -> int | None:
    """The last group of the longest valid card starting at group `first`, if any."""
    best: int | None = None
    digits = ""
    for last in range(first, len(groups)):
        digits += text[groups[last][0] : groups[last][1]]
        if len(digits) > 19:
            break
        if len(digits) >= 13 and luhn_valid(digits):
            best = last
    return best


def _ipv6(match: re.Match[str]) -> str | None:
    candidate = match.group(0)
    try:
        ipaddress.IPv6Address(candidate)
    except ValueError:
        # Clock times (12:30:45) and MAC addresses look alike but are not addresses.
        return None
    return MaskKind.IP.placeholder


_OCTET: Final = r"(?:25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)"
_EMAIL_LOCAL: Final = r"[A-Za-z0-9!#$%&'*+/=?^_`{|}~.-]+"
_DOMAIN: Final = r"(?:[A-Za-z0-9-]+\.)+[A-Za-z0-9-]{2,}"


def _rules() -> tuple[_Rule, ...]:
    flags = re.IGNORECASE
    return (
        _Rule(
            MaskKind.SECRET,
            re.compile(
                r"-----BEGIN [A-Z ]*PRIVATE KEY-----.*?(?:-----END [A-Z ]*PRIVATE KEY-----|$)",
                re.DOTALL,
            ),
            _whole(MaskKind.SECRET),
        ),
        _Rule(
            MaskKind.JWT,
            re.compile(r"\beyJ[A-Za-z0-9_-]{5,}\.eyJ[A-Za-z0-9_-]{5,}\.[A-Za-z0-9_-]*"),
            _whole(MaskKind.JWT),
        ),
        _Rule(
            MaskKind.TOKEN,
            re.compile(rf"(\bauthorization\s*[:=]\s*bearer\s+){_NOT_MASKED}[^\s,;\"']+", flags),
            _keep_prefix(MaskKind.TOKEN),
        ),
        _Rule(
            MaskKind.TOKEN,
            # Outside an Authorization header, only a token-looking word counts, so that prose
            # ("bearer of bad news") is left alone.
            re.compile(
                r"(\bbearer\s+)(?=[A-Za-z0-9._~+/-]*[0-9._~+/-])[A-Za-z0-9._~+/-]{12,}=*", flags
            ),
            _keep_prefix(MaskKind.TOKEN),
        ),
        _Rule(
            MaskKind.SECRET,
            re.compile(rf"(\bauthorization\s*[:=]\s*basic\s+){_NOT_MASKED}[A-Za-z0-9+/=]+", flags),
            _keep_prefix(MaskKind.SECRET),
        ),
        _Rule(
            MaskKind.SECRET,
            # user:password@ in a URL: keep the scheme and user, drop the password.
            re.compile(
                r"(\b[a-z][a-z0-9+.-]{0,30}://[^\s:/@\[\]]{1,256}:)[^\s@/\[\]]+(?=@)", flags
            ),
            _keep_prefix(MaskKind.SECRET),
        ),
        _Rule(
            MaskKind.ACCESS_KEY,
            re.compile(r"\b(?:AKIA|ASIA|AGPA|AIDA|AROA|AIPA|ANPA|ANVA|ABIA|ACCA)[A-Z0-9]{16}\b"),
            _whole(MaskKind.ACCESS_KEY),
        ),
        _Rule(
            MaskKind.ACCESS_KEY,
            re.compile(r"\bAIza[0-9A-Za-z_-]{35}"),
            _whole(MaskKind.ACCESS_KEY),
        ),
        _Rule(
            MaskKind.TOKEN,
            # GitHub and Slack tokens announce themselves by prefix.
            re.compile(r"\b(?:gh[pousr]_[A-Za-z0-9]{30,}|xox[abposr]-[A-Za-z0-9-]{10,})"),
            _whole(MaskKind.TOKEN),
        ),
        _Rule(
            MaskKind.SECRET,
            re.compile(
                rf"(\baws_secret_access_key[\"']?\s*[:=]\s*[\"']?){_NOT_MASKED}[A-Za-z0-9/+=]{{40}}",
                flags,
            ),
            _keep_prefix(MaskKind.SECRET),
        ),
        _Rule(
            MaskKind.SECRET,
            # key=value, key: value, "key": "value", with the key anywhere in a longer name
            # (DB_PASSWORD, client_secret, x-api-key).
            re.compile(
                rf"((?<![\w.-])[\w.-]{{0,64}}(?:{_SENSITIVE_NAMES})[\w.-]{{0,64}}[\"']?\s*[:=]\s*){_NOT_MASKED}"
                r"(\"[^\"]*\"|'[^']*'|[^\s,;&\"'}\])]+)",
                flags,
            ),
            _quoted_value,
        ),
        _Rule(
            MaskKind.SECRET,
            # Command-line flags: --password hunter2, -token abc.
            re.compile(
                rf"((?<![\w-])--?[\w-]{{0,64}}(?:{_SENSITIVE_NAMES})[\w-]{{0,64}}\s+){_NOT_MASKED}(?!-)[^\s]+",
                flags,
            ),
            _keep_prefix(MaskKind.SECRET),
        ),
        _Rule(
            MaskKind.EMAIL,
            # Matches start only where a run of local-part characters starts: linear time.
            re.compile(rf"(?<![A-Za-z0-9!#$%&'*+/=?^_`{{|}}~.-]){_EMAIL_LOCAL}@{_DOMAIN}"),
            _whole(MaskKind.EMAIL),
        ),
        _Rule(
            MaskKind.CARD,
            # Runs of digit groups joined by single spaces or dashes; `_card` finds the cards.
            re.compile(r"\d+(?:[ -]\d+)*"),
            _card,
        ),
        _Rule(
            MaskKind.IP,
            re.compile(
                r"(?<![\w:.])(?:[0-9A-Fa-f]{0,4}:){2,7}"
                rf"(?:{_OCTET}(?:\.{_OCTET}){{3}}|[0-9A-Fa-f]{{0,4}})(?:%[\w.]+)?(?![\w:])"
            ),
            _ipv6,
        ),
        _Rule(
            MaskKind.IP,
            re.compile(rf"(?<![\d.]){_OCTET}(?:\.{_OCTET}){{3}}(?!\.?\d)"),
            _whole(MaskKind.IP),
        ),
    )


RULES: Final = _rules()


def mask_text(text: str) -> tuple[str, MaskCounts]:
    """`text` with every identifier and secret replaced, and how many of each kind were."""
    counts: MaskCounts = {}
    for rule in RULES:

        def substitute(match: re.Match[str], rule: _Rule = rule) -> str:
            replaced = rule.replace(match)
            if replaced is None:
                return match.group(0)
            # One match can hold several (a run of digit groups with two cards in it).
            found = replaced.count(rule.kind.placeholder)
            counts[rule.kind.value] = counts.get(rule.kind.value, 0) + found
            return replaced

        text = rule.pattern.sub(substitute, text)
    return text, counts


def merge_counts(into: MaskCounts, more: MaskCounts) -> MaskCounts:
    """Add `more` to `into` (in place) and return it."""
    for kind, count in more.items():
        into[kind] = into.get(kind, 0) + count
    return into

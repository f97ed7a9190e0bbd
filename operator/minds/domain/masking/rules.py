"""The rules that find identifiers and secrets inside one line of text.

Each rule is a pattern and a replacement; the replacement may look at the match and decline
(return None) when a check says the candidate is not one: a failed Luhn or mod-97 checksum, a
phone number no numbering plan knows, an SSN the SSA never issues, a key name that is not
secret. Secrets are found by what anchors them: a key name, a prefix that names the issuer
(`tokens.py`), the command whose flag carries a password (`commands.py`), an AWS key id beside
its secret; never by how random a word looks, which would mask digests. The rules run in a fixed
order, most specific first: a JWT inside `token=...` is reported as a JWT, an e-mail address in
a URL's credentials as a secret, and digits already masked as a card are no phone number.
No rule matches a placeholder, so masking masked text changes nothing and counts nothing.

A placeholder can open a boundary another rule needs (`203.0.113.9password=x` becomes
`[ip]password=x`), so `mask_inline` runs the rules again until a pass masks nothing.

An IP address is masked when it is public: a client's address can point at a person. The
cluster's own private, loopback and link-local addresses are infrastructure facts a diagnosis
needs and carry no one's identity, so they are kept, as are the well-known public resolvers.
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Final, Protocol

from minds.domain.masking.checks import (
    NANP_REGIONS,
    TRUNK_ZERO_REGIONS,
    iban_length_fits,
    iban_valid,
    is_basic_credentials,
    is_discord_token,
    is_encoded_jwt,
    is_encoded_private_key,
    is_phone_number,
    luhn_valid,
    nino_valid,
    ssn_valid,
)
from minds.domain.masking.commands import command_password_pattern
from minds.domain.masking.keys import is_reference_key, is_secret_key, reference_hides_secret
from minds.domain.masking.kinds import NOT_MASKED, MaskCounts, MaskKind, merge_counts
from minds.domain.masking.tokens import issuer_pattern, webhook_pattern

# Whatever the reader sees of a replaced match: a fixed placeholder, or a function of the match
# that returns None when the candidate turns out not to be one.
Replacement = Callable[[re.Match[str]], str | None]


class TextRule(Protocol):
    def apply(self, text: str, counts: MaskCounts) -> str:
        """`text` with what this rule finds replaced; adds what it replaced to `counts`."""
        ...


@dataclass(frozen=True, slots=True)
class Rule:
    """A pattern whose matches are replaced (unless `replace` declines one)."""

    kind: MaskKind
    pattern: re.Pattern[str]
    replace: Replacement

    def apply(self, text: str, counts: MaskCounts) -> str:
        # Most lines hold nothing a given rule looks for: one search says so, and costs less
        # than setting up the scan over all matches.
        first = self.pattern.search(text)
        if first is None:
            return text
        pieces: list[str] = []
        done = 0  # text[:done] is in pieces
        for match in self.pattern.finditer(text, first.start()):
            replaced = self.replace(match)
            if replaced is None:
                continue
            pieces += [text[done : match.start()], replaced]
            # One match can hold several (a run of digit groups with two cards in it).
            placeholder = self.kind.placeholder
            found = replaced.count(placeholder) - match.group(0).count(placeholder)
            counts[self.kind.value] = counts.get(self.kind.value, 0) + found
            done = match.end()
        if not pieces:
            return text
        return "".join([*pieces, text[done:]])


# A span of the text (start, end) and what is shown instead of it.
Masked = tuple[int, int, str]


def _mask_after_keys(
    text: str,
    key: re.Pattern[str],
    values: Callable[[str, re.Match[str]], list[Masked]],
    counts: MaskCounts,
) -> str:
    """`text` with the values `values` finds after each match of `key` replaced, each counted
    as a secret. The next key is looked for after the last value replaced."""
    pieces: list[str] = []
    done = 0  # text[:done] is in pieces
    start = 0
    while (found := key.search(text, start)) is not None:
        start = max(found.end(), found.start() + 1)
        for begin, end, shown in values(text, found):
            pieces += [text[done:begin], shown]
            counts[MaskKind.SECRET.value] = counts.get(MaskKind.SECRET.value, 0) + 1
            done = start = end
    if not pieces:
        return text
    return "".join([*pieces, text[done:]])


def hidden_value(raw: str) -> str:
    """What is shown for a secret value: the placeholder, in the value's quotes if it had any."""
    quote = raw[0] if raw[:1] in ("'", '"') and raw[-1:] == raw[:1] and len(raw) > 1 else ""
    return quote + _SECRET + quote


def reference_value_shown(field: str | None, raw: str) -> str | None:
    """What is shown for a value under a reference to a Secret (`field` None: the reference's
    own value), or None when it is a name and stays."""
    if _NOT_A_VALUE.fullmatch(raw):
        return None
    shown = hidden_value(raw)
    bare = raw[1:-1] if shown != _SECRET else raw
    return shown if reference_hides_secret(field, bare) else None


@dataclass(frozen=True, slots=True)
class KeyedRule:
    """A key (`password=`, `--token `, `name: DB_PASSWORD, value: `) whose value is masked when
    `is_secret_key` accepts the key.

    The key is matched and judged before the value is read: a value can run long, and reading
    it after every key that turns out harmless would be quadratic (`a:a:a:...`).
    """

    key: re.Pattern[str]
    value: re.Pattern[str]

    def apply(self, text: str, counts: MaskCounts) -> str:
        return _mask_after_keys(text, self.key, self._value, counts)

    def _value(self, text: str, key: re.Match[str]) -> list[Masked]:
        if not is_secret_key(key.group("key")):
            return []
        value = self.value.match(text, key.end())
        if value is None or _NOT_A_VALUE.fullmatch(value.group(0)):
            return []
        return [(value.start(), value.end(), hidden_value(value.group(0)))]


@dataclass(frozen=True, slots=True)
class ReferenceRule:
    """A reference to a Secret (`secretRef: db-creds`, `secretKeyRef: {name: db, key: pw}`)
    whose value is no name but a secret written where the name belongs: that value is masked,
    and the names are kept (`reference_value_shown` decides which is which)."""

    key: re.Pattern[str]

    def apply(self, text: str, counts: MaskCounts) -> str:
        if "ecret" not in text and "ECRET" not in text:
            return text  # every reference key has `secret` in its name: most lines have none
        return _mask_after_keys(text, self.key, _reference_values, counts)


_SECRET: Final = MaskKind.SECRET.placeholder
_FLOW_MAPPING: Final = re.compile(r"\{[^{}\n]*\}")
_FLOW_FIELD: Final = re.compile(
    r"[{,][ \t]*[\"']?(?P<field>[\w.-]+)[\"']?[ \t]*:[ \t]*"
    rf"(?P<value>{NOT_MASKED}(?:\"[^\"\n]*\"|'[^'\n]*'|[^\s,}}\"']+))"
)
_REFERENCE_VALUE: Final = re.compile(
    rf"(?P<value>{NOT_MASKED}(?:\"[^\"\n]*\"|'[^'\n]*'|[^\s,;&\"'}}\])]+))"
)


def _reference_values(text: str, key: re.Match[str]) -> list[Masked]:
    """The secrets a reference holds after its key, if `is_reference_key` accepts the key:
    among the fields of a flow mapping (`{name: db, key: password}`), or its one value."""
    if not is_reference_key(key.group("key")):
        return []
    mapping = _FLOW_MAPPING.match(text, key.end())
    if mapping is not None:
        fields = _FLOW_FIELD.finditer(text, mapping.start(), mapping.end())
        values = [(field.group("field"), field) for field in fields]
    else:
        value = _REFERENCE_VALUE.match(text, key.end())
        values = [] if value is None else [(None, value)]
    return [
        (value.start("value"), value.end("value"), shown)
        for field, value in values
        if (shown := reference_value_shown(field, value.group("value"))) is not None
    ]


def _whole(kind: MaskKind) -> Replacement:
    return lambda _match: kind.placeholder


def _fixed(kind: MaskKind, pattern: str) -> Rule:
    """A rule whose every match is replaced whole by the kind's placeholder."""
    return Rule(kind, re.compile(pattern), _whole(kind))


def _verified(kind: MaskKind, pattern: str, check: Callable[[str], bool]) -> Rule:
    """A rule whose matches are replaced whole when `check` accepts them."""
    return Rule(kind, re.compile(pattern), _checked(kind, check))


def _keep_prefix(kind: MaskKind) -> Replacement:
    """Keep group 1 (a key, a scheme) and replace the rest: the reader keeps the context."""
    return lambda match: match.group(1) + kind.placeholder


def _checked(kind: MaskKind, check: Callable[[str], bool], group: int = 0) -> Replacement:
    """Replace `group` when `check` accepts it, keeping whatever else the pattern matched."""

    def replace(match: re.Match[str]) -> str | None:
        if not check(match.group(group)):
            return None
        whole = match.group(0)
        start, end = match.start(group) - match.start(0), match.end(group) - match.start(0)
        return whole[:start] + kind.placeholder + whole[end:]

    return replace


# Values that say there is no secret here: booleans, empties, references to a variable
# (`${DB_PASSWORD}`, `$PGPASSWORD`, `{{ .Values.password }}`), earlier redactions, and the
# scheme word of an Authorization header whose credentials the header rules mask.
_NOT_A_VALUE: Final = re.compile(
    r"[\"']?(?:true|false|null|none|nil|yes|no|on|off|\*+|<[^>]*>|\$\{[^}]*\}?"
    r"|(?-i:\$[A-Z_]{2,}[A-Z0-9_]*)|\{\{[^}]*(?:\}\})?|redacted|\[redacted\]"
    r"|bearer|basic|digest|negotiate)?[\"']?",
    re.IGNORECASE,
)


def _card(match: re.Match[str]) -> str | None:
    """Card numbers inside a run of digit groups ("4111 1111 1111 1111", or one glued to an
    order id by a space): the leftmost, then longest, span of whole groups holding 13 to 19
    digits that passes the Luhn check is masked; then the rest of the run is searched."""
    text = match.group(0)
    groups = [(group.start(), group.end()) for group in re.finditer(r"\d+", text)]
    pieces: list[str] = []
    position = 0
    first = 0
    while first < len(groups):
        last = _card_span(text, groups, first)
        if last is None:
            first += 1
            continue
        pieces += [text[position : groups[first][0]], MaskKind.CARD.placeholder]
        position = groups[last][1]
        first = last + 1
    if not pieces:
        return None
    return "".join([*pieces, text[position:]])


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


def _iban(match: re.Match[str]) -> str | None:
    """The run of whole groups, from the country code on, that has the country's IBAN length
    and checksum: a grouped IBAN may be followed by a word that looks like one more group."""
    text = match.group(0)
    for group in re.finditer(r"[A-Za-z0-9]+", text):
        compact = re.sub(r"[ -]", "", text[: group.end()])
        if iban_length_fits(compact) and iban_valid(compact):
            return MaskKind.IBAN.placeholder + text[group.end() :]
    return None


# The cluster's own addresses: infrastructure, not anyone's identity.
_INFRASTRUCTURE_NETWORKS: Final = tuple(
    ipaddress.ip_network(network)
    for network in (
        "10.0.0.0/8",
        "172.16.0.0/12",
        "192.168.0.0/16",
        "100.64.0.0/10",
        "127.0.0.0/8",
        "169.254.0.0/16",
        "0.0.0.0/32",
        "255.255.255.255/32",
        "::1/128",
        "::/128",
        "fc00::/7",
        "fe80::/10",
    )
)


# Public DNS resolvers: public addresses, but of a service everyone uses, never of a person.
PUBLIC_RESOLVERS: Final = frozenset(
    ipaddress.ip_address(address)
    for address in (
        "8.8.8.8",
        "8.8.4.4",
        "1.1.1.1",
        "1.0.0.1",
        "9.9.9.9",
        "149.112.112.112",
        "208.67.222.222",
        "208.67.220.220",
        "2001:4860:4860::8888",
        "2001:4860:4860::8844",
        "2606:4700:4700::1111",
    )
)
_CLUSTER_DOMAINS: Final = (".svc", ".cluster.local")


def _is_public_address(candidate: str) -> bool:
    try:
        address = ipaddress.ip_address(candidate.split("%", 1)[0])
    except ValueError:
        # Clock times (12:30:45) and MAC addresses look alike but are not addresses.
        return False
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        address = address.ipv4_mapped
    if address in PUBLIC_RESOLVERS:
        return False
    return not any(address in network for network in _INFRASTRUCTURE_NETWORKS)


# 05.01.2024, 01/02/24, 2024-01-15: dates that some numbering plan would accept as a number.
_DATE: Final = re.compile(
    r"\(?(?:\d{1,2}([./-])\d{1,2}\1(?:\d{4}|\d{2})|\d{4}([./-])\d{1,2}\2\d{1,2})\)?"
)


def _phone(regions: tuple[str | None, ...]) -> Replacement:
    return _checked(
        MaskKind.PHONE,
        lambda text: not _DATE.fullmatch(text) and is_phone_number(text, regions),
    )


def _email(match: re.Match[str]) -> str | None:
    """An address, unless it names a service rather than a person: an SSH remote (`git@`)
    or a user at a cluster-internal host (`postgres@db.ops.svc.cluster.local`)."""
    address = match.group(0).lower()
    if address.startswith("git@") or address.endswith(_CLUSTER_DOMAINS):
        return None
    return MaskKind.EMAIL.placeholder


_OCTET: Final = r"(?:25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)"
# Unicode letters count: internationalised addresses (josé@exämple.de) are addresses too.
_EMAIL_CHAR: Final = r"[\w!#$%&'*+/=?^`{|}~.-]"
_EMAIL_CHAR_NOT_QUOTE: Final = r"[\w!#$%&*+/=?^`{|}~.-]"
_QUOTED_LOCAL: Final = r'"(?:[^"\\\r\n]|\\.){1,64}"'
# A top-level domain has letters (or is punycode): `lodash@4.17.21` is a package, not a person.
_DOMAIN: Final = r"(?:[\w-]+\.)+(?:xn--[\w-]+|[^\W\d_]{2,})\b"
_KEY: Final = r"(?P<key>(?<![\w.-])(?:-{1,2}|\.)?[A-Za-z_][\w.-]{0,80})"
_WORD: Final = r"[^\s,;&\"'}\])]+"
_QUOTED_OR_WORD: Final = rf"\"[^\"\n]*\"|'[^'\n]*'|{_WORD}"
_PHONE_END: Final = r"(?![\w.-]|:\d)"
# Who would write a phone number after a letter, a dot, a slash or a colon? Versions, paths,
# ports and clock times start that way, so a number must not; only `tel:+...` may.
_PHONE_START: Final = r"(?<![\w.+/:-])"
_INTERNATIONAL_START: Final = r"(?<![\w.+/-])"
_PRIVATE_KEY_EDGE: Final = r"-{{4,5}} ?{edge} (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)? ?-{{4,5}}"
_AWS_KEY_ID: Final = (
    r"\b(?:A3T[A-Z0-9]|AKIA|ASIA|AGPA|AIDA|AROA|AIPA|ANPA|ANVA|ABIA|ACCA)[A-Z0-9]{16}\b"
)
# An AWS secret access key: 40 characters of base64, with upper and lower case and digits
# (a 40-digit hex commit id near a key id is no secret).
_AWS_SIGNING_KEY: Final = (
    r"(?<![A-Za-z0-9/+=])(?P<{name}>(?=[A-Za-z0-9/+]{{0,39}}[a-z])(?=[A-Za-z0-9/+]{{0,39}}[A-Z])"
    r"(?=[A-Za-z0-9/+]{{0,39}}\d)[A-Za-z0-9/+]{{40}})(?![A-Za-z0-9/+=])"
)
# Near a key id: on the same line, at most this many characters apart (`id:secret`, `id,secret`
# in a CSV of credentials, `--access-key id --secret-key secret`), in either order.
_AWS_PAIR_GAP: Final = r"[^\n]{1,80}?"
_AWS_PAIR: Final = (
    _AWS_KEY_ID + _AWS_PAIR_GAP + _AWS_SIGNING_KEY.format(name="value")
    + "|" + _AWS_SIGNING_KEY.format(name="value2") + _AWS_PAIR_GAP + _AWS_KEY_ID
)  # fmt: skip
# Patterns below that start with a character class, with what must not come before them
# checked after it (`\d(?<![\w-]\d)`), are looked for only where that class matches: a
# pattern that starts with a lookbehind is tried at every position of every line.
#
# Card numbers grouped by dots or underscores: only the groupings cards are printed in
# (4-4-4-4, 4-4-4-4-3, 4-6-5, 4-6-4), so that versions, OIDs and timestamps stay.
_CARD_DOTTED: Final = (
    r"\d{4}(?<![\w.]\d{4})(?:([._])\d{4}\1\d{4}\1\d{4}(?:\1\d{1,3})?|([._])\d{6}\2\d{4,5})"
    r"(?![\w]|\.\d)"
)
# US Social Security numbers: 123-45-6789 anywhere; undashed only after their label.
_SSN: Final = r"\d(?<![\w-]\d)\d\d-\d\d-\d{4}(?![\w-]|\.\d)"
_SSN_LABELLED: Final = (
    r"([sS](?<!\w[sS])(?i:sn|ocial[ _-]security(?:[ _-]n(?:umber|o\.?))?)[\"']?\s*"
    r"(?:[:=#]|is)?\s*[\"']?)(\d{3})[- ]?(\d{2})[- ]?(\d{4})\b"
)
# UK National Insurance numbers: QQ 12 34 56 C or QQ123456C, in capitals.
_NINO: Final = r"[A-Z](?<!\w[A-Z])[A-Z] ?\d{2} ?\d{2} ?\d{2} ?[A-D]\b"


def _labelled_ssn(match: re.Match[str]) -> str | None:
    """A labelled SSN (`SSN 123456789`), its label kept, when the SSA could issue it."""
    if not ssn_valid(match.group(2), match.group(3), match.group(4)):
        return None
    return match.group(1) + MaskKind.NATIONAL_ID.placeholder


def _value(kind: MaskKind) -> Replacement:
    """Replace the group named `value…` that took part in the match (each alternative of the
    pattern has one), keeping whatever else the pattern matched."""

    def replace(match: re.Match[str]) -> str | None:
        name = next(name for name, found in match.groupdict().items() if found is not None)
        whole, offset = match.group(0), match.start()
        start, end = match.span(name)
        return whole[: start - offset] + kind.placeholder + whole[end - offset :]

    return replace


def _rules() -> tuple[TextRule, ...]:
    flags = re.IGNORECASE
    return (
        Rule(
            MaskKind.SECRET,
            # A whole private key on one line (JSON with \n escapes), or its start when cut.
            re.compile(
                _PRIVATE_KEY_EDGE.format(edge="BEGIN")
                + ".*?(?:"
                + _PRIVATE_KEY_EDGE.format(edge="END")
                + "|$)",
                re.DOTALL,
            ),
            _whole(MaskKind.SECRET),
        ),
        # A private key in base64, as a Secret's data holds it: "LS0tLS1CRUdJTi" is how
        # "-----BEGIN" encodes.
        _verified(MaskKind.SECRET, r"\bLS0tLS1CRUdJTi[A-Za-z0-9+/]*={0,2}", is_encoded_private_key),
        Rule(
            MaskKind.SECRET,
            # A cookie header: every cookie in it may be a session.
            re.compile(rf"(\b(?:set-)?cookie\s*:\s*){NOT_MASKED}\S.*", re.IGNORECASE),
            _keep_prefix(MaskKind.SECRET),
        ),
        _fixed(MaskKind.JWT, r"\beyJ[A-Za-z0-9_-]{5,}\.eyJ[A-Za-z0-9_-]{5,}\.[A-Za-z0-9_-]*"),
        # A JWT in base64 once more, as a Secret's data holds a service account's token.
        _verified(MaskKind.JWT, r"\bZXlK[A-Za-z0-9+/]{40,}={0,2}", is_encoded_jwt),
        Rule(
            MaskKind.TOKEN,
            re.compile(rf"(\bauthorization\s*[:=]\s*bearer\s+){NOT_MASKED}[^\s,;\"']+", flags),
            _keep_prefix(MaskKind.TOKEN),
        ),
        Rule(
            MaskKind.TOKEN,
            # Outside an Authorization header, only a token-looking word counts, so that prose
            # ("bearer of bad news") is left alone.
            re.compile(
                r"(\bbearer\s+)(?=[A-Za-z0-9._~+/-]*[0-9._~+/-])[A-Za-z0-9._~+/-]{12,}=*", flags
            ),
            _keep_prefix(MaskKind.TOKEN),
        ),
        Rule(
            MaskKind.SECRET,
            re.compile(rf"(\bauthorization\s*[:=]\s*basic\s+){NOT_MASKED}[A-Za-z0-9+/=]+", flags),
            _keep_prefix(MaskKind.SECRET),
        ),
        Rule(
            MaskKind.SECRET,
            # "basic dXNlcjpwYXNz" anywhere: only when it decodes to user:password, so that
            # "basic setup" stays.
            re.compile(r"\bbasic\s+([A-Za-z0-9+/]{4,}={0,2})(?![\w+/=])", flags),
            _checked(MaskKind.SECRET, is_basic_credentials, group=1),
        ),
        Rule(
            MaskKind.SECRET,
            # user:password@host in a URL, the user possibly empty and the password possibly
            # holding an unescaped @: the password runs to the last @ before the host.
            re.compile(
                r"(\b[a-z][a-z0-9+.-]{0,30}://[^\s:/@\[\]]{0,256}:)"
                rf"{NOT_MASKED}[^\s/\[\]]+(?=@[^\s@/\[\]]+)",
                flags,
            ),
            _keep_prefix(MaskKind.SECRET),
        ),
        # An AWS secret access key beside its key id, in either order, with no key name to
        # say what it is (`AKIA…:wJalr…`, a CSV row, `--access-key AKIA… --secret wJalr…`).
        Rule(MaskKind.SECRET, re.compile(_AWS_PAIR), _value(MaskKind.SECRET)),
        # Cloud access key ids: AWS, Google (`AIza…`), Alibaba (`LTAI…`).
        _fixed(
            MaskKind.ACCESS_KEY, rf"{_AWS_KEY_ID}|\bAIza[0-9A-Za-z_-]{{35}}|\bLTAI[A-Za-z0-9]{{20}}"
        ),
        # Tokens that announce their issuer by their shape (GitHub, Slack, GitLab, ...).
        _fixed(MaskKind.TOKEN, issuer_pattern()),
        _verified(
            MaskKind.TOKEN, r"\b[MNO][\w-]{23,27}\.[\w-]{6}\.[\w-]{27,38}\b", is_discord_token
        ),
        # Webhook URLs whose path is the credential (Slack, Teams, Discord).
        Rule(MaskKind.TOKEN, re.compile(webhook_pattern()), _keep_prefix(MaskKind.TOKEN)),
        Rule(
            MaskKind.SECRET,
            # `aws_secret_access_key = …`, or as `aws configure set` takes it, after a space.
            re.compile(
                r"(\baws_secret_access_key[\"']?(?:\s*[:=]\s*|\s+)[\"']?)"
                rf"{NOT_MASKED}[A-Za-z0-9/+=]{{40}}",
                flags,
            ),
            _keep_prefix(MaskKind.SECRET),
        ),
        # Passwords in a command's own flag: `mysql -pS3cret`, `sshpass -p S3cret`,
        # `curl -u user:S3cret`, `openssl … -passin pass:S3cret`.
        Rule(MaskKind.SECRET, re.compile(command_password_pattern()), _value(MaskKind.SECRET)),
        # A secret written where a reference to a Secret names it.
        ReferenceRule(re.compile(rf"{_KEY}[\"']?\s*[:=]\s*")),
        KeyedRule(
            # An env entry written inline: {name: DB_PASSWORD, value: hunter2}, or its JSON, or
            # an XML setting: <add key="DbPassword" value="…"/>.
            re.compile(
                r"[\"']?(?:name|key)[\"']?\s*[:=]\s*[\"']?(?P<key>[\w.-]{1,128})[\"']?\s*,?\s*"
                r"[\"']?value[\"']?\s*[:=]\s*",
                re.IGNORECASE,
            ),
            re.compile(rf"{NOT_MASKED}(?:{_QUOTED_OR_WORD})"),
        ),
        KeyedRule(
            # key=value, "key"="value", "key" => "value", for every key `is_secret_key` accepts:
            # the value ends at a space, as on a command line or in a query string.
            re.compile(rf"{_KEY}[\"']?\s*=>?\s*"),
            re.compile(rf"{NOT_MASKED}(?:{_QUOTED_OR_WORD})"),
        ),
        KeyedRule(
            # key: value, "key": "value". After a colon the value may be a phrase, as in YAML
            # (`password: correct horse battery staple`): it runs on over words that are not
            # themselves keys.
            re.compile(rf"{_KEY}[\"']?\s*:[ \t]*"),
            re.compile(
                rf"{NOT_MASKED}(?:{_QUOTED_OR_WORD})"
                rf"(?:[ \t]+(?![\w.-]+[\"']?\s*[:=]){NOT_MASKED}(?:{_WORD}))*"
            ),
        ),
        Rule(
            MaskKind.SECRET,
            # Prose: "the password is Spr1ng2025!". Only a word with a digit or a symbol counts,
            # so that "the password is required" stays.
            # Or right after its name, as in a chat or a ticket: "pw hunter22", but no path
            # (`pwd /home/app`).
            re.compile(
                r"(\b(?:(?:password|passphrase|passwd|pwd|pin|secret|token|api key)s?\s+"
                r"(?:is|was|will be|set to|changed to)\s*:?\s+"
                rf"|(?:pw|pwd|passwd|password|passphrase)[ \t]+(?![/~]))){NOT_MASKED}"
                r"(?=[^\s,;]*[\d!@#$%^&*])[^\s,;]{6,}",
                re.IGNORECASE,
            ),
            _keep_prefix(MaskKind.SECRET),
        ),
        KeyedRule(
            # What `aws configure set` sets: `aws configure set aws_session_token …`.
            re.compile(r"aws[ \t]+configure[ \t]+set[ \t]+(?:[\w-]+\.)*(?P<key>[\w-]{1,64})\s+"),
            re.compile(rf"{NOT_MASKED}(?!-)[^\s]+"),
        ),
        KeyedRule(
            # Command-line flags: --password hunter2, -token abc.
            re.compile(r"(?<![\w-])--?(?P<key>[\w-]{1,64})\s+"),
            re.compile(rf"{NOT_MASKED}(?!-)[^\s]+"),
        ),
        _fixed(MaskKind.EMAIL, rf"{_QUOTED_LOCAL}@{_DOMAIN}"),
        Rule(
            MaskKind.EMAIL,
            # Matches start only where a run of local-part characters starts: linear time.
            # An apostrophe may sit inside a local part (o'brien@...) but one before it is a
            # quote: `'bob@example.com'` masks as `'[email]'`; unless nothing but the `@`
            # follows it, as in `'@example.com`, whose local part is the apostrophe itself.
            re.compile(rf"(?<!{_EMAIL_CHAR_NOT_QUOTE})(?!'(?!@)){_EMAIL_CHAR}{{1,64}}@{_DOMAIN}"),
            _email,
        ),
        Rule(
            MaskKind.IBAN,
            re.compile(r"\b[A-Za-z]{2}\d{2}(?:[ -]?[A-Za-z0-9]{1,4}){3,8}\b"),
            _iban,
        ),
        _verified(MaskKind.NATIONAL_ID, _SSN, lambda text: ssn_valid(*text.split("-"))),
        Rule(MaskKind.NATIONAL_ID, re.compile(_SSN_LABELLED), _labelled_ssn),
        _verified(MaskKind.NATIONAL_ID, _NINO, nino_valid),
        _verified(MaskKind.CARD, _CARD_DOTTED, lambda text: luhn_valid(re.sub(r"\D", "", text))),
        Rule(
            MaskKind.CARD,
            # Runs of digit groups joined by single spaces or dashes; `_card` finds the cards.
            re.compile(r"\d+(?:[ -]\d+)*"),
            _card,
        ),
        Rule(
            MaskKind.IP,
            re.compile(
                r"(?<![\w:.])(?:[0-9A-Fa-f]{0,4}:){2,7}"
                rf"(?:{_OCTET}(?:\.{_OCTET}){{3}}|[0-9A-Fa-f]{{0,4}})(?:%[\w.]+)?(?![\w:])"
            ),
            _checked(MaskKind.IP, _is_public_address),
        ),
        _verified(
            MaskKind.IP,
            # A version with four parts is no address: `version 4.1.1.1`, `Chrome/120.0.0.0` in
            # a user agent (after `//`, in a URL, it is one).
            rf"(?<![\w.])(?<![A-Za-z]/)(?<!version )(?<!Version ){_OCTET}(?:\.{_OCTET}){{3}}"
            r"(?!\.?\d)",
            _is_public_address,
        ),
        Rule(
            MaskKind.PHONE,
            # +44 20 7946 0958, 0044 (0)20 7946-0958, +1 (415) 555-2671.
            re.compile(rf"{_INTERNATIONAL_START}(?:\+|00)[1-9][\d ().-]{{5,20}}\d{_PHONE_END}"),
            _phone((None,)),
        ),
        Rule(
            MaskKind.PHONE,
            # (415) 555-2671, 415-555-2671, 415.555.2671: NANP needs its separators.
            re.compile(
                rf"{_PHONE_START}(?:\([2-9]\d\d\) ?|[2-9]\d\d[ .-])[2-9]\d\d[ .-]\d{{4}}"
                + _PHONE_END
            ),
            _phone(NANP_REGIONS),
        ),
        Rule(
            MaskKind.PHONE,
            # 020 7946 0958, (030) 1234567, 06 12 34 56 78, 07700900123: a trunk 0 first.
            re.compile(
                rf"{_PHONE_START}(?:\(0\d{{1,4}}\)|0\d{{1,4}})(?:[ /.-]?\d{{2,8}}){{1,4}}"
                + _PHONE_END
            ),
            _phone(TRUNK_ZERO_REGIONS),
        ),
    )


RULES: Final = _rules()
_MAX_PASSES: Final = 4


def mask_inline(text: str) -> tuple[str, MaskCounts]:
    """`text` with every identifier and secret the rules find replaced, and how many of each."""
    counts: MaskCounts = {}
    # Until a pass masks nothing: masking masked text must change nothing.
    for _ in range(_MAX_PASSES):
        found: MaskCounts = {}
        for rule in RULES:
            text = rule.apply(text, found)
        if not any(found.values()):
            break
        merge_counts(counts, found)
    return text, counts

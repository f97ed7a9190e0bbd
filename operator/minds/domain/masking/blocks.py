"""Secrets that span lines: a PEM private key, a YAML or JSON block under a secret key, an env
entry whose `value:` comes on the line after its `name:`.

A `LineMasker` reads lines in order and remembers which block it is in, so a log streamed line
by line is masked exactly as the same text masked at once (`mask_text`). Inside a block every
line is replaced by its indentation and a placeholder: the reader still sees the shape (how
many lines, which key) and none of the content. A block counts as one secret.

Each state is a small object that takes the next line and says what to show and which state
follows; a line that closes a block is then read again from the plain state, so that whatever
follows the block is masked by the ordinary rules.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Final, Protocol

from minds.domain.free_form import storable
from minds.domain.masking.keys import is_secret_key
from minds.domain.masking.kinds import MaskCounts, MaskKind, merge_counts
from minds.domain.masking.rules import mask_inline

_SECRET: Final = MaskKind.SECRET.placeholder
_PRIVATE_KEY: Final = r"-----{edge} (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----"
_PEM_BEGIN: Final = re.compile(_PRIVATE_KEY.format(edge="BEGIN"))
_PEM_END: Final = re.compile(_PRIVATE_KEY.format(edge="END"))
# `password: |`, `tls.key: >-`, `credentials:` (a nested mapping), `- "token":` ... on a line
# of its own; after other text (a log line's prefix) only with a block indicator, since a
# line ending in `token:` there is prose, not YAML.
_YAML_OPENER: Final = re.compile(
    r"(?P<indent>[ \t]*)(?:(?P<prefix>.*[\s;,{])(?=\S+[ \t]*:[ \t]*[|>]))?(?:-[ \t]+)?"
    r"(?P<q>[\"']?)(?P<key>[^\s\"':#][^\s\"':]*)(?P=q)[ \t]*:"
    # A comment only after a block indicator: `password: #x` may be a password starting with #.
    r"[ \t]*(?:[|>][-+0-9]*(?:[ \t]+#.*)?)?[ \t]*"
)
# `"credentials": {` or `"keys": [` ending a line, as pretty-printed JSON has it, possibly
# after other text (`{"auth": {`, a log line's prefix).
_JSON_OPENER: Final = re.compile(
    r"(?:.*[\s{,])?(?P<q>[\"']?)(?P<key>[^\s\"':{,]+)(?P=q)[ \t]*:[ \t]*[\[{][ \t]*"
)
_ENV_NAME: Final = re.compile(
    r"[ \t]*(?:-[ \t]+)?[\"']?name[\"']?[ \t]*:[ \t]*"
    r"[\"']?(?P<key>[\w.-]{1,128})[\"']?[ \t]*,?[ \t]*"
)
_ENV_VALUE: Final = re.compile(
    r"(?P<head>[ \t]*[\"']?value[\"']?[ \t]*:[ \t]*)(?P<value>.*?)(?P<tail>,?[ \t]*)"
)
_ENV_LOOKAHEAD: Final = 3
_CLOSERS: Final = re.compile(r"[ \t]*[\]}][\]},\s]*")
_CLOSERS_AT_END: Final = re.compile(r"[\]}][\]},\s]*$")
_STRING: Final = re.compile(r"\"(?:[^\"\\]|\\.)*\"")


class _State(Protocol):
    def take(self, line: str) -> tuple[str | None, _State | None]:
        """What to show for `line` (None: read it again from the plain state), and the state
        after it (None: the plain state)."""
        ...


def _indent(line: str) -> str:
    return line[: len(line) - len(line.lstrip(" \t"))]


@dataclass(frozen=True, slots=True)
class _InPem:
    def take(self, line: str) -> tuple[str | None, _State | None]:
        end = _PEM_END.search(line)
        if end is None:
            return _indent(line) + _SECRET if line.strip() else line, self
        # The END marker stays, as the BEGIN marker did: the reader sees a key was there.
        body = _SECRET if line[: end.start()].strip() else _indent(line)
        tail, _ = mask_inline(line[end.end() :])
        return body + line[end.start() : end.end()] + tail, None


@dataclass(frozen=True, slots=True)
class _Indented:
    """Lines indented deeper than the secret key belong to its value."""

    indent: int

    def take(self, line: str) -> tuple[str | None, _State | None]:
        if not line.strip():
            return line, self
        indent = _indent(line)
        if len(indent) <= self.indent:
            return None, None
        return indent + _SECRET, self


@dataclass(frozen=True, slots=True)
class _Bracketed:
    """Lines until the bracket opened after the secret key closes."""

    depth: int

    def take(self, line: str) -> tuple[str | None, _State | None]:
        bare = _STRING.sub('""', line)
        depth = self.depth + bare.count("{") + bare.count("[") - bare.count("}") - bare.count("]")
        if depth > 0:
            return (_indent(line) + _SECRET if line.strip() else line), _Bracketed(depth)
        if _CLOSERS.fullmatch(line):
            return line, None
        # The value's last line, its closing bracket after it: `"b"}` shows as `[secret]}`.
        body = _CLOSERS_AT_END.search(line)
        tail = line[body.start() :] if body is not None else ""
        return _indent(line) + _SECRET + tail, None


@dataclass(frozen=True, slots=True)
class _EnvValueDue:
    """After `name: DB_PASSWORD`, the `value:` within the next few lines is secret."""

    left: int

    def take(self, line: str) -> tuple[str | None, _State | None]:
        value = _ENV_VALUE.fullmatch(line)
        if value is not None and value.group("value"):
            raw = value.group("value")
            quote = raw[0] if raw[:1] in ("'", '"') else ""
            return value.group("head") + quote + _SECRET + quote + value.group("tail"), None
        if self.left <= 1 or _ENV_NAME.fullmatch(line) or "valueFrom" in line:
            return None, None
        return None, _EnvValueDue(self.left - 1)


Opening = tuple[str, _State]
"""The line that opens a block, as shown, and the state for the lines after it."""


def _masked_before(line: str, position: int) -> str:
    """An opening line with the text before its key masked as usual (the key itself and what
    follows it are kept: they say a block opens)."""
    head, _ = mask_inline(line[:position])
    return head + line[position:]


def _opens_pem(line: str) -> Opening | None:
    begin = _PEM_BEGIN.search(line)
    if begin is None or _PEM_END.search(line, begin.end()) is not None:
        return None  # a whole key on one line is the inline rules' business
    return _masked_before(line[: begin.end()], begin.start()), _InPem()


def _opens_yaml(line: str) -> Opening | None:
    yaml = _YAML_OPENER.fullmatch(line)
    if yaml is None or not is_secret_key(yaml.group("key")):
        return None
    return _masked_before(line, yaml.start("key")), _Indented(len(yaml.group("indent")))


def _opens_json(line: str) -> Opening | None:
    json = _JSON_OPENER.fullmatch(line)
    if json is None or not is_secret_key(json.group("key")):
        return None
    return _masked_before(line, json.start("key")), _Bracketed(1)


def _opens_env(line: str) -> Opening | None:
    env = _ENV_NAME.fullmatch(line)
    if env is None or not is_secret_key(env.group("key")):
        return None
    return line, _EnvValueDue(_ENV_LOOKAHEAD)


_OPENERS: Final = (_opens_pem, _opens_yaml, _opens_json, _opens_env)


def _opening(line: str) -> Opening | None:
    """The first block `line` opens, if any."""
    return next((opened for opener in _OPENERS if (opened := opener(line)) is not None), None)


class LineMasker:
    """Masks lines one after another, carrying an open multi-line secret across them."""

    def __init__(self) -> None:
        self._state: _State | None = None
        self._counted = False

    def mask(self, line: str) -> tuple[str, MaskCounts]:
        """`line` masked, and how many of each kind were masked in it."""
        # A line of CRLF text keeps its CR, which no block pattern expects.
        if line.endswith("\r"):
            masked, counts = self._mask(line[:-1])
            return masked + "\r", counts
        return self._mask(line)

    def _mask(self, line: str) -> tuple[str, MaskCounts]:
        if self._state is not None:
            # A state that declines the line (None) has it read as usual, keeping its next
            # state: an env entry's `value:` may come after other lines.
            shown, self._state = self._state.take(line)
            if shown is not None:
                return shown, self._count(changed=shown != line)
        opened = _opening(line)
        if opened is not None:
            shown, self._state = opened
            self._counted = False
            return shown, self._count(changed=shown != line)
        return mask_inline(line)

    def _count(self, *, changed: bool) -> MaskCounts:
        """One secret per block, counted when its content is first masked: a block masked
        before (only placeholders left) counts nothing."""
        if not changed or self._counted:
            return {}
        self._counted = True
        return {MaskKind.SECRET.value: 1}


def mask_text(text: str) -> tuple[str, MaskCounts]:
    """`text`, of any number of lines, with every identifier and secret replaced, and how many
    of each kind were. Text leaves the controller storable: NUL is shown as ␀."""
    text = storable(text)
    masker = LineMasker()
    counts: MaskCounts = {}
    lines: list[str] = []
    for line in text.split("\n"):
        masked, found = masker.mask(line)
        lines.append(masked)
        merge_counts(counts, found)
    return "\n".join(lines), counts

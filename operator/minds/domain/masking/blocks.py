"""Secrets that span lines: a PEM private key, a YAML or JSON block under a secret key, an env
entry whose `value:` comes on the line after its `name:`, the `data` of a Secret manifest, the
private lines of a PuTTY key, and a reference to a Secret written over several lines (whose
names are kept and whose other values are masked).

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
from collections.abc import Callable
from dataclasses import dataclass
from typing import Final, Protocol

from minds.domain.free_form import storable
from minds.domain.masking.keys import is_reference_key, is_secret_key
from minds.domain.masking.kinds import NOT_MASKED, MaskCounts, MaskKind, merge_counts
from minds.domain.masking.rules import hidden_value, mask_inline, reference_value_shown

_SECRET: Final = MaskKind.SECRET.placeholder
# PEM has five dashes each side; an SSH2 key (`---- BEGIN SSH2 ENCRYPTED PRIVATE KEY ----`) four.
_PRIVATE_KEY: Final = r"-{{4,5}} ?{edge} (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)? ?-{{4,5}}"
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
# A Secret manifest: its `data` and `stringData` are secret whatever their keys. In YAML or JSON,
# once `kind: Secret` was read (as people and `helm template` write it, before `data`), for
# `data` at the same column as that `kind`; the manifest ends at `---` or at another `kind` at
# that column or left of it (an owner reference's `kind`, deeper, does not end it).
_KIND: Final = re.compile(
    r"[ \t]*(?:-[ \t]+)?(?P<q>[\"']?)kind(?P=q)[ \t]*:[ \t]*[\"']?(?P<kind>\w+)"
)
_SECRET_DATA_KEYS: Final = frozenset({"data", "stringData"})
_DOCUMENT_START: Final = re.compile(r"---(?:[ \t].*)?")
# PuTTY's key file says how many lines its private part has: `Private-Lines: 14`.
_PUTTY_PRIVATE: Final = re.compile(r"[ \t]*Private-Lines:[ \t]*(?P<count>\d{1,4})[ \t]*")
# One field of a reference to a Secret written as a block: `  name: db-creds`, `"key": "pw",`.
_REFERENCE_FIELD: Final = re.compile(
    r"(?P<head>[ \t]*(?:-[ \t]+)?(?P<q>[\"']?)(?P<field>[\w.-]+)(?P=q)[ \t]*:[ \t]*)"
    rf"(?P<value>{NOT_MASKED}(?:\"[^\"\n]*\"|'[^'\n]*'|[^\s,\"'{{}}\[\]]+))(?P<tail>[ \t]*,?[ \t]*)"
)
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


def _hidden(line: str) -> str:
    """A line of a secret block: its indentation, and a placeholder for all of it."""
    return _indent(line) + _SECRET


def _reference_line(line: str) -> str:
    """A line of a reference to a Secret: a field that holds a name is kept, any other value
    masked (`reference_value_shown`); a line that is no field is masked as usual."""
    field = _REFERENCE_FIELD.fullmatch(line)
    if field is None:
        return mask_inline(line)[0]
    shown = reference_value_shown(field.group("field"), field.group("value"))
    return line if shown is None else field.group("head") + shown + field.group("tail")


LineShown = Callable[[str], str]
"""How a line inside a block is shown."""


@dataclass(frozen=True, slots=True)
class _Indented:
    """Lines indented deeper than the key belong to its value."""

    indent: int
    show: LineShown = _hidden

    def take(self, line: str) -> tuple[str | None, _State | None]:
        if not line.strip():
            return line, self
        if len(_indent(line)) <= self.indent:
            return None, None
        return self.show(line), self


@dataclass(frozen=True, slots=True)
class _Bracketed:
    """Lines until the bracket opened after the key closes."""

    depth: int
    show: LineShown = _hidden

    def take(self, line: str) -> tuple[str | None, _State | None]:
        bare = _STRING.sub('""', line)
        depth = self.depth + bare.count("{") + bare.count("[") - bare.count("}") - bare.count("]")
        if depth > 0:
            return (self.show(line) if line.strip() else line), _Bracketed(depth, self.show)
        if _CLOSERS.fullmatch(line):
            return line, None
        # The value's last line, its closing bracket after it: `"b"}` shows as `[secret]}`.
        body = _CLOSERS_AT_END.search(line)
        head, tail = (line[: body.start()], line[body.start() :]) if body else (line, "")
        return self.show(head) + tail, None


@dataclass(frozen=True, slots=True)
class _Counted:
    """The next `left` lines are secret (a PuTTY key's private lines)."""

    left: int

    def take(self, line: str) -> tuple[str | None, _State | None]:
        following = _Counted(self.left - 1) if self.left > 1 else None
        return (_hidden(line) if line.strip() else line), following


@dataclass(frozen=True, slots=True)
class _EnvValueDue:
    """After `name: DB_PASSWORD`, the `value:` within the next few lines is secret."""

    left: int

    def take(self, line: str) -> tuple[str | None, _State | None]:
        value = _ENV_VALUE.fullmatch(line)
        if value is not None and value.group("value"):
            shown = hidden_value(value.group("value"))
            return value.group("head") + shown + value.group("tail"), None
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


def _opens_pem(line: str, manifest: Manifest) -> Opening | None:
    begin = _PEM_BEGIN.search(line)
    if begin is None or _PEM_END.search(line, begin.end()) is not None:
        return None  # a whole key on one line is the inline rules' business
    return _masked_before(line[: begin.end()], begin.start()), _InPem()


Manifest = int | None
"""The column of the `kind: Secret` of the manifest being read, if one is."""


def _secret_block(key: str, column: int, manifest: Manifest) -> bool:
    return is_secret_key(key) or (column == manifest and key in _SECRET_DATA_KEYS)


def _opens_yaml(line: str, manifest: Manifest) -> Opening | None:
    yaml = _YAML_OPENER.fullmatch(line)
    if yaml is None:
        return None
    key = yaml.group("key")
    if _secret_block(key, yaml.start("q"), manifest):
        return _masked_before(line, yaml.start("key")), _Indented(len(yaml.group("indent")))
    if line.rstrip().endswith(":") and is_reference_key(key):
        # A reference's fields are indented deeper than its key (after `- `, if any).
        column = yaml.start("q") - (yaml.start("prefix") if yaml.group("prefix") else 0)
        return _masked_before(line, yaml.start("key")), _Indented(column, _reference_line)
    return None


def _opens_json(line: str, manifest: Manifest) -> Opening | None:
    json = _JSON_OPENER.fullmatch(line)
    if json is None:
        return None
    key = json.group("key")
    if _secret_block(key, json.start("q"), manifest):
        return _masked_before(line, json.start("key")), _Bracketed(1)
    if is_reference_key(key):
        return _masked_before(line, json.start("key")), _Bracketed(1, _reference_line)
    return None


def _opens_env(line: str, manifest: Manifest) -> Opening | None:
    env = _ENV_NAME.fullmatch(line)
    if env is None or not is_secret_key(env.group("key")):
        return None
    return line, _EnvValueDue(_ENV_LOOKAHEAD)


def _opens_putty(line: str, manifest: Manifest) -> Opening | None:
    putty = _PUTTY_PRIVATE.fullmatch(line)
    if putty is None or int(putty.group("count")) == 0:
        return None
    return line, _Counted(int(putty.group("count")))


_OPENERS: Final = (_opens_pem, _opens_yaml, _opens_json, _opens_env, _opens_putty)


def _opening(line: str, manifest: Manifest) -> Opening | None:
    """The first block `line` opens, if any (`manifest`: inside a Secret manifest, the column
    of its `kind`)."""
    return next(
        (opened for opener in _OPENERS if (opened := opener(line, manifest)) is not None), None
    )


class LineMasker:
    """Masks lines one after another, carrying an open multi-line secret across them."""

    def __init__(self) -> None:
        self._state: _State | None = None
        self._counted = False
        self._manifest: Manifest = None

    def mask(self, line: str) -> tuple[str, MaskCounts]:
        """`line` masked, and how many of each kind were masked in it."""
        # A line of CRLF text keeps its CR, which no block pattern expects.
        if line.endswith("\r"):
            masked, counts = self._mask(line[:-1])
            return masked + "\r", counts
        return self._mask(line)

    def _mask(self, line: str) -> tuple[str, MaskCounts]:
        self._read_manifest(line)
        if self._state is not None:
            # A state that declines the line (None) has it read as usual, keeping its next
            # state: an env entry's `value:` may come after other lines.
            shown, self._state = self._state.take(line)
            if shown is not None:
                return shown, self._count(changed=shown != line)
        opened = _opening(line, self._manifest)
        if opened is not None:
            shown, self._state = opened
            self._counted = False
            return shown, self._count(changed=shown != line)
        return mask_inline(line)

    def _read_manifest(self, line: str) -> None:
        """Notes where a Secret manifest starts and ends."""
        if "kind" in line and (kind := _KIND.match(line)) is not None:
            column = kind.start("q")
            if kind.group("kind") == "Secret":
                self._manifest = column
            elif self._manifest is not None and column <= self._manifest:
                self._manifest = None
        elif line.startswith("---") and _DOCUMENT_START.fullmatch(line):
            self._manifest = None

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

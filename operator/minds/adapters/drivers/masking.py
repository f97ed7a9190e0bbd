"""Masking as drivers apply it: line by line for logs, shortened for command lines.

The rules themselves are pure and live in `minds.domain.masking`; this module decides how
much text they see at once. Lines are masked one at a time; a `LineMasker` passed along carries
a secret that spans lines (a private key, a YAML block under `password: |`) from one to the
next, so lines of one stream share one masker.

Text is shortened twice. Before masking, a very long line is cut back to a word boundary, so
the rules' work stays bounded and no identifier is left half-present where a rule can no
longer recognise it. After masking, it is cut to its display length; that cut can only split a
placeholder, never a value.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Final

from minds.domain.masking import LineMasker, MaskCounts, mask_text, merge_counts

__all__ = [
    "LINE_CHARS",
    "LineMasker",
    "MaskCounts",
    "mask_command",
    "mask_line",
    "mask_lines",
    "mask_text",
    "merge_counts",
]

LINE_CHARS: Final = 4096
"""The longest log line shown, after masking."""

SCAN_CHARS: Final = 16 * 1024
"""The most of one line the masking rules read."""

_CUT_MARK: Final = " …"


def cut_at_word(text: str, limit: int) -> str:
    """`text` shortened to at most `limit` characters, dropping any word the cut would split."""
    if len(text) <= limit:
        return text
    head = text[:limit]
    space = max(head.rfind(" "), head.rfind("\t"))
    return head[:space] if space > 0 else ""


def mask_line(
    line: str, *, limit: int = LINE_CHARS, masker: LineMasker | None = None
) -> tuple[str, MaskCounts]:
    """One line masked and shortened to `limit` characters (plus a cut mark); `masker` carries
    what earlier lines of the same stream opened."""
    masked, counts = (masker or LineMasker()).mask(cut_at_word(line, SCAN_CHARS))
    shortened = len(line) > SCAN_CHARS or len(masked) > limit
    if shortened:
        masked = masked[:limit] + _CUT_MARK
    return masked, counts


def mask_lines(lines: Iterable[str], *, limit: int = LINE_CHARS) -> tuple[list[str], MaskCounts]:
    """Each line of one stream masked and shortened, and what was masked across them all."""
    counts: MaskCounts = {}
    masked: list[str] = []
    masker = LineMasker()
    for line in lines:
        text, found = mask_line(line, limit=limit, masker=masker)
        masked.append(text)
        merge_counts(counts, found)
    return masked, counts


def mask_command(argv: Sequence[str], limit: int) -> str:
    """A process's command line, masked and then shortened to `limit` characters."""
    text, _ = mask_line(" ".join(argv), limit=limit)
    return text

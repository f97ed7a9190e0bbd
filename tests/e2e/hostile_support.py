"""JSON nested deeper than Python's own encoder goes (it stops near a thousand levels): a body
holds a marker where the deep value goes, and `dumps` writes the value out as text."""

from __future__ import annotations

import json
import re
from typing import Any

_MARKER = "\u2063deep:"
_MARKED = re.compile(r'"\\u2063deep:(\d+)"')


def deep(depth: int) -> str:
    """Stands for ``{"a": {"a": ... "leaf"}}``, ``depth`` objects nested in one another."""
    return f"{_MARKER}{depth}"


def _written(match: re.Match[str]) -> str:
    depth = int(match.group(1))
    return '{"a":' * depth + '"leaf"' + "}" * depth


def dumps(body: Any) -> str:
    return _MARKED.sub(_written, json.dumps(body))

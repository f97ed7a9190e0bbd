"""Label selectors, matched the way the API server matches them, for reads served from the watch.

Only the forms the engine writes are accepted (``k=v``, ``k==v``, ``k!=v``, ``k``, ``!k``, joined
by commas); anything else is refused loudly rather than matched differently from the server.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass

Requirement = Callable[[Mapping[str, str]], bool]


def _equals(key: str, value: str) -> Requirement:
    return lambda labels: labels.get(key) == value


def _differs(key: str, value: str) -> Requirement:
    # As the API server does: a missing label is "not equal".
    return lambda labels: labels.get(key) != value


def _exists(key: str) -> Requirement:
    return lambda labels: key in labels


def _absent(key: str) -> Requirement:
    return lambda labels: key not in labels


def _requirement(term: str) -> Requirement:
    if any(word in term.split() for word in ("in", "notin")) or "(" in term:
        raise ValueError(f"unsupported label selector term {term!r}: set-based forms")
    for operator, build in (("!=", _differs), ("==", _equals), ("=", _equals)):
        key, found, value = term.partition(operator)
        if found:
            return build(key.strip(), value.strip())
    if term.startswith("!"):
        return _absent(term[1:].strip())
    return _exists(term)


@dataclass(frozen=True)
class LabelSelector:
    requirements: tuple[Requirement, ...] = ()

    @classmethod
    def parse(cls, text: str) -> LabelSelector:
        terms = [t.strip() for t in text.split(",") if t.strip()]
        return cls(tuple(_requirement(t) for t in terms))

    def matches(self, labels: Mapping[str, str]) -> bool:
        return all(requirement(labels) for requirement in self.requirements)

"""Limits on free-form JSON: what a step's parameters, a grant's parameter limits or an
Approval's parameters may hold.

The schema types every other field; these few are free-form by design, so the API server
cannot bound their nesting. Admission refuses what breaks these limits (the ValidatingAdmission
Policy ``minds-free-form-limits`` spells the same numbers in CEL); this module is the same rule
for whatever reaches the controller anyway (a cluster without the policy, an object stored
before it). Nested deep enough, a value exhausts the interpreter's stack wherever it is walked
recursively (parsing, copying, masking, writing to the ledger), so the walk here is iterative:
no input, however deep, can make the check itself fail.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Annotated, Any, Final

from pydantic import AfterValidator, Field

#: The one character Postgres cannot store in ``text`` or ``jsonb``.
NUL: Final = "\x00"
#: What stands for it in text bound for the ledger: U+2400 SYMBOL FOR NULL, so a reader still
#: sees that one was there.
NUL_SHOWN: Final = "\u2400"


def storable(text: str) -> str:
    """``text`` as Postgres can store it: admission refuses NUL wherever it can, and whatever
    slips past it (a free-form value written before the policy, a log line a workload wrote)
    must not make a ledger row unwritable, nor take the rows written with it down."""
    return text.replace(NUL, NUL_SHOWN) if NUL in text else text


@dataclass(frozen=True)
class JsonLimits:
    """How far a free-form value may go. ``depth`` counts the containers (objects, arrays)
    nested in one another, the field's own object included: ``{"a": [1]}`` has depth 2;
    ``width`` bounds the entries of each container; keys are strings like any other."""

    depth: int = 4
    width: int = 64
    string: int = 4096
    nodes: int = 4096


#: The limits admission and the controller apply to every free-form field. The capabilities'
#: parameters are flat and a grant's limits are lists at most (depth 2): four leaves room for a
#: capability to come without ever nearing a stack. Admission checks all but ``nodes``, which
#: CEL cannot sum; the API server's cost limit on the policy's rules bounds the total there.
FREE_FORM: Final = JsonLimits()


@dataclass(frozen=True)
class Breach:
    """Why a value was refused, and where: ``field`` is a path in the spec's own spelling."""

    field: str
    message: str


_SCALARS: Final = (bool, int, float)


def _child(path: str, key: str | int) -> str:
    return f"{path}[{key}]" if isinstance(key, int) else f"{path}.{key}"


def _children(value: object) -> Iterator[tuple[str | int, object]]:
    if isinstance(value, dict):
        yield from value.items()
    elif isinstance(value, list):
        yield from enumerate(value)


def _own_breach(value: object, path: str, depth: int, limits: JsonLimits) -> Breach | None:
    """What is wrong with this one node, its children not looked at."""
    if isinstance(value, str):
        if NUL in value:
            return Breach(path, "holds a NUL character, which cannot be stored")
        if len(value) > limits.string:
            return Breach(path, f"is longer than {limits.string} characters")
        return None
    if value is None or isinstance(value, _SCALARS):
        return None
    if not isinstance(value, dict | list):
        return Breach(path, f"is a {type(value).__name__}, not a JSON value")
    if depth > limits.depth:
        return Breach(path, f"is nested deeper than {limits.depth} levels")
    if len(value) > limits.width:
        # Refused before its children are listed: the walk never holds more than the limit.
        return Breach(path, f"holds more than {limits.width} entries")
    for key in value if isinstance(value, dict) else ():
        if not isinstance(key, str):
            return Breach(path, "has a key that is not a string")
        if (found := _own_breach(key, f"{path} (a key)", depth, limits)) is not None:
            return found
    return None


def breach(value: object, field: str, limits: JsonLimits = FREE_FORM) -> Breach | None:
    """The first way ``value`` (found at ``field``) exceeds ``limits``; None when it fits.

    Depth first with an explicit stack, and it stops at the first breach: a value nested a
    thousand levels deep is refused at level ``limits.depth + 1``, having been walked no
    further.
    """
    stack: list[tuple[object, str, int]] = [(value, field, 1)]
    nodes = 0
    while stack:
        node, path, depth = stack.pop()
        nodes += 1
        if nodes > limits.nodes:
            return Breach(field, f"holds more than {limits.nodes} values")
        found = _own_breach(node, path, depth, limits)
        if found is not None:
            return found
        stack.extend(
            (child, _child(path, key), depth + 1) for key, child in reversed(list(_children(node)))
        )
    return None


def _within_limits(value: dict[str, Any]) -> dict[str, Any]:
    found = breach(value, "")
    if found is not None:
        raise ValueError(f"{found.field.lstrip('.') or 'the value'} {found.message}")
    return value


#: A free-form field as the models declare it: a JSON object whose own entries the schema
#: bounds (``maxProperties``) and whose content, however it was admitted, fits `FREE_FORM`
#: whenever a model is read from it: a grant or an Approval beyond the limits cannot be read,
#: and one that cannot be read authorises nothing.
FreeForm = Annotated[
    dict[str, Any], Field(max_length=FREE_FORM.width), AfterValidator(_within_limits)
]


def first_breach(fields: dict[str, object], limits: JsonLimits = FREE_FORM) -> Breach | None:
    """The first breach among several free-form fields, by path."""
    return next(
        (found for path, value in fields.items() if (found := breach(value, path, limits))),
        None,
    )

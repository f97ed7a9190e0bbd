"""Promises outlive the Mind object that made them.

An irrevocable commitment (`revocable: false`) cannot be removed or changed by an edit of its
Mind: admission refuses it. Deleting the Mind and creating it again under the same name is not
an edit, so the promise is kept another way: the ledger records every spec a Mind object
registered, and the irrevocable commitments of the earlier objects of a name bind every later
one, until they expire.

| the new Mind object declares                    | what binds it                                 |
|-------------------------------------------------|-----------------------------------------------|
| nothing of that name                            | the promise, kept                             |
| the same name with the same terms               | its own declaration (nothing is kept twice)   |
| the same name with other terms (revocable, say) | the promise; its own declaration is set aside |
| anything, after the promise's `expiresAt`       | its own declarations only                     |

What is recorded of a commitment's state (fulfilled, revoked, ...) is kept by the Mind's name and
the commitment's name. Only a promise carries its state from one object to the next: a record
an earlier object left (written before the last earlier object ended) is not the new object's
for any other commitment, so a new `do` is not born fulfilled, nor a new `refrain` born revoked,
because an earlier commitment had the same name (``left_by_earlier``).

The terms are every field but `reason` (a note, which the ledger may have masked). Among the
earlier objects the first to declare a name irrevocably made the promise: a later object could
not have changed it. A kept promise is judged like any commitment (a `refrain` is enforced by the
capability layer, a `do` is due), and says where it came from wherever it is named.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from datetime import datetime
from typing import NamedTuple

from minds.domain.resources.mind import Commitment, MindSpec

__all__ = ["Declared", "KeptPromise", "kept", "left_by_earlier", "promises"]


class KeptPromise(Commitment):
    """An irrevocable commitment an earlier Mind object of this name made."""

    #: Which object made it and when, as a person reads it.
    kept_from: str

    def label(self, index: int) -> str:
        return f"promise {self.name} (irrevocable, made by {self.kept_from})"


class Declared(NamedTuple):
    """What one earlier Mind object of the name last declared."""

    uid: str
    at: datetime
    commitments: tuple[Commitment, ...]


def _terms(c: Commitment) -> dict[str, object]:
    return c.model_dump(include=set(Commitment.model_fields) - {"reason"})


def promises(earlier: Sequence[Declared], mind: str) -> tuple[KeptPromise, ...]:
    """The promises the earlier objects of ``mind`` made, given in the order they were
    registered: each irrevocable commitment, by the first object that declared its name."""
    made: dict[str, KeptPromise] = {}
    for declared in earlier:
        for c in declared.commitments:
            if c.revocable or c.name in made:
                continue
            made[c.name] = KeptPromise(
                **c.model_dump(),
                kept_from=f"the Mind {mind} of uid {declared.uid}, {declared.at.isoformat()}",
            )
    return tuple(made.values())


def kept(spec: MindSpec, made: Sequence[KeptPromise], now: datetime) -> MindSpec:
    """The spec with the promises it must keep (see the table above). Its own commitments keep
    their places, so ``commitments[i]`` still names the spec's own (or the promise that set it
    aside); the other kept ones follow."""
    binding = [
        p
        for p in made
        if (p.expires_at is None or now < p.expires_at)
        and not any(c.name == p.name and _terms(c) == _terms(p) for c in spec.commitments)
    ]
    if not binding:
        return spec
    by_name = {p.name: p for p in binding}
    # A declaration the promise sets aside is replaced where it stands, so every index is kept.
    own = [by_name.pop(c.name, c) for c in spec.commitments]
    return spec.model_copy(update={"commitments": [*own, *by_name.values()]})


def left_by_earlier(
    recorded_at: Mapping[str, datetime], promised: Collection[str], ended_at: datetime | None
) -> frozenset[str]:
    """The commitments whose recorded state an earlier object left, and that do not carry it
    (no promise of that name): their state is judged afresh. ``ended_at``: when the last earlier
    object ended (None when there was none, or it is not known)."""
    if ended_at is None:
        return frozenset()
    return frozenset(n for n, at in recorded_at.items() if at <= ended_at and n not in promised)

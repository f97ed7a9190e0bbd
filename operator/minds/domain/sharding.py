"""Shards: which namespaces each controller shard serves, and which replica of it acts.

A shard is declared by a cluster admin as a kopf ``ClusterKopfPeering`` object named after the
shard, whose ``minds.dev/namespaces`` annotation lists the namespaces it serves. The same
object is where the shard's replicas tell each other they are alive (kopf peering), so the
declaration and the liveness records can never name different shards. The controller may
only write that object's status: which namespaces a shard serves is not its own choice.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from minds.domain.capabilities.registry import DNS_LABEL

NAMESPACES_ANNOTATION = "minds.dev/namespaces"
PEERING_GROUP = "kopf.dev"
PEERING_VERSION = "v1"
PEERING_PLURAL = "clusterkopfpeerings"
PEERING_KIND = "ClusterKopfPeering"

_NAMESPACE = re.compile(DNS_LABEL)
#: kopf compares priorities as integers; this keeps a replica's priority unique (two equal
#: priorities make kopf pause every replica of the shard) and inside JSON's exact range.
_JITTER = 1000


class ShardError(ValueError):
    """The shard cannot run as declared; the message says what to change."""


@dataclass(frozen=True)
class Shard:
    name: str
    namespaces: frozenset[str]


def parse_namespaces(shard: str, text: str) -> frozenset[str]:
    """The namespaces of a ``minds.dev/namespaces`` annotation: comma-separated names."""
    names = [n.strip() for n in text.split(",") if n.strip()]
    bad = [n for n in names if not _NAMESPACE.fullmatch(n)]
    if bad:
        raise ShardError(
            f"shard {shard!r}: {NAMESPACES_ANNOTATION} holds {', '.join(map(repr, bad))}, "
            "which is not a namespace name"
        )
    if not names:
        raise ShardError(f"shard {shard!r}: {NAMESPACES_ANNOTATION} names no namespace")
    return frozenset(names)


def declared_shards(objects: Iterable[Mapping[str, Any]]) -> dict[str, str]:
    """Shard name -> raw annotation, for every peering object that declares a minds shard
    (other kopf operators' peering objects carry no annotation and are not ours)."""
    declared: dict[str, str] = {}
    for obj in objects:
        meta = obj.get("metadata") or {}
        text = (meta.get("annotations") or {}).get(NAMESPACES_ANNOTATION)
        if text is not None:
            declared[str(meta.get("name"))] = str(text)
    return declared


def shard_to_serve(name: str, objects: Iterable[Mapping[str, Any]]) -> Shard:
    """The shard ``name`` as declared, once it is proven to share no namespace with another.

    Two shards serving one namespace would both act on its plans; the executor's leases keep
    that from running a step twice, but every plan would be handled twice, so it is refused.
    The check runs when a replica starts: both shards' replicas refuse to start once the
    overlap is declared, whichever started first.
    """
    declared = declared_shards(objects)
    if name not in declared:
        raise ShardError(
            f"shard {name!r}: no {PEERING_KIND} named {name!r} declares its namespaces; "
            f"create one with the {NAMESPACES_ANNOTATION} annotation (docs/execution.md, "
            "Scaling out)"
        )
    own = parse_namespaces(name, declared[name])
    for other, text in sorted(declared.items()):
        if other == name:
            continue
        shared = own & parse_namespaces(other, text)
        if shared:
            raise ShardError(
                f"shard {name!r} overlaps shard {other!r} on namespace(s) "
                f"{', '.join(sorted(shared))}: a namespace belongs to one shard"
            )
    return Shard(name=name, namespaces=own)


def replica_priority(started: datetime, jitter: int) -> int:
    """kopf's peering priority for a replica started at ``started``: the longest-running
    replica has the highest, so a replica that joins (scaling up, a rolling update) stands by
    instead of taking over. ``jitter`` (0..999) separates replicas started in the same
    millisecond."""
    if not 0 <= jitter < _JITTER:
        raise ValueError(f"jitter must be in 0..{_JITTER - 1}, got {jitter}")
    return -(int(started.timestamp() * 1000) * _JITTER + jitter)

"""Pieces every custom resource shares: conditions, references, CEL rule helpers."""

from __future__ import annotations

from datetime import datetime
from enum import StrEnum
from typing import Any

from pydantic import Field

from minds.domain.base import Model

API_GROUP = "minds.dev"
API_VERSION = "v1alpha1"
GROUP_VERSION = f"{API_GROUP}/{API_VERSION}"

#: Names of Kubernetes objects (RFC 1123 subdomain), the shape every reference must have.
DNS_SUBDOMAIN = r"^[a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?$"
#: A capability name such as ``service.restart``; a glob form is allowed where a pattern is meant.
CAPABILITY_NAME = r"^[a-z][a-z0-9]*(\.[a-z][a-z0-9]*)+$"
CAPABILITY_GLOB = r"^(\*|[a-z][a-z0-9]*(\.([a-z][a-z0-9]*|\*))*)$"


def cel(rule: str, message: str, **extra: Any) -> dict[str, Any]:
    """One ``x-kubernetes-validations`` entry; the API server reports ``message`` on failure."""
    return {"rule": rule, "message": message, **extra}


def cel_rules(*rules: dict[str, Any]) -> dict[str, Any]:
    """``json_schema_extra`` carrying CEL rules into the generated CRD schema."""
    return {"x-kubernetes-validations": list(rules)}


#: Every free-text string of every kind carries this rule (the CRD generator adds it): Postgres
#: cannot store U+0000 in ``text`` or ``jsonb``, so a string holding it would be admitted and then
#: fail every ledger write that quotes it. Strings with a ``pattern``, an ``enum`` or a
#: ``format`` are bounded to other characters already.
NO_NUL = cel("!self.contains('\\u0000')", "must not contain the NUL character (U+0000)")


def immutable(what: str) -> dict[str, Any]:
    """A field that may be set at creation and never changed afterwards."""
    return cel_rules(cel("self == oldSelf", f"{what} is immutable"))


class ConditionStatus(StrEnum):
    TRUE = "True"
    FALSE = "False"
    UNKNOWN = "Unknown"


class Condition(Model):
    """A Kubernetes-style condition: the shape ``kubectl wait --for=condition=`` understands."""

    type: str = Field(max_length=64)
    status: ConditionStatus
    reason: str = Field(max_length=128, pattern=r"^[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?$")
    message: str = Field(default="", max_length=4096)
    last_transition_time: datetime
    observed_generation: int | None = Field(default=None, ge=0)


def set_condition(conditions: list[Condition], new: Condition) -> list[Condition]:
    """Replace the condition of the same type, keeping the transition time when status is unchanged.

    A transition time that moved on every write would tell a reader nothing about when the state
    really changed.
    """
    out: list[Condition] = []
    replaced = False
    for existing in conditions:
        if existing.type != new.type:
            out.append(existing)
            continue
        replaced = True
        if existing.status == new.status:
            out.append(
                new.model_copy(update={"last_transition_time": existing.last_transition_time})
            )
        else:
            out.append(new)
    if not replaced:
        out.append(new)
    return out


class WorkloadRef(Model):
    """A workload a mind looks after or acts on."""

    kind: str = Field(
        default="Deployment", max_length=16, pattern=r"^(Deployment|StatefulSet|DaemonSet)$"
    )
    name: str = Field(max_length=253, pattern=DNS_SUBDOMAIN)
    namespace: str | None = Field(
        default=None,
        max_length=63,
        pattern=r"^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$",
        description="Defaults to the namespace of the Mind.",
    )


def parse_timestamp(value: Any) -> datetime | None:
    """A timestamp as a body read from the API server holds it (RFC 3339, ``Z`` for UTC), or
    None when it is missing or malformed."""
    if isinstance(value, datetime):
        return value
    if not isinstance(value, str) or not value:
        return None
    try:
        return datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None

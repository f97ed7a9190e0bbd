"""The base every record and resource model shares.

Kubernetes speaks camelCase and Python snake_case; one alias generator keeps both honest, so a
model renders to a custom resource spec and parses back from it without hand-written mapping.
Unknown fields are refused rather than dropped: input that does not fit is an error, never
silently ignored.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict
from pydantic.alias_generators import to_camel


class Model(BaseModel):
    """Immutable, strict-about-unknown-fields model with camelCase aliases."""

    model_config = ConfigDict(
        alias_generator=to_camel,
        populate_by_name=True,
        extra="forbid",
        frozen=True,
    )

    def to_k8s(self) -> dict[str, Any]:
        """Render as a Kubernetes object fragment: camelCase keys, JSON types, no nulls."""
        return self.model_dump(mode="json", by_alias=True, exclude_none=True)

"""The model endpoints this controller may call: the cluster admin's choice, not a Mind author's.

A Mind names an endpoint (`spec.model.endpoint: NAME`); the URL, and any internal address the
connection may reach, come from the controller's configuration (the file named by
``MINDS_MODEL_ENDPOINTS``, which the Helm chart renders from values):

    endpoints:
      - name: team-llm
        url: https://llm.example.com/v1
      - name: in-cluster
        url: http://llm.ai-system.svc:8000/v1
        allowedAddresses: ["10.96.0.0/12"]

Every connection to an endpoint goes through the same address guard as the browser
(`minds.adapters.drivers.ssrf`): loopback, private, link-local and metadata addresses are
refused unless `allowedAddresses` lists them (CIDRs or host names). A Mind cannot widen that
list, and a URL in a Mind's spec is refused by the schema.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import yaml
from pydantic import Field, ValidationError, field_validator

from minds.domain.base import Model
from minds.domain.resources.mind import ENDPOINT_NAME

ENV: str = "MINDS_MODEL_ENDPOINTS"


class EndpointsFileError(ValueError):
    """The configuration cannot be read; the message names the file and the field."""


class ConfiguredEndpoint(Model):
    name: str = Field(max_length=63, pattern=ENDPOINT_NAME)
    url: str = Field(max_length=2048, pattern=r"^https?://[^/@\s]+(/\S*)?$")
    allowed_addresses: list[Annotated[str, Field(max_length=253)]] = Field(
        default_factory=list, max_length=32
    )


class ModelEndpoints(Model):
    endpoints: list[ConfiguredEndpoint] = Field(default_factory=list, max_length=64)

    @field_validator("endpoints")
    @classmethod
    def _unique(cls, endpoints: list[ConfiguredEndpoint]) -> list[ConfiguredEndpoint]:
        names = [e.name for e in endpoints]
        doubled = sorted({n for n in names if names.count(n) > 1})
        if doubled:
            raise ValueError(f"endpoint names must be unique: {', '.join(doubled)}")
        return endpoints

    def names(self) -> frozenset[str]:
        return frozenset(e.name for e in self.endpoints)

    def get(self, name: str) -> ConfiguredEndpoint | None:
        return next((e for e in self.endpoints if e.name == name), None)

    @classmethod
    def load(cls, path: str | Path | None) -> ModelEndpoints:
        """The configuration in `path`; none configured (no model may be called) without one."""
        if not path:
            return cls()
        try:
            raw = yaml.safe_load(Path(path).read_text(encoding="utf-8")) or {}
            return cls.model_validate(raw)
        except OSError as exc:
            raise EndpointsFileError(f"{ENV}={path}: cannot read it ({exc.strerror})") from exc
        except yaml.YAMLError as exc:
            raise EndpointsFileError(f"{ENV}={path}: not YAML ({exc})") from exc
        except ValidationError as exc:
            first = exc.errors()[0]
            where = ".".join(str(p) for p in first["loc"])
            raise EndpointsFileError(f"{ENV}={path}: {where}: {first['msg']}") from exc

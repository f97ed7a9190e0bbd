"""Render CustomResourceDefinitions from the pydantic models.

The models are the single source of truth: this turns their JSON Schema into the structural
OpenAPI v3 schema the API server wants (no ``$ref``, no ``anyOf`` with null, free-form maps
marked ``x-kubernetes-preserve-unknown-fields``), keeping descriptions for ``kubectl explain``
and CEL rules for server-side validation.
"""

from __future__ import annotations

import copy
from typing import Any

import yaml

from minds.domain.resources.common import NO_NUL
from minds.domain.resources.descriptions import DESCRIPTIONS, FRAME
from minds.domain.resources.kinds import CATEGORY, KINDS, Kind
from minds.domain.sharding import PEERING_GROUP, PEERING_KIND, PEERING_PLURAL, PEERING_VERSION

# JSON Schema keywords the structural schema has no use for, or that the API server refuses.
_DROP = {"title", "$defs", "examples", "discriminator"}


class SchemaError(ValueError):
    """A model produced a schema we cannot express as a structural CRD schema."""


def _resolve(schema: dict[str, Any], defs: dict[str, Any]) -> dict[str, Any]:
    ref = schema.get("$ref")
    if ref is None:
        return schema
    target: dict[str, Any] = defs[ref.split("/")[-1]]
    merged = {k: v for k, v in schema.items() if k != "$ref"}
    # Field-level keys (description, CEL rules) win over the referenced model's own.
    out = copy.deepcopy(target)
    for key, value in merged.items():
        if key == "x-kubernetes-validations":
            out[key] = list(out.get(key, [])) + list(value)
        else:
            out[key] = value
    return out


def _collapse_optional(schema: dict[str, Any]) -> dict[str, Any]:
    """``X | None`` becomes ``X``: optional means "may be absent", and we never write nulls."""
    for key in ("anyOf", "oneOf"):
        options = schema.get(key)
        if options is None:
            continue
        non_null = [o for o in options if o.get("type") != "null"]
        if len(non_null) != 1:
            raise SchemaError(f"unions are not expressible in a structural schema: {options}")
        rest = {k: v for k, v in schema.items() if k != key}
        if rest.get("default", "absent") is None:
            rest.pop("default")
        return {**non_null[0], **rest}
    return schema


def _without_nulls(value: Any) -> Any:
    """Defaults are applied by the API server; a null in one would fail the schema it sits in."""
    if isinstance(value, dict):
        return {k: _without_nulls(v) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [_without_nulls(v) for v in value]
    return value


def structural(schema: dict[str, Any], defs: dict[str, Any]) -> dict[str, Any]:
    """Convert one pydantic JSON schema node (recursively) to a structural schema node."""
    node = _collapse_optional(_resolve(schema, defs))
    node = _resolve(node, defs)
    out: dict[str, Any] = {}
    for key, value in node.items():
        if key in _DROP:
            continue
        if key == "properties":
            out["properties"] = {name: structural(sub, defs) for name, sub in value.items()}
        elif key == "items":
            out["items"] = structural(value, defs)
        elif key == "default":
            out["default"] = _without_nulls(value)
        elif key == "additionalProperties":
            if value is True or value == {}:
                out["x-kubernetes-preserve-unknown-fields"] = True
            elif value is False:
                continue
            else:
                out["additionalProperties"] = structural(value, defs)
        else:
            out[key] = value
    if not out.get("type") and "x-kubernetes-preserve-unknown-fields" not in out:
        if "enum" in out:
            out["type"] = "string"
        elif not any(k in out for k in ("properties", "items")):
            # ``Any``: the value is free-form by design.
            out["x-kubernetes-preserve-unknown-fields"] = True
    if out.get("type") == "object" and "properties" in out:
        out.pop("x-kubernetes-preserve-unknown-fields", None)
    if out.get("type") == "string" and not any(k in out for k in ("enum", "pattern", "format")):
        out["x-kubernetes-validations"] = [*out.get("x-kubernetes-validations", []), dict(NO_NUL)]
    return out


def described(schema: dict[str, Any], model_name: str) -> dict[str, Any]:
    """``schema`` (one model's) with each property that has no description of its own given
    the table's (``minds.domain.resources.descriptions``)."""
    table = DESCRIPTIONS.get(model_name, {})
    properties = {
        name: sub
        if sub.get("description") or name not in table
        else {**sub, "description": table[name]}
        for name, sub in (schema.get("properties") or {}).items()
    }
    return {**schema, "properties": properties} if properties else schema


def model_schema(model: type[Any]) -> dict[str, Any]:
    raw: dict[str, Any] = model.model_json_schema(by_alias=True, mode="validation")
    defs = {name: described(sub, name) for name, sub in raw.get("$defs", {}).items()}
    return structural(described(raw, model.__name__), defs)


def render_crd(kind: Kind) -> dict[str, Any]:
    spec_schema = model_schema(kind.spec)
    status_schema = model_schema(kind.status)
    spec_schema.setdefault("description", f"Desired state of the {kind.kind}.")
    status_schema.setdefault("description", f"Observed state of the {kind.kind}.")
    columns = [
        {
            "name": c.name,
            "type": c.type,
            "jsonPath": c.json_path,
            **({"priority": c.priority} if c.priority else {}),
            **({"description": c.description} if c.description else {}),
            **({"format": c.format} if c.format else {}),
        }
        for c in kind.columns
    ]
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {
            "name": kind.crd_name,
            "labels": {"app.kubernetes.io/part-of": "minds-operator"},
        },
        "spec": {
            "group": kind.group,
            "scope": "Namespaced",
            "names": {
                "kind": kind.kind,
                "listKind": f"{kind.kind}List",
                "plural": kind.plural,
                "singular": kind.singular,
                "shortNames": list(kind.short_names),
                "categories": [CATEGORY],
            },
            "versions": [
                {
                    "name": kind.version,
                    "served": True,
                    "storage": True,
                    "subresources": {"status": {}},
                    "additionalPrinterColumns": columns,
                    "schema": {
                        "openAPIV3Schema": {
                            "type": "object",
                            "description": kind.description,
                            "required": ["spec"],
                            "properties": {
                                "apiVersion": {
                                    "type": "string",
                                    "description": FRAME["apiVersion"],
                                },
                                "kind": {"type": "string", "description": FRAME["kind"]},
                                # The API server refuses anything here but the type: it
                                # describes ObjectMeta itself.
                                "metadata": {"type": "object"},
                                "spec": spec_schema,
                                "status": status_schema,
                            },
                        }
                    },
                }
            ],
        },
    }


_HEADER = "# Generated by `minds crds generate` from the pydantic models. Do not edit.\n"
_PEERING_HEADER = "# Generated by `minds crds generate`: kopf's peering CRD. Do not edit.\n"


def render_yaml(kind: Kind) -> str:
    return _HEADER + yaml.safe_dump(render_crd(kind), sort_keys=False, width=100)


def peering_crd() -> dict[str, Any]:
    """kopf's ClusterKopfPeering, where controller shards are declared and their replicas
    meet (docs/execution.md, Scaling out). Unlike kopf's example it has a status subresource,
    so the controller's role can write liveness records without being able to change which
    namespaces a shard serves (an annotation, the cluster admin's)."""
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {
            "name": f"{PEERING_PLURAL}.{PEERING_GROUP}",
            "labels": {"app.kubernetes.io/part-of": "minds-operator"},
        },
        "spec": {
            "group": PEERING_GROUP,
            "scope": "Cluster",
            "names": {
                "kind": PEERING_KIND,
                "plural": PEERING_PLURAL,
                "singular": PEERING_KIND.lower(),
            },
            "versions": [
                {
                    "name": PEERING_VERSION,
                    "served": True,
                    "storage": True,
                    "subresources": {"status": {}},
                    "additionalPrinterColumns": [
                        {
                            "name": "Namespaces",
                            "type": "string",
                            "jsonPath": ".metadata.annotations.minds\\.dev/namespaces",
                            "description": "The namespaces this controller shard serves.",
                        }
                    ],
                    "schema": {
                        "openAPIV3Schema": {
                            "type": "object",
                            "description": "A kopf peering: controllers that must not act at "
                            "once. For minds, one controller shard and its replicas.",
                            "properties": {
                                "status": {
                                    "type": "object",
                                    "description": "kopf's liveness record per replica.",
                                    "x-kubernetes-preserve-unknown-fields": True,
                                }
                            },
                            "x-kubernetes-preserve-unknown-fields": True,
                        }
                    },
                }
            ],
        },
    }


def rendered_files() -> dict[str, str]:
    """File name -> content for every CRD, as committed under ``crds/``."""
    files = {f"{kind.crd_name}.yaml": render_yaml(kind) for kind in KINDS}
    peering = peering_crd()
    files[f"{peering['metadata']['name']}.yaml"] = _PEERING_HEADER + yaml.safe_dump(
        peering, sort_keys=False, width=100
    )
    return files


_TEMPLATE_HEADER = (
    "# Generated by `minds crds generate` from the pydantic models. Do not edit.\n"
    "# A template, not the chart's crds/: Helm installs crds/ once and never upgrades it, so a\n"
    "# new controller would meet the old schema and the API server would prune what it writes.\n"
)
_METADATA_END = "\nspec:\n"
# Inserted at the end of the CRD's labels (always the last key of its metadata): the chart's
# version labels, and the keep policy. Deleting a CRD deletes every object of its kind, so
# Helm must leave them in place when the release is uninstalled, and also when an upgrade
# stops rendering them (crds.enabled turned off to hand them to another tool).
_TEMPLATE_METADATA = (
    '    {{- include "minds.crdLabels" . | nindent 4 }}\n'
    '  {{- if include "minds.crdsKeep" . }}\n'
    "  annotations:\n"
    "    helm.sh/resource-policy: keep\n"
    "  {{- end }}\n"
)


def chart_template(crd: dict[str, Any]) -> str:
    """One CRD as a chart template: rendered while ``crds.enabled`` (the default), kept by
    Helm unless ``crds.keep`` is off, labelled with the chart's version. The CRD's own text
    is the plain file's, so the two copies cannot disagree on the schema."""
    text = yaml.safe_dump(crd, sort_keys=False, width=100)
    if "{{" in text or "}}" in text:
        raise SchemaError(f"{crd['metadata']['name']}: braces would be read as a Helm template")
    head, sep, spec = text.partition(_METADATA_END)
    if not sep or "  labels:\n" not in head or "annotations" in head:
        raise SchemaError(f"{crd['metadata']['name']}: metadata is not name and labels only")
    return (
        _TEMPLATE_HEADER
        + '{{- if include "minds.crdsEnabled" . }}\n'
        + head
        + "\n"
        + _TEMPLATE_METADATA
        + "spec:\n"
        + spec
        + "{{- end }}\n"
    )


def chart_template_files() -> dict[str, str]:
    """File name -> content for every CRD, as committed under the chart's templates/crds/."""
    crds = [render_crd(kind) for kind in KINDS] + [peering_crd()]
    return {f"{crd['metadata']['name']}.yaml": chart_template(crd) for crd in crds}

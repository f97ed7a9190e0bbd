"""The chart as `helm template` renders it: valid Kubernetes objects, built from the project's
own files, naming the release's ServiceAccount, with the least privilege and the restricted
security context the controller needs."""

from __future__ import annotations

import json
import re
from datetime import timedelta
from pathlib import Path
from typing import Any

import kubernetes_validate
import pytest
import yaml

from minds.adapters.ledger import APP_ROLE_ENV, READER_ROLE_ENV
from minds.adapters.model_endpoints import ModelEndpoints
from minds.controller.settings import (
    APPROVAL_TTL_ENV,
    PRICES_ENV,
    ConfigError,
    approval_ttl,
    priced_registry,
)
from minds.domain.capabilities.registry import REGISTRY
from tests.fixtures.helm import CHART, LINT_VALUES, Helm, find

FILES = CHART / "files"
REPO = CHART.parent.parent
_YAML_BLOCK = re.compile(r"^```yaml\n(.*?)^```", re.MULTILINE | re.DOTALL)
KUBE_VERSION = "1.30.0"
"""The chart's kubeVersion floor: every object must be valid there."""


def _file_objects(name: str) -> list[dict[str, Any]]:
    return [d for d in yaml.safe_load_all((FILES / name).read_text()) if d]


def test_every_rendered_object_is_valid_kubernetes(helm: Helm) -> None:
    objects = helm.objects()
    kinds = {o["kind"] for o in objects}
    assert {
        "ServiceAccount",
        "ClusterRole",
        "ClusterRoleBinding",
        "RoleBinding",
        "ValidatingAdmissionPolicy",
        "ValidatingAdmissionPolicyBinding",
        "Deployment",
        "Job",
        "ConfigMap",
        "Service",
        "PodDisruptionBudget",
        "NetworkPolicy",
    } <= kinds
    for obj in objects:
        kubernetes_validate.validate(obj, KUBE_VERSION, strict=True)


@pytest.mark.parametrize(
    "name",
    [
        "controller-clusterrole.yaml",
        "controller-workloads-clusterrole.yaml",
        "model-keys-clusterrole.yaml",
        "user-clusterroles.yaml",
        "approval-policy.yaml",
        "person-acts-policy.yaml",
        "controller-workload-policy.yaml",
        "namespace-policy.yaml",
        "controller-plan-deletion-policy.yaml",
        "free-form-policy.yaml",
        "status-policy.yaml",
        "grant-policy.yaml",
        "corrections-policy.yaml",
    ],
)
def test_rbac_and_policies_are_the_files_themselves(helm: Helm, name: str) -> None:
    """The files are the one source: the chart adds labels, and changes nothing else (the
    controller's username aside, which the default release keeps)."""
    objects = helm.objects()
    for expected in _file_objects(name):
        rendered = find(objects, expected["kind"], expected["metadata"]["name"])
        assert {k: v for k, v in rendered.items() if k != "metadata"} == {
            k: v for k, v in expected.items() if k != "metadata"
        }
        assert expected["metadata"]["labels"].items() <= rendered["metadata"]["labels"].items()


def test_admission_policies_follow_the_release_service_account(helm: Helm) -> None:
    objects = helm.objects({"serviceAccount.name": "ops-minds"}, namespace="platform")
    text = yaml.safe_dump_all(objects)
    assert "system:serviceaccount:minds-system:minds-controller" not in text
    for policy in (
        "minds-controller-workload-writes",
        "minds-namespace-fence",
        "minds-controller-plan-deletion",
        "minds-status-guard",
        "minds-grant-authorship",
        "minds-grant-approval-link",
    ):
        rendered = yaml.safe_dump(find(objects, "ValidatingAdmissionPolicy", policy))
        assert "'system:serviceaccount:platform:ops-minds'" in rendered
    binding = find(objects, "ClusterRoleBinding", "minds-controller:platform:ops-minds")
    assert binding["subjects"] == [
        {"kind": "ServiceAccount", "name": "ops-minds", "namespace": "platform"}
    ]
    assert find(objects, "ServiceAccount", "ops-minds", "platform")
    deployment = find(objects, "Deployment", "minds-controller")
    assert deployment["spec"]["template"]["spec"]["serviceAccountName"] == "ops-minds"


def test_workloads_are_bound_only_in_the_managed_namespaces(helm: Helm) -> None:
    objects = helm.objects({"managedNamespaces": ["team-a", "team-b"], "modelKeyNamespaces": []})
    bindings = [o for o in objects if o["kind"] == "RoleBinding" and not _ledger(o)]
    assert sorted((b["metadata"]["namespace"], b["roleRef"]["name"]) for b in bindings) == [
        ("team-a", "minds-workloads"),
        ("team-b", "minds-workloads"),
    ]
    assert not [
        o
        for o in objects
        if o["kind"] == "ClusterRoleBinding" and o["roleRef"]["name"] != "minds-controller"
    ]


def test_cluster_wide_workloads_are_an_explicit_value(helm: Helm) -> None:
    objects = helm.objects({"workloadsClusterWide": True})
    binding = find(objects, "ClusterRoleBinding", "minds-workloads:minds-system:minds-controller")
    assert binding["roleRef"]["name"] == "minds-workloads"


def test_model_keys_are_readable_only_where_listed(helm: Helm) -> None:
    objects = helm.objects({"modelKeyNamespaces": ["team-llm"], "managedNamespaces": []})
    binding = find(objects, "RoleBinding", "minds-model-keys", "team-llm")
    assert binding["roleRef"]["name"] == "minds-model-keys"
    assert [o for o in objects if o["kind"] == "RoleBinding" and not _ledger(o)] == [binding]


def _ledger(binding: Any) -> bool:
    """The binding of the ledger's checkpoint ConfigMap (tests/unit/chart/test_chart_ledger)."""
    return bool(binding["roleRef"]["name"] == "minds-ledger-checkpoint")


def test_the_controller_may_never_read_the_ledgers_secrets(helm: Helm) -> None:
    """The release namespace holds the owner's URL; a model-keys binding there would let the
    controller get it."""
    proc = helm.template({"modelKeyNamespaces": ["minds-system"]}, check=False)
    assert proc.returncode != 0
    assert "modelKeyNamespaces: minds-system is the release namespace" in proc.stderr


def test_user_roles_aggregate_into_the_builtin_roles_but_approving_does_not(helm: Helm) -> None:
    objects = helm.objects()
    aggregate = "rbac.authorization.k8s.io/aggregate-to-"
    labels = {
        name: {
            k for k in find(objects, "ClusterRole", name)["metadata"]["labels"] if aggregate in k
        }
        for name in ("minds-viewer", "minds-admin", "minds-approver")
    }
    assert labels == {
        "minds-viewer": {f"{aggregate}view"},
        "minds-admin": {f"{aggregate}admin"},
        "minds-approver": set(),
    }
    off = helm.objects({"userRoles.aggregateToBuiltIn": False})
    assert not any(
        aggregate in k for o in off if o["kind"] == "ClusterRole" for k in o["metadata"]["labels"]
    )


def _controller_pod(objects: list[Any]) -> dict[str, Any]:
    pod: dict[str, Any] = find(objects, "Deployment", "minds-controller")["spec"]["template"][
        "spec"
    ]
    return pod


def test_one_controller_replaced_not_rolled(helm: Helm) -> None:
    spec = find(helm.objects(), "Deployment", "minds-controller")["spec"]
    assert spec["replicas"] == 1
    assert spec["strategy"] == {"type": "Recreate"}


SHARD_A = {"name": "team-a", "namespaces": ["payments", "checkout"]}
SHARD_B = {"name": "team-b", "namespaces": ["search"], "replicas": 3}


def test_each_shard_gets_its_deployment_and_its_declaration(helm: Helm) -> None:
    objects = helm.objects({"shards": [SHARD_A, SHARD_B], "controller.peeringLifetimeSeconds": 30})
    deployments = {o["metadata"]["name"]: o for o in objects if o["kind"] == "Deployment"}
    assert set(deployments) == {"minds-controller-team-a", "minds-controller-team-b"}
    for shard, replicas in (("team-a", 2), ("team-b", 3)):
        deployment = deployments[f"minds-controller-{shard}"]
        kubernetes_validate.validate(deployment, KUBE_VERSION, strict=True)
        spec = deployment["spec"]
        assert spec["replicas"] == replicas
        # The shards' Pods must never be each other's: a selector per shard.
        assert spec["selector"]["matchLabels"]["minds.dev/shard"] == shard
        assert spec["strategy"]["type"] == "RollingUpdate"
        container = spec["template"]["spec"]["containers"][0]
        args = container["args"]
        assert args[args.index("--shard") + 1] == f"minds-{shard}"
        assert args[args.index("--peering-lifetime") + 1] == "30"
        assert "--namespace" not in args
        pod_id = {e["name"]: e for e in container["env"]}["POD_ID"]
        assert pod_id["valueFrom"] == {"fieldRef": {"fieldPath": "metadata.name"}}
    peerings = {o["metadata"]["name"]: o for o in objects if o["kind"] == "ClusterKopfPeering"}
    assert {n: p["metadata"]["annotations"] for n, p in peerings.items()} == {
        "minds-team-a": {"minds.dev/namespaces": "payments,checkout"},
        "minds-team-b": {"minds.dev/namespaces": "search"},
    }


def test_unsharded_there_is_no_peering(helm: Helm) -> None:
    objects = helm.objects({"watchNamespaces": ["payments"]})
    assert "ClusterKopfPeering" not in {o["kind"] for o in objects}
    args = _controller_pod(objects)["containers"][0]["args"]
    assert args[args.index("--namespace") + 1] == "payments"
    assert "--shard" not in args


def test_probes_hit_the_liveness_endpoint_the_controller_serves(helm: Helm) -> None:
    container = _controller_pod(helm.objects({"controller.livenessPort": 8123}))["containers"][0]
    args = container["args"]
    assert args[:2] == ["controller", "run"]
    assert args[args.index("--liveness") + 1] == "http://0.0.0.0:8123/healthz"
    ports = {p["name"]: p["containerPort"] for p in container["ports"]}
    assert ports["liveness"] == 8123
    for probe in ("startupProbe", "livenessProbe"):
        assert container[probe]["httpGet"] == {"path": "/healthz", "port": "liveness"}
    assert container["resources"]["requests"]
    assert container["resources"]["limits"]


@pytest.mark.parametrize("kind", ["Deployment", "Job"])
def test_pods_run_restricted_with_a_read_only_root(helm: Helm, kind: str) -> None:
    objects = helm.objects()
    pod = next(o for o in objects if o["kind"] == kind)["spec"]["template"]["spec"]
    assert pod["securityContext"]["runAsNonRoot"] is True
    assert pod["securityContext"]["seccompProfile"] == {"type": "RuntimeDefault"}
    for container in pod["containers"]:
        sc = container["securityContext"]
        assert sc["allowPrivilegeEscalation"] is False
        assert sc["readOnlyRootFilesystem"] is True
        assert sc["capabilities"] == {"drop": ["ALL"]}
        assert sc["runAsUser"] != 0


def _env(container: dict[str, Any]) -> dict[str, Any]:
    return {e["name"]: e.get("valueFrom") or e.get("value") for e in container["env"]}


def test_the_controller_gets_the_application_role_and_never_the_owner(helm: Helm) -> None:
    objects = helm.objects()
    controller = _env(_controller_pod(objects)["containers"][0])
    assert controller["MINDS_DATABASE_URL"] == {
        "secretKeyRef": {"name": "minds-ledger-app", "key": "url"}
    }
    assert "MINDS_DATABASE_OWNER_URL" not in controller
    job = find(objects, "Job", "minds-db-upgrade")
    assert job["metadata"]["annotations"]["helm.sh/hook"] == "pre-install,pre-upgrade"
    pod = job["spec"]["template"]["spec"]
    assert pod["automountServiceAccountToken"] is False
    container = pod["containers"][0]
    assert container["args"] == ["db", "upgrade"]
    assert _env(container)["MINDS_DATABASE_OWNER_URL"] == {
        "secretKeyRef": {"name": "minds-ledger-owner", "key": "url"}
    }


def test_the_migration_job_grants_the_roles_the_values_name(helm: Helm) -> None:
    values = {"database.appRole": "ops_app", "database.readerRole": "ops_reader"}
    job = find(helm.objects(values), "Job", "minds-db-upgrade")
    env = _env(job["spec"]["template"]["spec"]["containers"][0])
    assert (env[APP_ROLE_ENV], env[READER_ROLE_ENV]) == ("ops_app", "ops_reader")
    unset = find(helm.objects(), "Job", "minds-db-upgrade")["spec"]["template"]["spec"]
    assert READER_ROLE_ENV not in _env(unset["containers"][0])


def test_the_model_endpoints_reach_the_controller_as_configured(helm: Helm, tmp_path: Path) -> None:
    endpoints = [
        {"name": "team-llm", "url": "https://llm.example.com/v1"},
        {"name": "in-cluster", "url": "http://llm.ai:8000/v1", "allowedAddresses": ["10.0.0.0/8"]},
    ]
    objects = helm.objects({"modelEndpoints": endpoints})
    pod = _controller_pod(objects)
    path = Path(_env(pod["containers"][0])["MINDS_MODEL_ENDPOINTS"])
    mount = next(m for m in pod["containers"][0]["volumeMounts"] if m["name"] == "model-endpoints")
    assert path.parent == Path(mount["mountPath"])
    volume = next(v for v in pod["volumes"] if v["name"] == "model-endpoints")
    config = find(objects, "ConfigMap", volume["configMap"]["name"])
    (tmp_path / path.name).write_text(config["data"][path.name])
    loaded = ModelEndpoints.load(tmp_path / path.name)
    assert loaded.names() == {"team-llm", "in-cluster"}


def test_prices_and_the_approval_ttl_reach_the_controller_as_configured(helm: Helm) -> None:
    """What the chart renders is what the controller reads at start."""
    values = {"capabilities.prices": {"service.restart": 2.5}, "approvals.ttlSeconds": 600}
    env = _env(_controller_pod(helm.objects(values))["containers"][0])
    assert priced_registry(env[PRICES_ENV])["service.restart"].money == 2.5
    assert approval_ttl(env[APPROVAL_TTL_ENV]) == timedelta(seconds=600)
    unpriced = _env(_controller_pod(helm.objects({"capabilities.prices": None}))["containers"][0])
    assert PRICES_ENV not in unpriced
    assert approval_ttl(unpriced[APPROVAL_TTL_ENV]) == timedelta(days=1)


def test_the_documented_prices_are_what_the_controller_reads(helm: Helm) -> None:
    """docs/capabilities.md, Prices: its values render the prices it describes, and the line
    it shows is the controller's refusal of an unknown capability."""
    from tests.fixtures.docs import sections

    text = sections(REPO / "docs" / "capabilities.md")["Prices"]
    [values] = [yaml.safe_load(b) for b in _YAML_BLOCK.findall(text)]
    env = _env(
        _controller_pod(helm.objects({"capabilities": values["capabilities"]}))["containers"][0]
    )
    registry = priced_registry(env[PRICES_ENV])
    assert {n: registry[n].money for n in ("service.restart", "logs.query")} == {
        "service.restart": 2.5,
        "logs.query": 0.1,
    }
    [shown] = re.findall(r"^```text\n(.*?)\n```", text, re.MULTILINE | re.DOTALL)
    with pytest.raises(ConfigError) as refused:
        priced_registry('{"service.restat": 1}')
    assert shown.removeprefix("error: ").removesuffix("...)") in str(refused.value)


def test_the_schema_prices_exactly_the_registrys_capabilities() -> None:
    schema = json.loads((CHART / "values.schema.json").read_text())
    prices = schema["properties"]["capabilities"]["properties"]["prices"]
    assert prices["additionalProperties"] is False
    assert tuple(prices["properties"]) == REGISTRY.names()


def test_monitoring_objects_only_when_asked_and_their_crds_exist(helm: Helm) -> None:
    on = {"metrics.serviceMonitor.enabled": True, "metrics.prometheusRule.enabled": True}
    assert helm.template(on, check=False).returncode != 0
    skipped = helm.objects({**on, "metrics.ifCrdsMissing": "skip"})
    assert not {"ServiceMonitor", "PrometheusRule"} & {o["kind"] for o in skipped}
    with_crds = helm.objects(
        on,
        "--api-versions",
        "monitoring.coreos.com/v1/ServiceMonitor",
        "--api-versions",
        "monitoring.coreos.com/v1/PrometheusRule",
    )
    assert {"ServiceMonitor", "PrometheusRule"} <= {o["kind"] for o in with_crds}
    assert not {"ServiceMonitor", "PrometheusRule"} & {
        o["kind"]
        for o in helm.objects(None, "--api-versions", "monitoring.coreos.com/v1/ServiceMonitor")
    }
    assert helm.template(on, "--api-versions", "monitoring.coreos.com/v1/ServiceMonitor",
                         check=False).returncode != 0  # fmt: skip


@pytest.mark.parametrize(
    ("values", "field"),
    [
        ({"database.password": "hunter2"}, "password"),
        ({"replicas": 2}, "'replicas'"),
        ({"serviceAccount.name": "Not_A_Name"}, "/serviceAccount/name"),
        # The name is spliced into the policies' CEL: a quote must never get through.
        ({"serviceAccount.name": "x' || true || '"}, "/serviceAccount/name"),
        ({"image.digest": "latest"}, "/image/digest"),
        ({"metrics.port": 0}, "/metrics/port"),
        ({"managedNamespaces": ["Team A"]}, "/managedNamespaces/0"),
        ({"modelEndpoints": [{"name": "x", "url": "ftp://x"}]}, "/modelEndpoints/0/url"),
        ({"modelEndpoints": [{"name": "x", "url": "https://x", "apiKey": "k"}]}, "apiKey"),
        ({"podDisruptionBudget.maxUnavailable": 2}, "/podDisruptionBudget/maxUnavailable"),
        ({"capabilities.prices": {"service.restat": 1}}, "'service.restat' not allowed"),
        ({"capabilities.prices": {"service.restart": -1}}, "/capabilities/prices/service.restart"),
        ({"approvals.ttlSeconds": 5}, "/approvals/ttlSeconds"),
        ({"database.url.secretName": ""}, "database.url.secretName"),
        ({"database.ownerUrl.secretName": ""}, "database.ownerUrl.secretName"),
        ({"shards": [{"name": "a", "namespaces": []}]}, "/shards/0/namespaces"),
        ({"shards": [{"name": "Team A", "namespaces": ["x"]}]}, "/shards/0/name"),
        (
            {"shards": [{"name": "a", "namespaces": ["x"]}], "watchNamespaces": ["x"]},
            "watchNamespaces",
        ),
        ({"shards": [SHARD_A, {**SHARD_A, "namespaces": ["y"]}]}, "two shards are named team-a"),
        (
            {"shards": [SHARD_A, {"name": "team-b", "namespaces": ["search", "checkout"]}]},
            "namespace checkout is in shard team-a and in shard team-b",
        ),
    ],
)
def test_bad_values_are_refused_with_the_field_named(
    helm: Helm, values: dict[str, Any], field: str
) -> None:
    """Helm names a schema field as a JSON pointer (/a/b), the chart's own checks as a.b."""
    proc = helm.template(values, check=False)
    assert proc.returncode != 0, proc.stdout
    assert field in proc.stderr, proc.stderr


def test_without_migrations_no_owner_secret_is_needed(helm: Helm) -> None:
    objects = helm.objects({"migrations.enabled": False, "database.ownerUrl.secretName": ""})
    assert "Job" not in {o["kind"] for o in objects}


def test_helm_lint_strict_passes_and_enforces_the_schema(helm: Helm) -> None:
    lint = ["lint", "--strict", str(CHART), "-f", str(LINT_VALUES)]
    helm.run(*lint)
    refused = helm.run(*lint, "--set-json", "controller.replicas=2", check=False)
    assert refused.returncode != 0
    assert "/controller" in refused.stdout + refused.stderr
    assert "replicas" in refused.stdout + refused.stderr


def test_clusters_older_than_the_admission_policies_are_refused(helm: Helm) -> None:
    assert helm.template(None, "--kube-version", "1.30.0").returncode == 0
    old = helm.template(None, "--kube-version", "1.29.9", check=False)
    assert old.returncode != 0
    assert ">=1.30.0-0" in old.stderr


def test_restricting_egress_keeps_dns(helm: Helm) -> None:
    egress = [{"to": [{"ipBlock": {"cidr": "10.0.0.0/8"}}]}]
    policy = find(
        helm.objects({"networkPolicy.egress": egress}), "NetworkPolicy", "minds-controller"
    )
    assert policy["spec"]["policyTypes"] == ["Ingress", "Egress"]
    assert {"port": 53, "protocol": "UDP"} in policy["spec"]["egress"][0]["ports"]
    assert policy["spec"]["egress"][1:] == egress
    open_egress = helm.objects({"networkPolicy.egress": []})
    assert find(open_egress, "NetworkPolicy", "minds-controller")["spec"]["policyTypes"] == [
        "Ingress"
    ]


def test_the_documented_shards_are_what_the_chart_and_the_example_give(helm: Helm) -> None:
    """docs/execution.md, Scaling out: its values render the shards it describes, and the
    declaration it shows is the example's."""
    from tests.fixtures.docs import sections

    text = sections(REPO / "docs" / "execution.md")["Scaling out"]
    declared, values = [yaml.safe_load(b) for b in _YAML_BLOCK.findall(text)]
    example = list(yaml.safe_load_all((REPO / "examples" / "shards.yaml").read_text()))
    assert declared == example[0]
    objects = helm.objects({"shards": values["shards"]})
    deployments = {o["metadata"]["name"]: o for o in objects if o["kind"] == "Deployment"}
    assert {n: d["spec"]["replicas"] for n, d in deployments.items()} == {
        "minds-controller-team-a": 2,
        "minds-controller-team-b": 2,
    }
    peerings = {o["metadata"]["name"]: o for o in objects if o["kind"] == "ClusterKopfPeering"}
    assert {n: p["metadata"]["annotations"] for n, p in peerings.items()} == {
        f"minds-{d['metadata']['name']}": d["metadata"]["annotations"] for d in example
    }

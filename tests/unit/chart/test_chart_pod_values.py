"""The values that bend the chart's Pods to a cluster, as `helm template` renders them: extra
arguments, environment, volumes and mounts, topology spread, the log format and the security
contexts. Each reaches every Pod it is documented for (the controller, each shard, the
migrations Job), refuses what would silently override the chart, and renders valid
Kubernetes objects."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import kubernetes_validate
import pytest
import yaml
from typer.exceptions import TyperException

from tests.fixtures.docs import yaml_blocks
from tests.fixtures.helm import CHART, Helm
from tests.unit.test_docs_runbooks import _resolve as resolve_cli

REPO = CHART.parent.parent
KUBE_VERSION = "1.30.0"
SHARDS = [
    {"name": "team-a", "namespaces": ["payments"]},
    {"name": "team-b", "namespaces": ["search"], "replicas": 3},
]
CA_VOLUME = {"name": "minds-ca", "configMap": {"name": "internal-ca"}}
CA_MOUNT = {"name": "minds-ca", "mountPath": "/etc/minds-ca", "readOnly": True}
CA_ENV = {"name": "SSL_CERT_FILE", "value": "/etc/minds-ca/ca.crt"}


def _pods(objects: list[Any]) -> dict[str, dict[str, Any]]:
    """Every Pod spec the chart renders, by its object's name (Deployments and the Job)."""
    return {
        o["metadata"]["name"]: o["spec"]["template"]["spec"]
        for o in objects
        if o["kind"] in ("Deployment", "Job")
    }


def _controllers(objects: list[Any]) -> dict[str, dict[str, Any]]:
    return {n: p for n, p in _pods(objects).items() if n != "minds-db-upgrade"}


def _container(pod: dict[str, Any]) -> dict[str, Any]:
    [container] = pod["containers"]
    return container


def _valid(objects: list[Any]) -> None:
    for obj in objects:
        if obj["kind"] in ("Deployment", "Job"):
            kubernetes_validate.validate(obj, KUBE_VERSION, strict=True)


@pytest.mark.parametrize("shards", [[], SHARDS], ids=["single", "shards"])
def test_extra_args_follow_the_charts_own_on_every_controller(
    helm: Helm, shards: list[Any]
) -> None:
    objects = helm.objects({"shards": shards, "controller.extraArgs": ["--verbose", "a b"]})
    controllers = _controllers(objects)
    assert len(controllers) == (len(shards) or 1)
    for name, pod in controllers.items():
        args = _container(pod)["args"]
        assert args[:2] == ["controller", "run"], name
        assert args[-2:] == ["--verbose", "a b"], name
    assert _container(_pods(objects)["minds-db-upgrade"])["args"] == ["db", "upgrade"]


@pytest.mark.parametrize("shards", [[], SHARDS], ids=["single", "shards"])
def test_the_log_format_is_an_argument_of_every_controller(helm: Helm, shards: list[Any]) -> None:
    for chosen in ("json", "text"):
        objects = helm.objects({"shards": shards, "controller.logFormat": chosen})
        for name, pod in _controllers(objects).items():
            args = _container(pod)["args"]
            assert args[args.index("--log-format") + 1] == chosen, name
            assert args.count("--log-format") == 1


def test_an_unknown_log_format_is_refused(helm: Helm) -> None:
    proc = helm.template({"controller.logFormat": "logfmt"}, check=False)
    assert proc.returncode != 0
    assert "/controller/logFormat" in proc.stderr


@pytest.mark.parametrize("shards", [[], SHARDS], ids=["single", "shards"])
def test_extra_env_volumes_and_mounts_reach_every_pod(helm: Helm, shards: list[Any]) -> None:
    values = {
        "shards": shards,
        "controller.extraEnv": [CA_ENV],
        "controller.extraVolumes": [CA_VOLUME],
        "controller.extraVolumeMounts": [CA_MOUNT],
    }
    objects = helm.objects(values)
    pods = _pods(objects)
    assert "minds-db-upgrade" in pods
    for name, pod in pods.items():
        container = _container(pod)
        assert container["env"][-1] == CA_ENV, name
        assert container["volumeMounts"][-1] == CA_MOUNT, name
        assert pod["volumes"][-1] == CA_VOLUME, name
        # The chart's own stay in place beside them.
        assert {"tmp", "minds-ca"} <= {v["name"] for v in pod["volumes"]}, name
    _valid(objects)


def _defaults(helm: Helm) -> list[Any]:
    """The chart with only the values an install must give: every other value its default."""
    out = helm.run(
        "template", "minds", str(CHART), "-n", "minds-system",
        "--set", "database.url.secretName=app", "--set", "database.ownerUrl.secretName=owner",
    ).stdout  # fmt: skip
    return [d for d in yaml.safe_load_all(out) if d]


def test_by_default_text_logs_and_only_the_charts_own_env_and_volumes(helm: Helm) -> None:
    pods = _pods(_defaults(helm))
    assert set(pods) == {"minds-controller", "minds-db-upgrade"}
    args = _container(pods["minds-controller"])["args"]
    assert args[args.index("--log-format") + 1] == "text"
    assert args[-2:] == ["--log-format", "text"]
    for name, pod in pods.items():
        container = _container(pod)
        assert {e["name"] for e in container["env"]} <= {
            "POD_ID", "MINDS_DATABASE_URL", "MINDS_MODEL_ENDPOINTS", "MINDS_APPROVAL_TTL_SECONDS",
            "MINDS_DATABASE_OWNER_URL",
        }, name  # fmt: skip
        assert {v["name"] for v in pod["volumes"]} <= {"tmp", "model-endpoints"}, name
        assert {m["name"] for m in container["volumeMounts"]} <= {"tmp", "model-endpoints"}
        assert "topologySpreadConstraints" not in pod, name


def _chart_env_names(helm: Helm) -> set[str]:
    """Every variable the chart sets itself, with every value that adds one given."""
    values = {
        "capabilities.prices": {"service.restart": 1},
        "database.appRole": "ops_app",
        "database.readerRole": "ops_reader",
        "controller.extraEnv": [],
    }
    pods = _pods(helm.objects(values)) | _pods(helm.objects({**values, "shards": SHARDS}))
    return {e["name"] for pod in pods.values() for e in _container(pod)["env"]}


def test_a_variable_the_chart_sets_is_refused_in_extra_env(helm: Helm) -> None:
    """Two definitions of one name leave the Pod with the last one: an extra MINDS_DATABASE_URL
    would silently replace database.url (the owner's URL given to the controller, say)."""
    names = _chart_env_names(helm)
    assert {"MINDS_DATABASE_URL", "MINDS_DATABASE_OWNER_URL", "POD_ID"} <= names
    for name in sorted(names):
        proc = helm.template({"controller.extraEnv": [{"name": name, "value": "x"}]}, check=False)
        assert proc.returncode != 0, name
        assert f"controller.extraEnv: {name} is set by the chart" in proc.stderr, proc.stderr
    database = helm.template(
        {"controller.extraEnv": [{"name": "MINDS_DATABASE_URL", "value": "x"}]}, check=False
    )
    assert "set by the chart from database.url" in database.stderr


@pytest.mark.parametrize("name", ["tmp", "model-endpoints"])
def test_an_extra_volume_cannot_take_the_name_of_the_charts_own(helm: Helm, name: str) -> None:
    proc = helm.template({"controller.extraVolumes": [{"name": name, "emptyDir": {}}]}, check=False)
    assert proc.returncode != 0
    assert f"controller.extraVolumes: {name} is the name of a volume" in proc.stderr


def test_a_mount_without_a_path_is_refused(helm: Helm) -> None:
    proc = helm.template({"controller.extraVolumeMounts": [{"name": "minds-ca"}]}, check=False)
    assert proc.returncode != 0
    assert "/controller/extraVolumeMounts/0" in proc.stderr


def test_each_controller_spreads_its_own_pods(helm: Helm) -> None:
    zone = {"maxSkew": 1, "topologyKey": "topology.kubernetes.io/zone"}
    chosen = {"matchLabels": {"app.kubernetes.io/name": "minds-operator"}}
    constraints = [
        {**zone, "whenUnsatisfiable": "ScheduleAnyway"},
        {**zone, "topologyKey": "kubernetes.io/hostname", "whenUnsatisfiable": "DoNotSchedule",
         "labelSelector": chosen},
    ]  # fmt: skip
    for shards in ([], SHARDS):
        values = {"shards": shards, "controller.topologySpreadConstraints": constraints}
        objects = helm.objects(values)
        for obj in objects:
            if obj["kind"] != "Deployment":
                continue
            spread = obj["spec"]["template"]["spec"]["topologySpreadConstraints"]
            # Without a selector, the Deployment's own: a shard's Pods spread among
            # themselves, not among every controller of the release.
            assert spread[0] == {**constraints[0], "labelSelector": obj["spec"]["selector"]}
            assert spread[1] == constraints[1]
        _valid(objects)
    job = _pods(helm.objects({"controller.topologySpreadConstraints": constraints}))
    assert "topologySpreadConstraints" not in job["minds-db-upgrade"]


def test_a_constraint_needs_its_topology_key(helm: Helm) -> None:
    bad = [{"maxSkew": 1, "whenUnsatisfiable": "ScheduleAnyway"}]
    proc = helm.template({"controller.topologySpreadConstraints": bad}, check=False)
    assert proc.returncode != 0
    assert "/controller/topologySpreadConstraints/0" in proc.stderr


# -- security contexts ---------------------------------------------------------------------------


def _contexts(objects: list[Any]) -> dict[str, tuple[dict[str, Any], dict[str, Any]]]:
    return {
        name: (pod["securityContext"], _container(pod)["securityContext"])
        for name, pod in _pods(objects).items()
    }


def test_by_default_every_pod_runs_as_10001_restricted(helm: Helm) -> None:
    contexts = _contexts(_defaults(helm)) | _contexts(helm.objects({"shards": SHARDS}))
    assert set(contexts) == {"minds-controller", "minds-controller-team-a",
                             "minds-controller-team-b", "minds-db-upgrade"}  # fmt: skip
    for name, (pod, container) in contexts.items():
        assert pod == {
            "runAsNonRoot": True,
            "runAsUser": 10001,
            "runAsGroup": 10001,
            "fsGroup": 10001,
            "seccompProfile": {"type": "RuntimeDefault"},
        }, name
        assert container == {
            "allowPrivilegeEscalation": False,
            "readOnlyRootFilesystem": True,
            "runAsNonRoot": True,
            "runAsUser": 10001,
            "runAsGroup": 10001,
            "capabilities": {"drop": ["ALL"]},
            "seccompProfile": {"type": "RuntimeDefault"},
        }, name


UNSET = ("runAsUser", "runAsGroup", "fsGroup")


def _nulls() -> list[str]:
    """--set-json arguments that null the user and groups, as a user would type them."""
    args = []
    for field in UNSET:
        args += ["--set-json", f"controller.podSecurityContext.{field}=null"]
    for field in UNSET[:2]:
        args += ["--set-json", f"controller.containerSecurityContext.{field}=null"]
    return args


def _unset_file(tmp_path: Path) -> list[str]:
    file = tmp_path / "unset.yaml"
    file.write_text(
        yaml.safe_dump(
            {
                "controller": {
                    "podSecurityContext": dict.fromkeys(UNSET),
                    "containerSecurityContext": dict.fromkeys(UNSET[:2]),
                }
            }
        )
    )
    return ["-f", str(file)]


@pytest.mark.parametrize("how", ["set-json", "values-file"])
def test_a_null_leaves_the_user_and_groups_to_the_platform(
    helm: Helm, tmp_path: Path, how: str
) -> None:
    args = _nulls() if how == "set-json" else _unset_file(tmp_path)
    objects = helm.objects({"shards": SHARDS}, *args)
    for name, (pod, container) in _contexts(objects).items():
        assert not set(UNSET) & set(pod), name
        assert not set(UNSET) & set(container), name
        # Still never root: the kubelet checks the image's numeric user (10001) instead.
        assert pod["runAsNonRoot"] is True, name
        assert container["runAsNonRoot"] is True, name
        assert container["capabilities"] == {"drop": ["ALL"]}, name
    _valid(objects)


def test_a_context_can_be_replaced_field_by_field(helm: Helm) -> None:
    values = {
        "controller.podSecurityContext.runAsUser": 20000,
        "controller.podSecurityContext.supplementalGroups": [5000],
        "controller.containerSecurityContext.runAsUser": 20000,
    }
    objects = helm.objects(values)
    for name, (pod, container) in _contexts(objects).items():
        assert (pod["runAsUser"], container["runAsUser"]) == (20000, 20000), name
        assert pod["supplementalGroups"] == [5000], name
        assert pod["fsGroup"] == 10001, name
    _valid(objects)


@pytest.mark.parametrize(
    ("values", "field"),
    [
        ({"controller.podSecurityContext.runAsUser": 0},
         "/controller/podSecurityContext/runAsUser"),
        ({"controller.containerSecurityContext.runAsUser": 0},
         "/controller/containerSecurityContext/runAsUser"),
        ({"controller.podSecurityContext.runAsUsr": 1}, "runAsUsr"),
        ({"controller.containerSecurityContext.readOnlyRootFs": True}, "readOnlyRootFs"),
        ({"controller.podSecurityContext.runAsUser": "10001"},
         "/controller/podSecurityContext/runAsUser"),
    ],
)  # fmt: skip
def test_a_wrong_security_field_is_refused(helm: Helm, values: dict[str, Any], field: str) -> None:
    proc = helm.template(values, check=False)
    assert proc.returncode != 0, proc.stdout
    assert field in proc.stderr, proc.stderr


def documented(value: str) -> dict[str, Any]:
    """The values block of docs/install.md's "Fitting the Pods to the cluster" that sets
    ``controller.<value>``."""
    blocks = yaml_blocks(REPO / "docs" / "install.md", "Fitting the Pods to the cluster")
    [values] = [b for b in blocks if value in b["controller"]]
    return dict(values)


def test_the_documented_values_for_an_assigned_user_unset_it(helm: Helm, tmp_path: Path) -> None:
    file = tmp_path / "assigned-user.yaml"
    file.write_text(yaml.safe_dump(documented("podSecurityContext")))
    for name, (pod, container) in _contexts(helm.objects(None, "-f", str(file))).items():
        assert not set(UNSET) & set(pod), name
        assert not set(UNSET) & set(container), name
        assert pod["runAsNonRoot"] is True


def test_the_documented_private_ca_mounts_where_its_variable_points(
    helm: Helm, tmp_path: Path
) -> None:
    file = tmp_path / "ca.yaml"
    file.write_text(yaml.safe_dump(documented("extraVolumes")))
    for name, pod in _pods(helm.objects(None, "-f", str(file))).items():
        container = _container(pod)
        env = {e["name"]: e.get("value") for e in container["env"]}
        [mount] = [m for m in container["volumeMounts"] if m["name"] == "minds-ca"]
        assert Path(env["SSL_CERT_FILE"]).parent == Path(mount["mountPath"]), name
        assert any(v["name"] == "minds-ca" for v in pod["volumes"]), name


def test_the_documented_spread_renders_on_the_controller(helm: Helm, tmp_path: Path) -> None:
    file = tmp_path / "spread.yaml"
    values = documented("topologySpreadConstraints")
    file.write_text(yaml.safe_dump(values))
    objects = helm.objects(None, "-f", str(file))
    [deployment] = [o for o in objects if o["kind"] == "Deployment"]
    [constraint] = deployment["spec"]["template"]["spec"]["topologySpreadConstraints"]
    [documented_constraint] = values["controller"]["topologySpreadConstraints"]
    assert constraint == {**documented_constraint, "labelSelector": deployment["spec"]["selector"]}


@pytest.mark.parametrize("shards", [[], SHARDS], ids=["single", "shards"])
def test_every_controllers_arguments_are_ones_the_cli_accepts(
    helm: Helm, shards: list[Any]
) -> None:
    """Parsed by the controller's own command line, as the image's entrypoint would: a flag
    the chart renders and `minds controller run` does not know would crash-loop the Pod."""
    for log_format in ("text", "json"):
        values = {
            "shards": shards,
            "watchNamespaces": [],
            "controller.logFormat": log_format,
            "controller.verbose": True,
            "controller.extraArgs": ["--namespace", "payments"] if not shards else [],
        }
        for pod in _controllers(helm.objects(values)).values():
            resolve_cli(_container(pod)["args"])
    refused = helm.objects({"controller.extraArgs": ["--log-colour"]})
    with pytest.raises(TyperException):
        resolve_cli(_container(_controllers(refused)["minds-controller"])["args"])

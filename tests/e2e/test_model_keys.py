"""Model endpoints and keys are the cluster admin's choice (docs/planning.md, "Consulting a
model"): against the real API server, with the controller's own ServiceAccount token.

The proposer is the controller's wiring (`model_proposer`), called in-process so the scripted
model server can count what reaches it; the Mind's condition is the controller process's.
"""

from __future__ import annotations

import re
import shlex
import uuid
from collections.abc import Callable, Iterator

import pytest
import yaml
from kubernetes.client import CoreV1Api
from kubernetes.client.exceptions import ApiException

from minds.adapters.kube.client import api_client
from minds.adapters.model_endpoints import ConfiguredEndpoint, ModelEndpoints
from minds.controller.wiring import model_proposer
from minds.domain.capabilities.registry import REGISTRY
from minds.domain.planning import MindView, proposal_vocabulary
from minds.domain.resources.mind import MindSpec
from tests.fixtures.cluster import REPO, Cluster
from tests.fixtures.docs import sh_commands
from tests.fixtures.scripted_llm import Reply, ScriptedLLM, scripted_llm
from tests.fixtures.waiting import eventually

MODEL_KEY = "sk-model-7d1e0c9b2a"
DB_PASSWORD = "db-hunter2-5f3a9e"
PROPOSAL = {
    "steps": [
        {
            "id": "look",
            "kind": "observe",
            "capability": "service.status",
            "target": {"kind": "workload", "namespace": "prod", "name": "atlas"},
        }
    ],
    "risk": "none: a read",
}


@pytest.fixture
def llm() -> Iterator[ScriptedLLM]:
    with scripted_llm() as server:
        yield server


def secret(name: str, namespace: str, key: str, value: str, *, model_key: bool) -> str:
    labels = {"minds.dev/model-key": "true"} if model_key else {}
    return yaml.safe_dump(
        {
            "apiVersion": "v1",
            "kind": "Secret",
            "metadata": {"name": name, "namespace": namespace, "labels": labels},
            "stringData": {key: value},
        }
    )


@pytest.fixture
def keys(cluster: Cluster, namespace: str) -> str:
    """A labelled model key and an unlabelled database password beside the Mind, readable by
    the controller because an admin bound minds-model-keys in this namespace (as documented)."""
    cluster.kubectl(
        "create", "rolebinding", "minds-model-keys", "-n", namespace,
        "--clusterrole=minds-model-keys",
        "--serviceaccount=minds-system:minds-controller",
    )  # fmt: skip
    cluster.kubectl("apply", "-f", "-", input_=secret("llm", namespace, "api-key", MODEL_KEY,
                                                      model_key=True))  # fmt: skip
    cluster.kubectl("apply", "-f", "-", input_=secret("db", namespace, "password", DB_PASSWORD,
                                                      model_key=False))  # fmt: skip
    return namespace


def mind_spec(endpoint: str, secret_name: str, key: str) -> MindSpec:
    return MindSpec.model_validate(
        {
            "model": {
                "endpoint": endpoint,
                "model": "planner-1",
                "apiKeySecretRef": {"name": secret_name, "key": key},
            }
        }
    )


def endpoints(llm: ScriptedLLM, *, allow_loopback: bool = True) -> ModelEndpoints:
    allowed = ["127.0.0.1"] if allow_loopback else []
    return ModelEndpoints(
        endpoints=[ConfiguredEndpoint(name="team-llm", url=llm.url, allowed_addresses=allowed)]
    )


def propose(cluster: Cluster, namespace: str, configured: ModelEndpoints, spec: MindSpec):  # type: ignore[no-untyped-def]
    api = api_client(str(cluster.controller_kubeconfig))
    mind = MindView(name="keeper", namespace=namespace, plan_model=True)
    return model_proposer(api, configured)(
        namespace, spec, "atlas runs normally", proposal_vocabulary(REGISTRY, mind)
    )


def bearer_tokens(llm: ScriptedLLM) -> list[str]:
    return [r.headers.get("authorization", "") for r in llm.requests]


def test_a_labelled_key_beside_the_mind_reaches_the_configured_endpoint(
    cluster: Cluster, keys: str, llm: ScriptedLLM
) -> None:
    llm.play(Reply.completion(PROPOSAL))
    proposal = propose(cluster, keys, endpoints(llm), mind_spec("team-llm", "llm", "api-key"))
    assert proposal is not None
    assert bearer_tokens(llm) == [f"Bearer {MODEL_KEY}"]


def test_an_unlabelled_secret_is_never_sent(
    cluster: Cluster, keys: str, llm: ScriptedLLM, caplog: pytest.LogCaptureFixture
) -> None:
    llm.play(Reply.completion(PROPOSAL))
    proposal = propose(cluster, keys, endpoints(llm), mind_spec("team-llm", "db", "password"))
    assert proposal is None
    assert llm.requests == []
    assert "not labelled minds.dev/model-key=true" in caplog.text
    assert DB_PASSWORD not in caplog.text


def test_an_endpoint_the_admin_did_not_configure_is_never_called(
    cluster: Cluster, keys: str, llm: ScriptedLLM
) -> None:
    llm.play(Reply.completion(PROPOSAL))
    proposal = propose(cluster, keys, endpoints(llm), mind_spec("elsewhere", "llm", "api-key"))
    assert proposal is None
    assert llm.requests == []


def test_loopback_needs_the_admins_allowance(cluster: Cluster, keys: str, llm: ScriptedLLM) -> None:
    llm.play(Reply.completion(PROPOSAL))
    configured = endpoints(llm, allow_loopback=False)
    proposal = propose(cluster, keys, configured, mind_spec("team-llm", "llm", "api-key"))
    assert proposal is None
    assert llm.requests == []


def test_a_secret_without_the_controllers_binding_is_unreadable(
    cluster: Cluster, namespace: str, llm: ScriptedLLM
) -> None:
    """No minds-model-keys binding here: the controller cannot read the Secret at all."""
    cluster.kubectl("apply", "-f", "-", input_=secret("llm", namespace, "api-key", MODEL_KEY,
                                                      model_key=True))  # fmt: skip
    llm.play(Reply.completion(PROPOSAL))
    proposal = propose(cluster, namespace, endpoints(llm), mind_spec("team-llm", "llm", "api-key"))
    assert proposal is None
    assert llm.requests == []


def mind_manifest(namespace: str, model: dict[str, object]) -> str:
    return yaml.safe_dump(
        {
            "apiVersion": "minds.dev/v1alpha1",
            "kind": "Mind",
            "metadata": {"name": "keeper", "namespace": namespace},
            "spec": {"active": False, "model": model},
        }
    )


@pytest.mark.parametrize(
    ("model", "field"),
    [
        ({"endpoint": "http://127.0.0.1:9/v1", "model": "m"}, "spec.model.endpoint"),
        (
            {
                "endpoint": "team-llm",
                "model": "m",
                "apiKeySecretRef": {"name": "db", "key": "password", "namespace": "kube-system"},
            },
            "namespace",
        ),
    ],
)
def test_the_api_server_refuses_a_url_or_a_key_in_another_namespace(
    cluster: Cluster, namespace: str, model: dict[str, object], field: str
) -> None:
    refused = cluster.kubectl(
        "apply", "-f", "-", input_=mind_manifest(namespace, model), check=False
    )
    assert refused.returncode != 0
    assert field in refused.stderr


@pytest.mark.usefixtures("session_controller")
def test_a_mind_naming_an_unconfigured_endpoint_is_not_ready_and_says_why(
    cluster: Cluster, namespace: str
) -> None:
    """The test controller is configured with no endpoint at all."""
    name = f"m-{uuid.uuid4().hex[:6]}"
    manifest = mind_manifest(namespace, {"endpoint": "team-llm", "model": "m"})
    cluster.kubectl("apply", "-f", "-", input_=manifest.replace("name: keeper", f"name: {name}"))

    def ready() -> dict[str, str] | None:
        obj = cluster.api.get("mind", name, namespace)
        conditions = (obj.get("status") or {}).get("conditions") or []
        return next((c for c in conditions if c["type"] == "Ready"), None)

    condition = eventually(ready, timeout=60, what="a Ready condition")
    assert condition["status"] == "False"
    assert condition["reason"] == "InvalidSpec"
    assert "spec.model.endpoint" in condition["message"]
    assert "'team-llm' is not a model endpoint" in condition["message"]


DOC = REPO / "docs" / "models.md"
_YAML = re.compile(r"^```yaml\n(.*?)^```", re.MULTILINE | re.DOTALL)


def test_the_docs_configuration_and_mind_are_valid() -> None:
    configuration, mind = (yaml.safe_load(block) for block in _YAML.findall(DOC.read_text()))
    names = ModelEndpoints.model_validate(configuration).names()
    spec = MindSpec.model_validate(mind["spec"])
    assert spec.model is not None
    assert spec.model.endpoint in names


def test_every_command_in_the_models_doc_makes_a_key_the_controller_sends(
    cluster: Cluster, namespace: str, llm: ScriptedLLM
) -> None:
    for command in sh_commands(DOC):
        argv = shlex.split(command.replace("<namespace>", namespace))
        assert argv[0] == "kubectl", command
        cluster.kubectl(*argv[1:])
    llm.play(Reply.completion(PROPOSAL))
    spec = mind_spec("team-llm", "team-llm-key", "api-key")
    assert propose(cluster, namespace, endpoints(llm), spec) is not None
    assert bearer_tokens(llm) == ["Bearer sk-example"]


# --- who may mark a Secret as a model key -----------------------------------------------------


@pytest.fixture
def patcher(cluster: Cluster, namespace: str) -> str:
    """A user who may create and patch Secrets in the namespace but not read them."""
    role = {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "Role",
        "metadata": {"name": "secret-writer", "namespace": namespace},
        "rules": [
            {"apiGroups": [""], "resources": ["secrets"], "verbs": ["create", "patch", "update"]}
        ],
    }
    cluster.kubectl("apply", "-f", "-", input_=yaml.safe_dump(role))
    cluster.kubectl(
        "create", "rolebinding", "secret-writer", "-n", namespace, "--role=secret-writer",
        "--user=mallory",
    )  # fmt: skip
    return "mallory"


def as_user(cluster: Cluster, user: str) -> CoreV1Api:
    """The API as `user`, through the admin's right to impersonate: unlike kubectl's patch, a
    client patch does not read the object first, so only admission stands in the way."""
    api = api_client(str(cluster.kubeconfig))
    api.set_default_header("Impersonate-User", user)
    return CoreV1Api(api)


def refusal(call: Callable[..., object], *args: object) -> str:
    with pytest.raises(ApiException) as raised:
        call(*args)
    assert raised.value.status == 403
    return str(raised.value.body)


def labels_of(cluster: Cluster, namespace: str, name: str) -> str:
    return cluster.kubectl(
        "get", "secret", name, "-n", namespace, "-o", "jsonpath={.metadata.labels}"
    ).stdout


def test_someone_who_cannot_read_a_secret_cannot_mark_it_as_a_model_key(
    cluster: Cluster, namespace: str, patcher: str
) -> None:
    cluster.kubectl("apply", "-f", "-", input_=secret("db", namespace, "password", DB_PASSWORD,
                                                      model_key=False))  # fmt: skip
    mallory = as_user(cluster, patcher)
    labelled = {"metadata": {"labels": {"minds.dev/model-key": "true"}}}
    patched = refusal(mallory.patch_namespaced_secret, "db", namespace, labelled)
    assert "only someone who may read Secret" in patched
    assert f"{patcher} may not get it" in patched
    fresh = {
        "metadata": {"name": "fresh", "labels": {"minds.dev/model-key": "true"}},
        "stringData": {"key": "x"},
    }
    assert "may not get it" in refusal(mallory.create_namespaced_secret, namespace, fresh)
    # The same user may still write Secrets that are not model keys: the policy is that narrow.
    mallory.patch_namespaced_secret("db", namespace, {"metadata": {"labels": {"team": "atlas"}}})
    labels = labels_of(cluster, namespace, "db")
    assert "atlas" in labels
    assert "minds.dev/model-key" not in labels


def test_someone_who_can_read_a_secret_may_mark_it(cluster: Cluster, namespace: str) -> None:
    cluster.kubectl("apply", "-f", "-", input_=secret("llm", namespace, "api-key", MODEL_KEY,
                                                      model_key=False))  # fmt: skip
    cluster.kubectl("label", "secret", "llm", "-n", namespace, "minds.dev/model-key=true")
    assert "minds.dev/model-key" in labels_of(cluster, namespace, "llm")

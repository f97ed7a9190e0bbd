"""The chart's ledger values, as `helm template` renders them: the sealing keys' Secret is
mounted into the controller alone, read-only, and named to it; the chart creates a Secret
only when asked, and keeps it; each controller gets a checkpoint ConfigMap of its own, which
a Role lets it get and update by name and nothing else; without a key nothing of this is
rendered (the controller runs unsealed and says so)."""

from __future__ import annotations

import base64
from typing import Any

import pytest

from tests.fixtures.helm import Helm, find

MOUNT = "/var/run/minds/ledger-keys"
NO_KEYS = {"ledger.keys.existingSecret": "", "ledger.keys.create": False}


def _controllers(objects: list[Any]) -> dict[str, Any]:
    return {
        o["metadata"]["name"]: o["spec"]["template"]["spec"]
        for o in objects
        if o["kind"] == "Deployment"
    }


def _env(pod: dict[str, Any]) -> dict[str, Any]:
    [container] = pod["containers"]
    return {e["name"]: e.get("value", e.get("valueFrom")) for e in container["env"]}


def test_an_existing_secret_is_mounted_into_the_controller_only(helm: Helm) -> None:
    objects = helm.objects({"ledger.keys.existingSecret": "ops-ledger-keys"})
    [pod] = _controllers(objects).values()
    assert {
        "name": "ledger-keys",
        "secret": {"secretName": "ops-ledger-keys", "defaultMode": 288},
    } in pod["volumes"]
    [container] = pod["containers"]
    assert {"name": "ledger-keys", "mountPath": MOUNT, "readOnly": True} in container[
        "volumeMounts"
    ]
    env = _env(pod)
    assert env["MINDS_LEDGER_KEYS_DIR"] == MOUNT
    assert env["MINDS_LEDGER_ACTIVE_KEY"] == "k2"  # the lint values name it
    assert env["MINDS_LEDGER_CHECKPOINT_CONFIGMAP"] == "minds-ledger-checkpoint"
    assert env["MINDS_LEDGER_CHECKPOINT_SECONDS"] == "120"
    assert env["MINDS_CONTROLLER_NAMESPACE"] == {"fieldRef": {"fieldPath": "metadata.namespace"}}
    job = find(objects, "Job", "minds-db-upgrade")
    assert "ledger-keys" not in str(job)  # the owner's migrations never see the key
    assert not [o for o in objects if o["kind"] == "Secret"]  # the chart creates none


def test_the_controller_may_update_its_checkpoint_configmap_and_nothing_else(helm: Helm) -> None:
    objects = helm.objects()
    configmap = find(objects, "ConfigMap", "minds-ledger-checkpoint", "minds-system")
    assert "data" not in configmap  # an upgrade leaves what the controller wrote
    role = find(objects, "Role", "minds-ledger-checkpoint", "minds-system")
    assert role["rules"] == [
        {
            "apiGroups": [""],
            "resources": ["configmaps"],
            "resourceNames": ["minds-ledger-checkpoint"],
            "verbs": ["get", "update", "patch"],
        }
    ]
    binding = find(objects, "RoleBinding", "minds-ledger-checkpoint", "minds-system")
    assert binding["roleRef"] == {
        "apiGroup": "rbac.authorization.k8s.io",
        "kind": "Role",
        "name": "minds-ledger-checkpoint",
    }
    assert binding["subjects"] == [
        {"kind": "ServiceAccount", "name": "minds-controller", "namespace": "minds-system"}
    ]


def test_each_shard_keeps_a_checkpoint_of_its_own(helm: Helm) -> None:
    shards = [{"name": "team-a", "namespaces": ["a"]}, {"name": "team-b", "namespaces": ["b"]}]
    objects = helm.objects({"shards": shards})
    names = ["minds-ledger-checkpoint-team-a", "minds-ledger-checkpoint-team-b"]
    for name in names:
        find(objects, "ConfigMap", name, "minds-system")
    role = find(objects, "Role", "minds-ledger-checkpoint", "minds-system")
    assert role["rules"][0]["resourceNames"] == names
    by_deployment = {
        name: _env(pod)["MINDS_LEDGER_CHECKPOINT_CONFIGMAP"]
        for name, pod in _controllers(objects).items()
    }
    assert by_deployment == {
        "minds-controller-team-a": "minds-ledger-checkpoint-team-a",
        "minds-controller-team-b": "minds-ledger-checkpoint-team-b",
    }


def test_the_chart_creates_a_kept_secret_only_when_asked(helm: Helm) -> None:
    objects = helm.objects({**NO_KEYS, "ledger.keys.create": True, "ledger.keys.activeKey": ""})
    secret = find(objects, "Secret", "minds-ledger-keys", "minds-system")
    assert secret["metadata"]["annotations"] == {"helm.sh/resource-policy": "keep"}
    [(key_id, value)] = secret["data"].items()
    assert key_id == "k1"
    # The entry holds base64 of 32 random bytes, which the controller decodes.
    assert len(base64.b64decode(base64.b64decode(value))) == 32
    [pod] = _controllers(objects).values()
    assert {
        "name": "ledger-keys",
        "secret": {"secretName": "minds-ledger-keys", "defaultMode": 288},
    } in pod["volumes"]
    assert "MINDS_LEDGER_ACTIVE_KEY" not in _env(pod)


def test_without_a_key_nothing_is_mounted_and_no_checkpoint_is_kept(helm: Helm) -> None:
    objects = helm.objects(NO_KEYS)
    [pod] = _controllers(objects).values()
    assert not [v for v in pod["volumes"] if v["name"] == "ledger-keys"]
    assert not [name for name in _env(pod) if name.startswith("MINDS_LEDGER_")]
    assert not [o for o in objects if "ledger-checkpoint" in o["metadata"]["name"]]


@pytest.mark.parametrize(
    "env", ["MINDS_LEDGER_KEYS_DIR", "MINDS_LEDGER_ACTIVE_KEY", "MINDS_CONTROLLER_NAMESPACE"]
)
def test_extra_env_cannot_override_the_ledger_settings(helm: Helm, env: str) -> None:
    proc = helm.template({"controller.extraEnv": [{"name": env, "value": "x"}]}, check=False)
    assert proc.returncode != 0
    assert f"controller.extraEnv: {env} is set by the chart" in proc.stderr


def test_an_extra_volume_cannot_take_the_keys_name(helm: Helm) -> None:
    volume = {"name": "ledger-keys", "emptyDir": {}}
    proc = helm.template({"controller.extraVolumes": [volume]}, check=False)
    assert proc.returncode != 0
    assert "ledger-keys is the name of a volume of the chart's own" in proc.stderr

"""The chart on a platform that assigns the user, as OpenShift's restricted-v2 does: installed
with real helm, with docs/install.md's values that leave runAsUser, runAsGroup and fsGroup
unset, into a namespace whose API server enforces the restricted Pod Security Standard. The
controller's Pod and the migration Job's are admitted there, with no user named and
runAsNonRoot kept; without runAsNonRoot the same Pod is refused, so it is runAsNonRoot, not a
fixed user, that makes it pass.

A control plane of its own (``fresh_control_plane``): the session's has the chart's
cluster-scoped objects from kubectl, which Helm would refuse to take over. It has no kubelet,
so the install passes ``--no-hooks`` and the test creates the Pods the Deployment and the Job
would create, from the templates as the API server stored them (the Deployment's) or as helm
renders them (the hook Job's, which helm would create).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml

from minds.devenv.kubectl import kubectl, kubectl_json
from tests.fixtures.docs import yaml_blocks
from tests.fixtures.helm import CHART, Helm, fresh_control_plane

REPO = CHART.parent.parent
RELEASE = "minds"
NAMESPACE = "minds-assigned"
UNSET = ("runAsUser", "runAsGroup", "fsGroup")


@dataclass(frozen=True)
class Installed:
    kubeconfig: Path
    values: Path

    def kubectl(self, *args: str, check: bool = True, input_: str | None = None) -> Any:
        return kubectl(self.kubeconfig, *args, check=check, input_=input_)


def _assigned_user_values() -> dict[str, Any]:
    blocks = yaml_blocks(REPO / "docs" / "install.md", "Fitting the Pods to the cluster")
    [values] = [b for b in blocks if "podSecurityContext" in b["controller"]]
    return dict(values)


@pytest.fixture(scope="module")
def installed(helm: Helm, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Installed]:
    state = tmp_path_factory.mktemp("assigned-user")
    with fresh_control_plane(state) as kube:
        kubectl(kube, "create", "namespace", NAMESPACE)
        kubectl(
            kube, "label", "namespace", NAMESPACE, "pod-security.kubernetes.io/enforce=restricted"
        )
        values = state / "values.yaml"
        values.write_text(
            yaml.safe_dump(
                {
                    **_assigned_user_values(),
                    "database": {
                        "url": {"secretName": "minds-ledger-app", "key": "url"},
                        "ownerUrl": {"secretName": "minds-ledger-owner", "key": "url"},
                    },
                }
            )
        )
        helm.run(
            "install", RELEASE, str(CHART), "-n", NAMESPACE, "-f", str(values), "--no-hooks",
            kubeconfig=kube,
        )  # fmt: skip
        yield Installed(kube, values)


def _pod(template: dict[str, Any], name: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": NAMESPACE, **template["metadata"]},
        "spec": template["spec"],
    }


def _templates(helm: Helm, installed: Installed) -> dict[str, dict[str, Any]]:
    """The controller's Pod template as the API server holds it, and the hook Job's as helm
    renders it for this release."""
    deployment = kubectl_json(
        installed.kubeconfig, "get", "deployment", f"{RELEASE}-controller", "-n", NAMESPACE,
        "-o", "json",
    )  # fmt: skip
    job = yaml.safe_load(
        helm.run(
            "template", RELEASE, str(CHART), "-n", NAMESPACE, "-f", str(installed.values),
            "--show-only", "templates/migrations-job.yaml",
        ).stdout
    )  # fmt: skip
    return {"controller": deployment["spec"]["template"], "db-upgrade": job["spec"]["template"]}


def test_the_pods_are_admitted_with_no_user_named_and_still_non_root(
    helm: Helm, installed: Installed
) -> None:
    # The hook Job's Pod runs as the namespace's default ServiceAccount; this control plane has
    # no controller creating it, so the test does, as any real cluster has it.
    installed.kubectl("create", "serviceaccount", "default", "-n", NAMESPACE, check=False)
    for name, template in _templates(helm, installed).items():
        spec = template["spec"]
        assert not set(UNSET) & set(spec["securityContext"]), name
        created = installed.kubectl(
            "create", "-f", "-", "-o", "json", input_=json.dumps(_pod(template, name))
        )
        stored = json.loads(created.stdout)["spec"]
        # Admitted, and as sent: the API server assigned no user either.
        assert not set(UNSET) & set(stored["securityContext"]), name
        assert stored["securityContext"]["runAsNonRoot"] is True, name
        for container in stored["containers"]:
            context = container["securityContext"]
            assert not set(UNSET) & set(context), name
            assert context["runAsNonRoot"] is True, name
            assert context["allowPrivilegeEscalation"] is False, name
            assert context["capabilities"] == {"drop": ["ALL"]}, name


def test_without_run_as_non_root_the_same_pod_is_refused(helm: Helm, installed: Installed) -> None:
    """The namespace does enforce the standard: with no user named, runAsNonRoot is what
    makes the Pod pass."""
    template = _templates(helm, installed)["controller"]
    del template["spec"]["securityContext"]["runAsNonRoot"]
    for container in template["spec"]["containers"]:
        del container["securityContext"]["runAsNonRoot"]
    refused = installed.kubectl(
        "create", "--dry-run=server", "-f", "-",
        input_=json.dumps(_pod(template, "root-allowed")), check=False,
    )  # fmt: skip
    assert refused.returncode != 0
    assert "violates PodSecurity" in refused.stderr
    assert "runAsNonRoot" in refused.stderr

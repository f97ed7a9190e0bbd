"""The chart installed with real helm into a local control plane of its own: every object is
there, the controller's ServiceAccount has exactly the documented rights, the pod templates
pass the restricted Pod Security Standard as the API server enforces it, the controller runs
under the chart's ServiceAccount token to a Mind's Ready, and upgrade and uninstall keep the
CRDs and the ledger.

A control plane of its own, not the session's (see ``fresh_control_plane``): what a platform
team does on a fresh cluster.

The control plane has no kubelet and no controllers: nothing runs the Deployment or the hook
Job, so the install passes ``--no-hooks`` and the test runs the hook's command itself, with the
environment the Job gives it.
"""

from __future__ import annotations

import base64
import json
import os
import re
import shlex
import subprocess
import sys
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml

from minds.adapters.ledger import Ledger
from minds.devenv.controller import start_controller, stop_controller
from minds.devenv.install import repo_root, service_account_kubeconfig
from minds.devenv.kubectl import kubectl, kubectl_json
from tests.fixtures.docs import can_i_rows
from tests.fixtures.helm import CHART, Helm, fresh_control_plane
from tests.fixtures.postgres import LedgerDatabase
from tests.fixtures.waiting import eventually

REPO = repo_root()
RELEASE = "minds"
NAMESPACE = "minds-system"
ACCOUNT = "minds-controller"
USERNAME = f"system:serviceaccount:{NAMESPACE}:{ACCOUNT}"
SECURITY_DOC = REPO / "docs" / "security.md"
_TEXT = re.compile(r"^```text\n(.*?)^```", re.MULTILINE | re.DOTALL)


@dataclass(frozen=True)
class Release:
    kubeconfig: Path
    team: str
    keys: str
    database_url: str
    values: Path
    install_output: str

    def kubectl(self, *args: str, check: bool = True, input_: str | None = None) -> Any:
        return kubectl(self.kubeconfig, *args, check=check, input_=input_)


@pytest.fixture(scope="module")
def chart_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    with fresh_control_plane(tmp_path_factory.mktemp("chart-cluster")) as kubeconfig:
        yield kubeconfig


def _secret(name: str, url: str) -> str:
    return json.dumps(
        {
            "apiVersion": "v1",
            "kind": "Secret",
            "metadata": {"name": name, "namespace": NAMESPACE},
            "stringData": {"url": url},
        }
    )


@pytest.fixture(scope="module")
def release(
    chart_cluster: Path,
    helm: Helm,
    e2e_ledger_database: LedgerDatabase,
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[Release]:
    kube = chart_cluster
    team, keys = f"team-{uuid.uuid4().hex[:6]}", f"keys-{uuid.uuid4().hex[:6]}"
    for ns in (NAMESPACE, team, keys):
        kubectl(kube, "create", "namespace", ns)
    # The API server itself refuses, in this namespace, any Pod that breaks the restricted
    # Pod Security Standard: the chart's pods must pass it.
    kubectl(kube, "label", "namespace", NAMESPACE, "pod-security.kubernetes.io/enforce=restricted")
    # The ledger's two connections, as existing Secrets: the controller's application role and
    # the owner role the migrations run as.
    ledger = e2e_ledger_database
    for name, url in (
        ("minds-ledger-app", ledger.app_url),
        ("minds-ledger-owner", ledger.owner_url),
    ):
        kubectl(kube, "apply", "-f", "-", input_=_secret(name, url))
    values = tmp_path_factory.mktemp("chart") / "values.yaml"
    values.write_text(
        yaml.safe_dump(
            {
                "database": {
                    "url": {"secretName": "minds-ledger-app", "key": "url"},
                    "ownerUrl": {"secretName": "minds-ledger-owner", "key": "url"},
                },
                "managedNamespaces": [team],
                "modelKeyNamespaces": [keys],
                "modelEndpoints": [{"name": "team-llm", "url": "https://llm.example.com/v1"}],
                "podDisruptionBudget": {"enabled": True},
                "networkPolicy": {"enabled": True},
                # Asked for, but this cluster has no Prometheus Operator CRDs: skipped, as
                # told, without a word (test_asked_for_without_the_crds_the_install_fails
                # shows the default).
                "metrics": {
                    "ifCrdsMissing": "skip",
                    "serviceMonitor": {"enabled": True},
                    "prometheusRule": {"enabled": True},
                },
            }
        )
    )
    install = helm.run(
        "install", RELEASE, str(CHART), "-n", NAMESPACE, "-f", str(values), "--no-hooks",
        kubeconfig=kube,
    )  # fmt: skip
    yield Release(kube, team, keys, ledger.app_url, values, install.stdout)
    helm.run("uninstall", RELEASE, "-n", NAMESPACE, kubeconfig=kube, check=False)


def _manifest(helm: Helm, release: Release, *extra: str) -> list[dict[str, Any]]:
    out = helm.run(
        "get", "manifest", RELEASE, "-n", NAMESPACE, *extra, kubeconfig=release.kubeconfig
    )
    return [d for d in yaml.safe_load_all(out.stdout) if d]


def _exists(release: Release, obj: dict[str, Any]) -> bool:
    ns = obj["metadata"].get("namespace")
    args = ["get", f"{obj['kind']}.{obj['apiVersion'].split('/')[0]}"
            if "/" in obj["apiVersion"] else obj["kind"], obj["metadata"]["name"]]  # fmt: skip
    if ns:
        args += ["-n", ns]
    return release.kubectl(*args, check=False).returncode == 0


def test_install_creates_every_object_and_says_what_to_do_next(
    helm: Helm, release: Release
) -> None:
    objects = _manifest(helm, release)
    kinds = {o["kind"] for o in objects}
    assert {
        "ServiceAccount", "ClusterRole", "ClusterRoleBinding", "RoleBinding", "Deployment",
        "ValidatingAdmissionPolicy", "ValidatingAdmissionPolicyBinding", "ConfigMap", "Service",
        "PodDisruptionBudget", "NetworkPolicy",
    } <= kinds  # fmt: skip
    assert not {"ServiceMonitor", "PrometheusRule"} & kinds
    missing = [f"{o['kind']}/{o['metadata']['name']}" for o in objects if not _exists(release, o)]
    assert missing == []
    for crd in (CHART / "templates" / "crds").glob("*.yaml"):
        assert release.kubectl("get", "crd", crd.name.removesuffix(".yaml")).returncode == 0
    notes = release.install_output
    assert "No namespace is managed yet" not in notes
    steps = _next_steps(notes)
    assert steps[0] == "kubectl apply -n TEAM -f examples/mind.yaml"
    assert steps[1] == "kubectl get minds -n TEAM --watch"
    assert steps[2].startswith("kubectl patch approval NAME -n TEAM --type=merge")


def test_asked_for_without_the_crds_the_install_fails(helm: Helm, release: Release) -> None:
    """What the API server serves is what helm asks it (discovery), not what a flag says: the
    default refuses to install monitoring objects this cluster cannot hold, and installs
    nothing."""
    proc = helm.run(
        "install", "minds-refused", str(CHART), "-n", NAMESPACE, "-f", str(release.values),
        "--set", "metrics.ifCrdsMissing=fail", "--no-hooks",
        kubeconfig=release.kubeconfig, check=False,
    )  # fmt: skip
    assert proc.returncode != 0
    assert (
        "metrics.serviceMonitor.enabled: this cluster does not serve "
        "monitoring.coreos.com/v1/ServiceMonitor"
    ) in proc.stderr
    status = helm.run(
        "status", "minds-refused", "-n", NAMESPACE, kubeconfig=release.kubeconfig, check=False
    )
    assert status.returncode != 0


def _next_steps(notes: str) -> list[str]:
    """The commands NOTES.txt tells a user to type next, in order."""
    return re.findall(r"^ {2}(?:\d\. [^:]+:)? +(kubectl .+)$", notes, re.MULTILINE)


def test_the_service_account_has_exactly_the_documented_rights(release: Release) -> None:
    """The pinned lists are the ones docs/security.md shows: in a managed namespace, and in
    one nobody handed over; a model-keys namespace adds reading Secrets (get only)."""
    managed, elsewhere = (can_i_rows(b) for b in _TEXT.findall(SECURITY_DOC.read_text())[:2])

    def rights(namespace: str) -> set[tuple[str, str]]:
        out = release.kubectl("auth", "can-i", "--list", f"--as={USERNAME}", "-n", namespace)
        return can_i_rows(out.stdout)

    assert rights(release.team) == managed
    assert rights("kube-system") == elsewhere
    assert rights(release.keys) == elsewhere | {("secrets", "[get]")}


def _pod_from(template: dict[str, Any], name: str) -> str:
    return json.dumps(
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": name, "namespace": NAMESPACE, **template["metadata"]},
            "spec": template["spec"],
        }
    )


def test_the_pod_templates_pass_the_restricted_standard(helm: Helm, release: Release) -> None:
    deployment = kubectl_json(
        release.kubeconfig,
        "get",
        "deployment",
        f"{RELEASE}-controller",
        "-n",
        NAMESPACE,
        "-o",
        "json",
    )
    template = deployment["spec"]["template"]
    release.kubectl("create", "--dry-run=server", "-f", "-", input_=_pod_from(template, "probe"))
    # The hook Job's pod too (rendered, as helm would create it). It runs as the namespace's
    # default ServiceAccount with no token; this control plane has no controller creating
    # default ServiceAccounts, so the test creates it as any real cluster has it.
    release.kubectl("create", "serviceaccount", "default", "-n", NAMESPACE, check=False)
    job = next(
        d
        for d in yaml.safe_load_all(
            helm.run(
                "template", RELEASE, str(CHART), "-n", NAMESPACE, "-f", str(release.values),
                "--show-only", "templates/migrations-job.yaml",
            ).stdout
        )
        if d
    )  # fmt: skip
    release.kubectl(
        "create", "--dry-run=server", "-f", "-",
        input_=_pod_from(job["spec"]["template"], "hook-probe"),
    )  # fmt: skip
    # The namespace does enforce it: the same pod without its security context is refused.
    del template["spec"]["securityContext"]
    for container in template["spec"]["containers"]:
        del container["securityContext"]
    refused = release.kubectl(
        "create", "--dry-run=server", "-f", "-", input_=_pod_from(template, "bad"), check=False
    )
    assert refused.returncode != 0
    assert "violates PodSecurity" in refused.stderr


def test_the_hook_command_migrates_with_the_jobs_environment(helm: Helm, release: Release) -> None:
    rendered = helm.run(
        "template", RELEASE, str(CHART), "-n", NAMESPACE, "-f", str(release.values),
        "--show-only", "templates/migrations-job.yaml",
    ).stdout  # fmt: skip
    container = yaml.safe_load(rendered)["spec"]["template"]["spec"]["containers"][0]
    env = {**os.environ}
    for var in container["env"]:
        ref = var["valueFrom"]["secretKeyRef"]
        secret = kubectl_json(
            release.kubeconfig, "get", "secret", ref["name"], "-n", NAMESPACE, "-o", "json"
        )
        env[var["name"]] = base64.b64decode(secret["data"][ref["key"]]).decode()
    proc = subprocess.run(
        [sys.executable, "-m", "minds.cli.main", *container["args"]],
        env=env, capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr


def test_a_mind_gets_ready_then_upgrade_and_uninstall_keep_crds_minds_and_ledger(
    helm: Helm, release: Release, tmp_path: Path
) -> None:
    """The controller under the chart's ServiceAccount token (as the Deployment would run
    it), then the release's upgrade and removal. Runs last in this module: it removes the
    release the tests above share."""
    token_config = service_account_kubeconfig(
        release.kubeconfig, tmp_path / "sa.kubeconfig", namespace=NAMESPACE, account=ACCOUNT
    )
    handle = start_controller(
        kubeconfig=token_config, database_url=release.database_url, state_dir=tmp_path
    )
    try:
        handle.wait_ready()
        apply, watch, _approve = (
            shlex.split(step.replace("TEAM", release.team))[1:]
            for step in _next_steps(release.install_output)
        )
        subprocess.run(
            ["kubectl", "--kubeconfig", str(release.kubeconfig), *apply], cwd=REPO, check=True
        )

        def ready() -> bool:
            mind = kubectl_json(
                release.kubeconfig, "get", "mind", "atlas-keeper", "-n", release.team, "-o", "json"
            )
            return any(
                c["type"] == "Ready" and c["status"] == "True"
                for c in mind.get("status", {}).get("conditions", [])
            )

        eventually(ready, timeout=60, what="the Mind is Ready under the chart's ServiceAccount")
        # The watch NOTES.txt suggests shows the Mind (and would go on until interrupted).
        with pytest.raises(subprocess.TimeoutExpired) as watching:
            subprocess.run(
                ["kubectl", "--kubeconfig", str(release.kubeconfig), *watch],
                capture_output=True, text=True, timeout=5, check=False,
            )  # fmt: skip
        shown = watching.value.stdout or b""
        assert "atlas-keeper" in (shown.decode() if isinstance(shown, bytes) else shown)
    finally:
        stop_controller(handle)

    other = f"team-{uuid.uuid4().hex[:6]}"
    release.kubectl("create", "namespace", other)
    helm.run(
        "upgrade", RELEASE, str(CHART), "-n", NAMESPACE, "-f", str(release.values), "--no-hooks",
        "--set-json", f"managedNamespaces={json.dumps([release.team, other])}",
        kubeconfig=release.kubeconfig,
    )  # fmt: skip
    assert release.kubectl("get", "rolebinding", "minds-workloads", "-n", other).returncode == 0
    status = json.loads(
        helm.run(
            "status", RELEASE, "-n", NAMESPACE, "-o", "json", kubeconfig=release.kubeconfig
        ).stdout
    )
    assert status["version"] == 2

    with Ledger.from_url(release.database_url) as ledger:
        before = len(ledger.events(namespace=release.team))
    objects = _manifest(helm, release)
    helm.run("uninstall", RELEASE, "-n", NAMESPACE, kubeconfig=release.kubeconfig)
    left = [f"{o['kind']}/{o['metadata']['name']}" for o in objects if _exists(release, o)]
    # Only the CRDs stay, by their keep policy: removing one would remove every Mind with it.
    crds = sorted(p.stem for p in (CHART / "templates" / "crds").glob("*.yaml"))
    assert crds
    assert sorted(left) == [f"CustomResourceDefinition/{name}" for name in crds]
    assert release.kubectl("get", "mind", "atlas-keeper", "-n", release.team).returncode == 0
    with Ledger.from_url(release.database_url) as ledger:
        assert len(ledger.events(namespace=release.team)) == before > 0

"""The chart installed for real on the real node: the image imported into the node's
containerd (no registry), `helm install` with its hooks (the migrations Job runs `minds db
upgrade` in a Pod), Postgres reached from the pod network, and the controller Pod Ready through
its probes, as uid 10001 on a read-only root, under the chart's ServiceAccount token.

The commands are docs/install.md's, with the values this node needs: the image as imported,
`imagePullPolicy: Never`, and the toleration and node selector of the real node.
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import subprocess
import tempfile
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml

from minds.adapters.ledger import Ledger
from minds.devenv.install import repo_root
from minds.devenv.postgres import start_postgres, stop_postgres
from tests.e2e.executor_support import executions_by_step
from tests.e2e.test_chart_assigned_user import _assigned_user_values
from tests.e2e.test_chart_install import _next_steps, _secret
from tests.fixtures.docs import run_documented, sh_commands
from tests.fixtures.helm import CHART, Helm
from tests.fixtures.postgres import LedgerDatabase, PostgresServer, _create_database
from tests.fixtures.prometheus import JOB, running_prometheus
from tests.fixtures.waiting import eventually
from tests.image.test_image import image, wheelhouse  # noqa: F401  (as make image-test builds it)
from tests.node.conftest import (
    BRIDGE_IP,
    NODE_NAME,
    ON_REAL_NODE,
    POD_CIDR,
    TOLERATION,
    Node,
    import_image,
)

RELEASE = "minds"
NAMESPACE = "minds-system"
ACCOUNT = "minds-controller"
SELECTOR = "app.kubernetes.io/component=controller"
INSTALL_DOC = repo_root() / "docs" / "install.md"


@pytest.fixture(scope="module")
def minds_image(request: pytest.FixtureRequest) -> str:
    """The image as `make image-test` builds it (tests/image), or MINDS_NODE_IMAGE's."""
    return os.environ.get("MINDS_NODE_IMAGE") or request.getfixturevalue("image")


@pytest.fixture(scope="module")
def bridge_postgres(node: Node) -> Iterator[PostgresServer]:
    """A Postgres of its own that listens on the bridge alone and lets in the pod network."""
    data_dir = Path(tempfile.mkdtemp(prefix="minds-node-pg-"))
    try:
        handle = start_postgres(data_dir, host=BRIDGE_IP, clients=POD_CIDR)
        yield PostgresServer(
            admin_url=handle.url, owner_url=handle.owner_url, app_url=handle.app_url
        )
    finally:
        stop_postgres(data_dir)
        shutil.rmtree(data_dir, ignore_errors=True)


@dataclass(frozen=True)
class Release:
    node: Node
    helm: Helm
    team: str
    database: LedgerDatabase
    values: Path
    image: str
    install_output: str

    def kubectl(self, *args: str, check: bool = True, input_: str | None = None) -> Any:
        return self.node.kubectl(*args, check=check, input_=input_)

    def helm_run(self, *args: str) -> Any:
        return self.helm.run(*args, kubeconfig=self.node.kubeconfig)

    def controller_pods(self) -> list[dict[str, Any]]:
        out = self.kubectl("get", "pods", "-n", NAMESPACE, "-l", SELECTOR, "-o", "json").stdout
        return [p for p in json.loads(out)["items"] if not p["metadata"].get("deletionTimestamp")]

    def ready_pod(self) -> str:
        def ready() -> str:
            for pod in self.controller_pods():
                conditions = pod["status"].get("conditions", [])
                if any(c["type"] == "Ready" and c["status"] == "True" for c in conditions):
                    return str(pod["metadata"]["name"])
            return ""

        return eventually(ready, timeout=180, interval=1, what="the controller Pod Ready")


@pytest.fixture(scope="module")
def release(
    node: Node,
    helm: Helm,
    minds_image: str,
    bridge_postgres: PostgresServer,
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[Release]:
    work = tmp_path_factory.mktemp("chart")
    import_image(minds_image, work)
    name = f"minds_node_{uuid.uuid4().hex[:8]}"
    _create_database(bridge_postgres.admin_url, name)  # empty: the hook migrates it
    database = bridge_postgres.database(name)
    team = f"team-{uuid.uuid4().hex[:6]}"
    for ns in (NAMESPACE, team):
        node.kubectl("create", "namespace", ns)
    node.kubectl("label", "namespace", NAMESPACE, "pod-security.kubernetes.io/enforce=restricted")
    for secret, url in (
        ("minds-ledger-app", database.app_url),
        ("minds-ledger-owner", database.owner_url),
    ):
        node.kubectl("apply", "-f", "-", input_=_secret(secret, url))
    repository, tag = minds_image.rsplit(":", 1)
    values = work / "values.yaml"
    values.write_text(
        yaml.safe_dump(
            {
                "image": {"repository": repository, "tag": tag, "pullPolicy": "Never"},
                "database": {
                    "url": {"secretName": "minds-ledger-app", "key": "url"},
                    "ownerUrl": {"secretName": "minds-ledger-owner", "key": "url"},
                },
                "managedNamespaces": [team],
                "controller": {"tolerations": [TOLERATION], "nodeSelector": ON_REAL_NODE},
            }
        )
    )
    install = helm.run(
        "install", RELEASE, str(CHART), "-n", NAMESPACE, "-f", str(values), "--timeout", "5m",
        kubeconfig=node.kubeconfig,
    )  # fmt: skip
    yield Release(node, helm, team, database, values, minds_image, install.stdout)
    helm.run("uninstall", RELEASE, "-n", NAMESPACE, kubeconfig=node.kubeconfig, check=False)


def test_the_controller_pod_becomes_ready_on_the_real_node(release: Release) -> None:
    pod = release.ready_pod()
    body = json.loads(release.kubectl("get", "pod", pod, "-n", NAMESPACE, "-o", "json").stdout)
    assert body["spec"]["nodeName"] == NODE_NAME
    assert body["spec"]["serviceAccountName"] == ACCOUNT
    container = body["spec"]["containers"][0]
    # Ready through its probes: the kubelet got an answer on /healthz from the Pod's address.
    assert container["startupProbe"]["httpGet"]["path"] == "/healthz"
    assert container["livenessProbe"]["httpGet"]["path"] == "/healthz"
    assert body["status"]["containerStatuses"][0]["started"] is True
    assert body["status"]["containerStatuses"][0]["restartCount"] == 0


def test_the_controller_runs_as_10001_on_a_read_only_root_as_its_service_account(
    release: Release,
) -> None:
    pod = release.ready_pod()

    def in_pod(*argv: str) -> Any:
        return release.kubectl("exec", "-n", NAMESPACE, pod, "--", *argv, check=False)

    ids = in_pod("python", "-c", "import os; print(os.getuid(), os.getgid())")
    assert ids.stdout.split()[0] == "10001", ids
    written = in_pod("python", "-c", "open('/probe', 'w')")
    assert written.returncode != 0
    assert "Read-only file system" in written.stderr
    status = in_pod("python", "-c", "print(open('/proc/self/status').read())").stdout
    cap_eff = next(line.split()[1] for line in status.splitlines() if line.startswith("CapEff"))
    assert int(cap_eff, 16) == 0, status
    assert (
        next(line.split()[1] for line in status.splitlines() if line.startswith("Seccomp:")) == "2"
    )
    # Who the Pod's own token is, asked of the API server through the "kubernetes" Service.
    whoami = (
        "from kubernetes import client, config; config.load_incluster_config(); "
        "r = client.AuthenticationV1Api().create_self_subject_review("
        "{'apiVersion': 'authentication.k8s.io/v1', 'kind': 'SelfSubjectReview'}); "
        "print(r.status.user_info.username)"
    )
    user = in_pod("python", "-c", whoami)
    assert user.stdout.strip() == f"system:serviceaccount:{NAMESPACE}:{ACCOUNT}", user


def _hook_runs(release: Release) -> int:
    """How many Pods the migrations Job has created, by the job controller's Events."""
    out = release.kubectl(
        "get", "events", "-n", NAMESPACE, "--field-selector",
        f"involvedObject.kind=Job,involvedObject.name={RELEASE}-db-upgrade,reason=SuccessfulCreate",
        "-o", "json",
    ).stdout  # fmt: skip
    return sum(int(e.get("count") or 1) for e in json.loads(out)["items"])


def _mind_ready(release: Release) -> bool:
    mind = json.loads(
        release.kubectl("get", "mind", "atlas-keeper", "-n", release.team, "-o", "json").stdout
    )
    return any(
        c["type"] == "Ready" and c["status"] == "True"
        for c in mind.get("status", {}).get("conditions", [])
    )


def test_a_mind_becomes_ready(release: Release) -> None:
    release.ready_pod()
    apply = shlex.split(_next_steps(release.install_output)[0].replace("TEAM", release.team))
    subprocess.run(
        ["kubectl", "--kubeconfig", str(release.node.kubeconfig), *apply[1:]],
        cwd=repo_root(), check=True, capture_output=True,
    )  # fmt: skip
    eventually(lambda: _mind_ready(release), timeout=90, interval=1, what="the Mind Ready")


def _plan(release: Release) -> dict[str, Any]:
    out = release.kubectl("get", "plan", "restart-atlas-worker", "-n", release.team, "-o", "json")
    return dict(json.loads(out.stdout).get("status") or {})


def _step(release: Release, key: str) -> dict[str, Any]:
    return next((s for s in _plan(release).get("steps", []) if s["key"] == key), {})


def test_an_approved_plan_restarts_the_workload_across_a_replaced_controller_pod(
    release: Release,
) -> None:
    """examples/plan.yaml in the team's namespace: the restart waits for an approval; the
    controller Pod is deleted meanwhile and its Deployment replaces it; the approval is given
    to the new Pod, which restarts the workload once (the ledger has one execution of P1)."""
    team, repo = release.team, repo_root()
    release.kubectl("apply", "-n", team, "-f", str(repo / "examples" / "workload.yaml"))
    release.kubectl("rollout", "status", "deployment/atlas-worker", "-n", team, "--timeout=90s")
    release.kubectl(
        "label", "pods", "-n", team, "-l", "app=atlas-worker", "minds.dev/fault=crashloop"
    )
    # The Mind names the group minds:approvers; the devcluster's approver is in it, and reads
    # what it decides on (docs/approvals.md).
    for role in ("minds-approver", "minds-viewer"):
        release.kubectl(
            "create", "clusterrolebinding", f"node-{role}", f"--clusterrole={role}",
            "--group=minds:approvers",
        )  # fmt: skip
    plan = yaml.safe_load((repo / "examples" / "plan.yaml").read_text())
    plan["metadata"]["namespace"] = team
    plan_text = json.dumps(plan).replace('"namespace": "default"', f'"namespace": "{team}"')
    plan_text = plan_text.replace('"default/atlas-worker"', f'"{team}/atlas-worker"')
    release.kubectl("apply", "-f", "-", input_=plan_text)
    asked = eventually(
        lambda: _step(release, "P1").get("approvalRef"), timeout=120, interval=1,
        what="P1 asks for an approval",
    )  # fmt: skip
    first = release.ready_pod()
    release.kubectl("delete", "pod", first, "-n", NAMESPACE, "--wait=false")
    eventually(
        lambda: release.ready_pod() != first, timeout=180, interval=1, what="a new controller Pod"
    )
    before = release.kubectl(
        "get", "deployment", "atlas-worker", "-n", team, "-o",
        "jsonpath={.spec.template.metadata.annotations}",
    ).stdout  # fmt: skip
    release.kubectl(
        "--context", "approver", "patch", "approval", asked, "-n", team, "--type=merge",
        "-p", json.dumps({"spec": {"decision": "Approved", "decidedBy": "approver"}}),
    )  # fmt: skip
    eventually(
        lambda: _plan(release).get("phase") == "completed", timeout=180, interval=1,
        what="the plan completed",
    )  # fmt: skip
    after = release.kubectl(
        "get", "deployment", "atlas-worker", "-n", team, "-o",
        "jsonpath={.spec.template.metadata.annotations}",
    ).stdout  # fmt: skip
    assert "restartedAt" in after
    assert after != before
    with Ledger.from_url(release.database.app_url) as ledger:
        uid = json.loads(
            release.kubectl("get", "plan", "restart-atlas-worker", "-n", team, "-o", "json").stdout
        )["metadata"]["uid"]
        rows = executions_by_step(ledger, team, "service.restart")[(uid, "P1")]
    assert [r.origin.attempt for r in rows] == [1]


def test_prometheus_scrapes_the_metrics_through_the_charts_service(
    release: Release, tmp_path: Path
) -> None:
    """Prometheus on this host scrapes the controller at the metrics Service's ClusterIP:
    kube-proxy sends it to the Pod on the bridge, as a cluster's Prometheus would reach it."""
    release.ready_pod()
    service = json.loads(
        release.kubectl(
            "get", "service", f"{RELEASE}-metrics", "-n", NAMESPACE, "-o", "json"
        ).stdout
    )
    target = f"{service['spec']['clusterIP']}:{service['spec']['ports'][0]['port']}"
    config = {"scrape_configs": [{"job_name": JOB, "static_configs": [{"targets": [target]}]}]}
    with running_prometheus(tmp_path / "prometheus", config) as prometheus:
        eventually(prometheus.targets_up, timeout=60, what=f"Prometheus scrapes {target}")
        series = eventually(
            lambda: prometheus.query(f'{{job="{JOB}", __name__=~"minds_.+"}}'),
            timeout=30,
            what="the controller's own metrics",
        )
        assert all(s["metric"]["instance"] == target for s in series)


def test_upgrade_replaces_the_pod_and_reruns_the_hook_and_uninstall_keeps_crds_and_ledger(
    release: Release, tmp_path: Path
) -> None:
    """Runs last in this module: it removes the release the tests above share. The upgrade
    also leaves the user to the platform, with docs/install.md's values for it: the real
    kubelet then checks the image's own numeric user against runAsNonRoot in the restricted
    namespace, and starts it as that user."""
    before = release.controller_pods()
    assert len(before) == 1
    assert _hook_runs(release) == 1
    with Ledger.from_url(release.database.app_url) as ledger:
        recorded = len(ledger.events(namespace=release.team))
    assigned = tmp_path / "assigned-user.yaml"
    assigned.write_text(yaml.safe_dump(_assigned_user_values()))
    release.helm_run(
        "upgrade", RELEASE, str(CHART), "-n", NAMESPACE, "-f", str(release.values),
        "-f", str(assigned),
        "--set-json", 'controller.podAnnotations={"minds.dev/upgraded": "yes"}', "--timeout", "5m",
    )  # fmt: skip
    assert _hook_runs(release) == 2  # the hook ran again, and succeeded (helm waited for it)
    new = release.ready_pod()
    assert new != before[0]["metadata"]["name"]
    [pod] = [p for p in release.controller_pods() if p["metadata"]["name"] == new]
    assert "runAsUser" not in pod["spec"]["securityContext"]
    assert pod["spec"]["securityContext"]["runAsNonRoot"] is True
    uid = release.kubectl(
        "exec", "-n", NAMESPACE, new, "--", "python", "-c", "import os; print(os.getuid())"
    )
    assert uid.stdout.strip() == "10001", uid  # the image's USER, which the kubelet checked
    eventually(lambda: len(release.controller_pods()) == 1, timeout=60, what="the old Pod gone")
    eventually(lambda: _mind_ready(release), timeout=60, what="the Mind still Ready")
    with Ledger.from_url(release.database.app_url) as ledger:
        assert len(ledger.events(namespace=release.team)) >= recorded > 0

    release.helm_run("uninstall", RELEASE, "-n", NAMESPACE, "--wait", "--timeout", "2m")
    assert release.controller_pods() == []
    for crd in (CHART / "templates" / "crds").glob("*.yaml"):
        assert release.kubectl("get", "crd", crd.name.removesuffix(".yaml")).returncode == 0
    assert release.kubectl("get", "mind", "atlas-keeper", "-n", release.team).returncode == 0
    with Ledger.from_url(release.database.app_url) as ledger:
        assert len(ledger.events(namespace=release.team)) >= recorded


def test_the_install_docs_commands_run_as_written_on_the_real_node(
    release: Release, bridge_postgres: PostgresServer, tmp_path: Path
) -> None:
    """docs/install.md, every command in its order, hooks and all, on the real node: its
    install, upgrade and uninstall are what a platform team types. The one addition is a values
    file, as a team adds its registry's image: the image as imported, and the real node's
    toleration and node selector. Runs last: the test above removed the fixture's release, and
    the doc starts from no namespace of its own."""
    node = release.node
    node.kubectl("delete", "namespace", NAMESPACE, "--wait=true", "--timeout=180s")
    name = f"minds_docs_{uuid.uuid4().hex[:8]}"
    _create_database(bridge_postgres.admin_url, name)  # empty: the doc's hook migrates it
    database = bridge_postgres.database(name)
    team = f"team-{uuid.uuid4().hex[:6]}"
    node.kubectl("create", "namespace", team)
    repository, tag = release.image.rsplit(":", 1)
    local = tmp_path / "this-node.yaml"
    local.write_text(
        yaml.safe_dump(
            {
                "image": {"repository": repository, "tag": tag, "pullPolicy": "Never"},
                "controller": {"tolerations": [TOLERATION], "nodeSelector": ON_REAL_NODE},
            }
        )
    )
    commands = [
        f"{c} -f {local}" if c.startswith(("helm install", "helm upgrade")) else c
        for c in sh_commands(INSTALL_DOC, skip="The image")
    ]
    assert [c.split()[1] for c in commands if c.startswith("helm ")] == [
        "install",
        "test",
        "upgrade",
        "uninstall",
    ]
    path = os.pathsep.join([str(release.helm.binary.parent), os.environ["PATH"]])
    outputs = run_documented(
        commands,
        {
            "<namespace>": team,
            "<controller-url>": database.app_url,
            "<owner-url>": database.owner_url,
        },
        {"KUBECONFIG": str(node.kubeconfig), "PATH": path},
        repo_root(),
    )
    # The hook Job migrated the empty database from its Pod, as the owner, before anything ran.
    with Ledger.from_url(database.app_url) as ledger:
        ledger.events(namespace=team)  # a schema to read from, with the controller's role
    # helm test: the check Pod found the controller and its ledger answering.
    tested = next(c for c in commands if c.startswith("helm test"))
    assert "Succeeded" in outputs[tested], outputs[tested]
    assert "minds.minds.dev" in outputs[commands[-1]]  # uninstalled: the CRDs stay
    assert release.controller_pods() == []

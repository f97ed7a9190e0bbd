"""From release 0.1.0 (CRDs in the chart's crds/) to this chart (CRDs as templates), with real
helm on a control plane of its own, running docs/upgrading.md's commands as written.

0.1.0 is the chart packaged at the commit CHANGELOG.md names
(tests/fixtures/charts/minds-operator-0.1.0.tgz). Like tests/e2e/test_docs_install.py, each
``helm install`` and ``helm upgrade`` gets ``--no-hooks``: no kubelet runs the migration Job
here (tests/e2e/test_upgrade_in_flight.py runs the hook's command itself).
"""

from __future__ import annotations

import json
import os
import shutil
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from minds.adapters.kube.crds import chart_template, render_crd
from minds.devenv.install import repo_root
from minds.devenv.kubectl import kubectl, kubectl_json
from minds.domain.resources.kinds import KINDS
from tests.fixtures.docs import run_documented, sh_commands
from tests.fixtures.helm import CHART, Helm, fresh_control_plane

REPO = repo_root()
DOC = REPO / "docs" / "upgrading.md"
PREVIOUS = REPO / "tests" / "fixtures" / "charts" / "minds-operator-0.1.0.tgz"
RELEASE, NAMESPACE = "minds", "minds-system"
CRDS = sorted(p.stem for p in (CHART / "templates" / "crds").glob("*.yaml"))
EXAMPLES = ("mind.yaml", "plan.yaml", "grant.yaml")
KEEP = "helm.sh/resource-policy"


@pytest.fixture(scope="module")
def kube(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    with fresh_control_plane(tmp_path_factory.mktemp("upgrade-cluster")) as kubeconfig:
        yield kubeconfig


def _run(commands: list[str], kube: Path, helm: Helm, team: str) -> dict[str, str]:
    path = os.pathsep.join([str(helm.binary.parent), os.environ["PATH"]])
    hooked = [f"{c} --no-hooks" if c.startswith("helm upgrade") else c for c in commands]
    return run_documented(
        hooked, {"<namespace>": team}, {"KUBECONFIG": str(kube), "PATH": path}, REPO
    )


def _crd(kube: Path, name: str) -> dict[str, Any]:
    return dict(kubectl_json(kube, "get", "crd", name, "-o", "json"))


def _objects(kube: Path, team: str) -> dict[str, Any]:
    """Every object the examples made, as the API server reads them back (spec only: the
    status and metadata are the server's)."""
    found = {}
    for kind in ("minds", "plans", "capabilitygrants"):
        for item in kubectl_json(kube, "get", kind, "-n", team, "-o", "json")["items"]:
            found[f"{kind}/{item['metadata']['name']}"] = item["spec"]
    return found


def install_previous(kube: Path, helm: Helm) -> str:
    """0.1.0 installed as install.md's command did then, for a team namespace it returns."""
    team = f"team-{uuid.uuid4().hex[:6]}"
    for ns in (NAMESPACE, team):
        kubectl(kube, "create", "namespace", ns)
    helm.run(
        "install", RELEASE, str(PREVIOUS), "-n", NAMESPACE, "--no-hooks",
        "--set", "database.url.secretName=minds-ledger-app",
        "--set", "database.ownerUrl.secretName=minds-ledger-owner",
        "--set", f"managedNamespaces={{{team}}}",
        kubeconfig=kube,
    )  # fmt: skip
    return team


@pytest.fixture(scope="module")
def old_release(kube: Path, helm: Helm) -> tuple[str, dict[str, Any]]:
    """0.1.0 installed as install.md's command did then, with what the examples create."""
    team = install_previous(kube, helm)
    for name in CRDS:
        assert "meta.helm.sh/release-name" not in _crd(kube, name)["metadata"].get(
            "annotations", {}
        )
    for example in EXAMPLES:
        kubectl(kube, "apply", "-n", team, "-f", str(REPO / "examples" / example))
    objects = _objects(kube, team)
    assert len(objects) == len(EXAMPLES)
    return team, objects


def test_the_new_chart_alone_cannot_take_over_the_crds_of_0_1_0(
    kube: Path, helm: Helm, old_release: tuple[str, dict[str, Any]]
) -> None:
    """Why the adoption step is in the doc: without it Helm refuses, as the doc quotes."""
    refused = helm.run(
        "upgrade", RELEASE, str(CHART), "-n", NAMESPACE, "--reset-then-reuse-values", "--no-hooks",
        kubeconfig=kube, check=False,
    )  # fmt: skip
    assert refused.returncode != 0
    quoted = next(line for line in DOC.read_text().splitlines() if "UPGRADE FAILED" in line)
    assert quoted.removesuffix(" ...") in refused.stderr


def test_from_0_1_0_as_written_the_crds_belong_to_the_release_and_nothing_is_lost(
    kube: Path, helm: Helm, old_release: tuple[str, dict[str, Any]]
) -> None:
    team, before = old_release
    outputs = _run(sh_commands(DOC, section="From 0.1.0"), kube, helm, team)
    chart = yaml.safe_load((CHART / "Chart.yaml").read_text())
    listing = list(outputs.values())[-1]
    for name in CRDS:
        crd = _crd(kube, name)
        assert crd["metadata"]["annotations"][KEEP] == "keep"
        assert crd["metadata"]["labels"]["helm.sh/chart"] == f"minds-operator-{chart['version']}"
        assert name in listing
    manifest = helm.run("get", "manifest", RELEASE, "-n", NAMESPACE, kubeconfig=kube).stdout
    owned = [
        d for d in yaml.safe_load_all(manifest) if d and d["kind"] == "CustomResourceDefinition"
    ]
    assert sorted(d["metadata"]["name"] for d in owned) == CRDS
    assert _objects(kube, team) == before


def _next_release(tmp: Path) -> tuple[Path, str]:
    """This chart as its next release would be: the Mind CRD gains a field (generated the way
    `minds crds generate` writes it)."""
    chart = tmp / "minds-operator"
    shutil.copytree(CHART, chart)
    [mind_kind] = [k for k in KINDS if k.kind == "Mind"]
    crd = render_crd(mind_kind)
    spec = crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]
    field = "upgradeProbe"
    assert field not in spec["properties"]
    spec["properties"][field] = {"type": "string", "description": "Only the next release has it."}
    (chart / "templates" / "crds" / f"{mind_kind.crd_name}.yaml").write_text(chart_template(crd))
    meta = yaml.safe_load((chart / "Chart.yaml").read_text())
    meta["version"] = "99.0.0"
    (chart / "Chart.yaml").write_text(yaml.safe_dump(meta))
    return chart, field


def test_the_next_upgrade_brings_a_new_field_that_survives_a_write(
    kube: Path, helm: Helm, old_release: tuple[str, dict[str, Any]], tmp_path: Path
) -> None:
    """The rule itself: `helm upgrade` alone upgrades the schema. With the CRDs in crds/ the
    API server would still serve the old one and prune the field without an error."""
    team, _ = old_release
    chart, field = _next_release(tmp_path)

    def write_and_read() -> Any:
        kubectl(kube, "patch", "mind", "atlas-keeper", "-n", team, "--type=merge",
                "-p", json.dumps({"spec": {field: "kept"}}))  # fmt: skip
        mind = kubectl_json(kube, "get", "mind", "atlas-keeper", "-n", team, "-o", "json")
        return mind["spec"].get(field)

    assert write_and_read() is None  # this release's schema prunes it
    helm.run(
        "upgrade", RELEASE, str(chart), "-n", NAMESPACE, "--reset-then-reuse-values", "--no-hooks",
        kubeconfig=kube,
    )  # fmt: skip
    assert write_and_read() == "kept"
    kubectl(kube, "patch", "mind", "atlas-keeper", "-n", team, "--type=json",
            "-p", json.dumps([{"op": "remove", "path": f"/spec/{field}"}]))  # fmt: skip


def test_handing_the_crds_to_another_tool_as_written_keeps_them_and_every_object(
    kube: Path, helm: Helm, old_release: tuple[str, dict[str, Any]]
) -> None:
    """crds.enabled off: Helm stops rendering the CRDs, and keep is what stops it deleting
    them, and with them every object."""
    team, before = old_release
    *hand_off, back = sh_commands(DOC, section="When another tool owns the CRDs")
    outputs = _run(hand_off, kube, helm, team)
    for name in CRDS:
        assert name in outputs[hand_off[-1]]
    manifest = helm.run("get", "manifest", RELEASE, "-n", NAMESPACE, kubeconfig=kube).stdout
    assert "kind: CustomResourceDefinition" not in manifest
    assert _objects(kube, team) == before
    # And back, as written: the uninstall below then meets the CRDs in the release.
    _run([back], kube, helm, team)
    manifest = helm.run("get", "manifest", RELEASE, "-n", NAMESPACE, kubeconfig=kube).stdout
    assert manifest.count("kind: CustomResourceDefinition") == len(CRDS)


def test_uninstall_keeps_the_crds_and_every_object(
    kube: Path, helm: Helm, old_release: tuple[str, dict[str, Any]]
) -> None:
    team, before = old_release
    helm.run("uninstall", RELEASE, "-n", NAMESPACE, kubeconfig=kube)
    for name in CRDS:
        assert _crd(kube, name)["metadata"]["name"] == name
    assert _objects(kube, team) == before

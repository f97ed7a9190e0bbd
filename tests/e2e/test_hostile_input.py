"""Hostile input against the real API server, admission policies, controller and Postgres:
each piece is refused with the field named, or processed with the controller alive.

The limits of free-form JSON are tested on both sides: admission (ValidatingAdmissionPolicy
``minds-free-form-limits``) for what a person writes, the controller's own check for what
reaches it anyway, and the API server's own ceiling (it parses at most 10,000 levels).
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from minds.adapters.ledger import Ledger
from minds.devenv.controller import ControllerHandle
from minds.devenv.install import CONTROLLER_ACCOUNT, CONTROLLER_NAMESPACE
from minds.devenv.kubectl import kubectl
from minds.domain.free_form import FREE_FORM
from tests.e2e.approval_support import decide
from tests.e2e.executor_support import (
    apply,
    deployment,
    mind,
    operator_plan,
    plan_status,
    restart_request,
    wait_step,
    workload,
)
from tests.e2e.hostile_support import deep, dumps
from tests.fixtures.cluster import Cluster
from tests.fixtures.waiting import eventually, unconflicted

pytestmark = pytest.mark.usefixtures("session_controller")

POLICY = "minds-free-form-limits"
#: kube-apiserver refuses a JSON document nested deeper than this, before any schema.
API_SERVER_DEPTH = 10_000


def nested(depth: int) -> dict[str, Any]:
    """An object of ``depth`` containers, the outermost included (as the limits count)."""
    return {"replicas": deep(depth - 1)}


def create(cluster: Cluster, body: dict[str, Any], *, dry_run: bool = True, **kw: Any) -> Any:
    args = ("create", "-f", "-", *(("--dry-run=server",) if dry_run else ()))
    return cluster.kubectl(*args, input_=dumps(body), check=False, **kw)


def grant_body(namespace: str, limits: Any) -> dict[str, Any]:
    return {
        "apiVersion": "minds.dev/v1alpha1",
        "kind": "CapabilityGrant",
        "metadata": {"name": f"g-{uuid.uuid4().hex[:8]}", "namespace": namespace},
        "spec": {
            "mind": "keeper",
            "capability": "service.restart",
            "targetPattern": "atlas-*",
            "parameterLimits": limits,
            "expiresAt": (datetime.now(UTC) + timedelta(hours=1)).isoformat(),
            "operationCap": 1,
            "reason": "hostile input",
            "grantedBy": "admin",
        },
    }


def approval_body(namespace: str, parameters: Any) -> dict[str, Any]:
    return {
        "apiVersion": "minds.dev/v1alpha1",
        "kind": "Approval",
        "metadata": {"name": f"a-{uuid.uuid4().hex[:8]}", "namespace": namespace},
        "spec": {
            "kind": "action",
            "mind": "keeper",
            "capability": "service.restart",
            "target": f"{namespace}/atlas-worker",
            "parameters": parameters,
            "explanation": {"what": "restart", "why": "hostile input"},
            "origin": {"mind": "keeper"},
            "expiresAt": (datetime.now(UTC) + timedelta(hours=1)).isoformat(),
        },
    }


def plan_with(namespace: str, **step: Any) -> dict[str, Any]:
    restart = {"key": "P1", "title": "restart", "kind": "capability"}
    return operator_plan(namespace, f"p-{uuid.uuid4().hex[:8]}", [{**restart, **step}])


def request_step(limits: Any) -> dict[str, Any]:
    return {
        "kind": "request_capability",
        "request": {
            "capability": "service.restart",
            "targetPattern": "atlas-*",
            "parameterLimits": limits,
            "durationSeconds": 600,
            "operationCap": 1,
            "reason": "r",
            "risk": "r",
            "mitigation": "r",
            "fallback": "r",
        },
    }


#: Each free-form field a person can write, with a body that puts a value there.
FREE_FORM_FIELDS = {
    "spec.steps[P1].parameters": lambda ns, v: plan_with(
        ns, capability="service.restart", parameters=v
    ),
    "spec.steps[P1].request.parameterLimits": lambda ns, v: plan_with(ns, **request_step(v)),
    "spec.parameterLimits": grant_body,
    "spec.parameters": approval_body,
}


@pytest.mark.parametrize("field", FREE_FORM_FIELDS)
def test_free_form_nested_beyond_the_limit_is_refused_with_the_field_named(
    cluster: Cluster, namespace: str, field: str
) -> None:
    body = FREE_FORM_FIELDS[field]
    within = create(cluster, body(namespace, nested(FREE_FORM.depth)))
    assert within.returncode == 0, within.stderr
    for depth in (FREE_FORM.depth + 1, 1500):
        refused = create(cluster, body(namespace, nested(depth)))
        assert refused.returncode != 0
        assert POLICY in refused.stderr
        assert f"{field} is beyond the limits of free-form JSON" in refused.stderr


@pytest.mark.parametrize(
    ("value", "why"),
    [
        ({"name": "atlas\u0000"}, "a NUL in a string"),
        ({"name\u0000": "atlas"}, "a NUL in a key"),
        ({"name": "x" * (FREE_FORM.string + 1)}, "a string too long"),
        ({"names": list(range(FREE_FORM.width + 1))}, "a list too long"),
    ],
    ids=["nul-value", "nul-key", "long-string", "wide-list"],
)
def test_free_form_strings_and_widths_are_bounded_at_admission(
    cluster: Cluster, namespace: str, value: dict[str, Any], why: str
) -> None:
    refused = create(cluster, grant_body(namespace, value))
    assert refused.returncode != 0, why
    assert "spec.parameterLimits is beyond the limits of free-form JSON" in refused.stderr


def test_the_api_server_itself_refuses_json_deeper_than_ten_thousand_levels(
    cluster: Cluster, namespace: str, tmp_path: Path
) -> None:
    """What no policy sees: the API server's decoder stops the document first."""
    path = f"/apis/minds.dev/v1alpha1/namespaces/{namespace}/capabilitygrants?dryRun=All"
    for depth, refused_by in ((API_SERVER_DEPTH - 10, POLICY), (API_SERVER_DEPTH + 1, "max depth")):
        document = tmp_path / f"deep-{depth}.json"
        document.write_text(dumps(grant_body(namespace, deep(depth))))
        sent = cluster.kubectl("create", "--raw", path, "-f", str(document), check=False)
        assert sent.returncode != 0
        assert refused_by in sent.stderr


def test_a_nul_in_a_goal_description_is_refused_with_the_field_named(
    cluster: Cluster, namespace: str, e2e_ledger: Ledger
) -> None:
    body = {
        "apiVersion": "minds.dev/v1alpha1",
        "kind": "Mind",
        "metadata": {"name": "keeper", "namespace": namespace},
        "spec": {"goals": [{"name": "up", "description": "up\u0000", "subject": {"name": "a"}}]},
    }
    refused = create(cluster, body, dry_run=False)
    assert refused.returncode != 0
    assert "spec.goals[0].description" in refused.stderr
    assert "NUL" in refused.stderr

    # The same goal with text Postgres stores (controls, emoji, right-to-left marks) is admitted,
    # gets its status and its ledger row.
    body["spec"]["goals"][0]["description"] = "up\t\x1b[31m\u202e🙂\U0010ffff"
    assert create(cluster, body, dry_run=False).returncode == 0
    cluster.kubectl(
        "wait", "--for=condition=Ready", "mind/keeper", "-n", namespace, "--timeout=60s"
    )
    eventually(
        lambda: e2e_ledger.events(namespace=namespace, type="mind_registered"),
        what="mind_registered in the ledger",
    )


def test_an_approvers_note_with_nul_is_refused_and_the_decision_still_recorded_before_acting(
    cluster: Cluster, namespace: str, e2e_ledger: Ledger
) -> None:
    mind(
        cluster,
        namespace,
        capabilityPolicy=[{"capability": "service.restart", "decision": "approve"}],
    )
    deployment(cluster, namespace)
    name = restart_request(cluster, namespace, "restart-atlas", "keeper")

    def decide_with(note: str) -> Any:
        return decide(cluster, namespace, name, "Approved", "approver", note=note)

    refused = decide_with("fine\u0000")
    assert refused.returncode != 0
    assert "spec.note" in refused.stderr
    assert decide_with("fine").returncode == 0, "the same approver decides with a storable note"
    wait_step(cluster, namespace, "restart-atlas", "P1", "completed")
    (approved,) = e2e_ledger.events(namespace=namespace, type="approval_approved")
    assert approved.payload.get("note") == "fine"


@pytest.fixture
def without_free_form_policy(cluster: Cluster, namespace: str) -> Iterator[None]:
    """A cluster whose admission lacks the policy: what the controller must refuse itself."""
    binding = cluster.kubectl("get", "validatingadmissionpolicybinding", POLICY, "-o", "json")
    saved = json.loads(binding.stdout)
    for key in ("resourceVersion", "uid", "creationTimestamp", "generation", "managedFields"):
        saved["metadata"].pop(key, None)
    probe = plan_with(namespace, capability="service.restart", parameters=nested(6))
    cluster.kubectl("delete", "validatingadmissionpolicybinding", POLICY)
    try:
        eventually(lambda: create(cluster, probe).returncode == 0, what="the policy is out")
        yield
    finally:
        apply(cluster, saved)
        eventually(lambda: create(cluster, probe).returncode != 0, what="the policy is back")


def test_free_form_that_reaches_the_controller_is_refused_in_the_plans_status(
    cluster: Cluster,
    namespace: str,
    session_controller: ControllerHandle,
    without_free_form_policy: None,
) -> None:
    mind(cluster, namespace)
    deep = {**workload(namespace), "extra": nested(FREE_FORM.depth + 2)}
    body = plan_with(namespace, capability="service.restart", parameters=deep)
    assert create(cluster, body, dry_run=False).returncode == 0
    name = body["metadata"]["name"]

    status = eventually(
        lambda: (s := plan_status(cluster, namespace, name)).get("validation") and s,
        what="the plan judged",
    )
    assert status["phase"] == "draft"
    (error,) = status["validation"]["errors"]
    assert error["field"].startswith("steps[0].parameters.extra")
    assert "nested deeper than 4 levels" in error["message"]
    assert session_controller.healthy()


# -- every identity, every write path --------------------------------------------------------

#: Who can write a Plan's spec at all: admission refuses them alike (RBAC refuses the rest).
IDENTITIES = ("admin", "controller")
#: The controller patches Plans and never replaces them: RBAC refuses before admission looks.
RBAC_REFUSES = {("controller", "replace")}
#: What each hostile change puts in a Plan, and the field the refusal must name.
HOSTILE_CHANGES: dict[str, tuple[Callable[[dict[str, Any]], None], str]] = {
    "nul": (lambda spec: spec.update(objective="keep\u0000"), "spec.objective"),
    "deep": (
        lambda spec: spec["steps"][0].update(parameters=nested(1500)),
        "spec.steps[P1].parameters",
    ),
}


def _as(cluster: Cluster, identity: str) -> Callable[..., Any]:
    kubeconfig = cluster.controller_kubeconfig if identity == "controller" else cluster.kubeconfig

    def run(*args: str, input_: str | None = None) -> Any:
        return kubectl(kubeconfig, *args, input_=input_, check=False)

    return run


def _written(run: Callable[..., Any], path: str, namespace: str, body: dict[str, Any]) -> Any:
    name = body["metadata"]["name"]
    if path == "patch":
        return run(
            "patch",
            "plan",
            name,
            "-n",
            namespace,
            "--type=merge",
            "-p",
            dumps({"spec": body["spec"]}),
        )
    verb = {
        "create": ("create", "-f", "-"),
        "replace": ("replace", "-f", "-"),
        "apply": ("apply", "--server-side", "--force-conflicts", "-f", "-"),
    }[path]
    if path == "replace":
        # kubectl reads the resourceVersion just before it writes, and the controller's status
        # writes (its admission of the plan) may move it in between.
        return unconflicted(lambda: run(*verb, input_=dumps(body)), what="replace " + name)
    return run(*verb, input_=dumps(body))


@pytest.mark.parametrize("change", HOSTILE_CHANGES)
@pytest.mark.parametrize("path", ["create", "replace", "patch", "apply"])
@pytest.mark.parametrize("identity", IDENTITIES)
def test_every_write_path_and_identity_meets_the_same_refusal(
    cluster: Cluster, namespace: str, identity: str, path: str, change: str
) -> None:
    body = plan_with(namespace, capability="service.status", parameters={"name": "atlas"})
    if path != "create":
        assert create(cluster, body, dry_run=False).returncode == 0
    elif identity == "controller":
        # A plan names who creates it (admission checks it): here, the controller.
        body["spec"]["author"] = (
            f"system:serviceaccount:{CONTROLLER_NAMESPACE}:{CONTROLLER_ACCOUNT}"
        )
    alter, field = HOSTILE_CHANGES[change]
    alter(body["spec"])
    refused = _written(_as(cluster, identity), path, namespace, body)
    assert refused.returncode != 0
    named = (field,)
    if (identity, path) in RBAC_REFUSES:
        named = ("cannot update resource",)
    elif path != "create":
        # A Plan's spec never changes once created: the immutability rule may be the one that
        # answers, naming the top field that changed.
        top = ".".join(field.split("[")[0].split(".")[:2])
        named += (f"is immutable ({top} changed)",)
    assert any(n in refused.stderr for n in named), refused.stderr[-400:]


@pytest.mark.parametrize("identity", IDENTITIES)
def test_the_status_subresource_refuses_nul_too(
    cluster: Cluster, namespace: str, identity: str
) -> None:
    body = plan_with(namespace, capability="service.status", parameters={"name": "atlas"})
    assert create(cluster, body, dry_run=False).returncode == 0
    refused = _as(cluster, identity)(
        "patch",
        "plan",
        body["metadata"]["name"],
        "-n",
        namespace,
        "--subresource=status",
        "--type=merge",
        "-p",
        json.dumps({"status": {"waitingOn": "x\u0000"}}),
    )
    assert refused.returncode != 0
    assert "status.waitingOn" in refused.stderr

"""A person's act on a plan or a mind is a decision, like an approval: releasing a blocked step,
cancelling a plan, abandoning or resuming an intention, revoking a commitment. Each passes one
admission rule, whichever endpoint writes it (merge patch, server-side apply, replace): a
person makes it, never a service account, in their own name exactly; a release names a step
of the plan and is made by an approver the Mind names. Every forgery below is refused with the
field named; the polite act is accepted and the ledger records it under the exact name. Real
API server (admission policies, RBAC, impersonation), Postgres and controller."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from minds.adapters.ledger import Ledger
from minds.devenv.install import controller_username
from minds.devenv.kubectl import kubectl
from minds.domain.intentions import IntentionStatus
from minds.domain.resources.plan import RELEASE_ANNOTATION
from tests.e2e.approval_support import MIND, PLAN, asked, setup_mind
from tests.e2e.executor_support import (
    apply,
    deployment,
    form_intention,
    intention_status,
    mind,
    operator_plan,
    run_as,
    user_kubeconfig,
    wait_step,
)
from tests.e2e.test_corrections import REVOCABLE, resumed_by
from tests.e2e.test_executor import guarded_restart
from tests.fixtures.cluster import Cluster
from tests.fixtures.waiting import eventually

pytestmark = pytest.mark.usefixtures("session_controller")

CONTROLLER = controller_username()
ENDPOINTS = ("patch", "apply", "replace")
#: How often a replace is tried again after losing the race with the controller's own write.
REPLACE_ATTEMPTS = 5
#: Every RBAC right, and a member of the group the Mind names: nothing but the rule under test
#: stands in the way of whoever is impersonated with these.
EVERY_RIGHT = ("system:masters", "minds:approvers")

SERVICE_ACCOUNT = "service accounts cannot"
MISNAMED = "must name you, exactly"


def as_(user: str, *groups: str) -> tuple[str, ...]:
    return (f"--as={user}", *(f"--as-group={g}" for g in groups))


@dataclass(frozen=True)
class Forger:
    what: str
    name: str  # the name written into the act
    refusal: str  # what the API server answers
    context: str | None = "admin"  # None: the controller's own ServiceAccount token
    impersonate: tuple[str, ...] = ()
    endpoints: tuple[str, ...] = ENDPOINTS  # the token may not update: patch and apply only
    step: str = "P1"  # for a release


def forgers(namespace: str) -> list[Forger]:
    """Who tries to act in a name that is not exactly theirs, or as no person at all."""
    deployer = f"system:serviceaccount:{namespace}:deployer"
    erin = as_("erin", *EVERY_RIGHT)
    return [
        Forger(
            "the controller's own token",
            CONTROLLER,
            SERVICE_ACCOUNT,
            context=None,
            endpoints=("patch", "apply"),
        ),
        Forger(
            "the controller, impersonated",
            CONTROLLER,
            SERVICE_ACCOUNT,
            impersonate=as_(CONTROLLER, *EVERY_RIGHT),
        ),
        Forger(
            "another service account",
            deployer,
            SERVICE_ACCOUNT,
            impersonate=as_(deployer, *EVERY_RIGHT),
        ),
        Forger("another person's name", "alice", MISNAMED, impersonate=erin),
        Forger("the requester's name as a suffix", "alice:erin", MISNAMED, impersonate=erin),
        Forger("the impersonator's own name", "admin", MISNAMED, impersonate=erin),
        Forger(
            "impersonation without the right",
            "approver",
            "cannot impersonate",
            context="intruder",
            impersonate=as_("approver", "minds:approvers"),
        ),
        Forger("a viewer", "viewer", "forbidden", context="viewer"),
    ]


def run(
    cluster: Cluster, forger: Forger, *args: str, input_: str | None = None
) -> subprocess.CompletedProcess[str]:
    if forger.context is None:
        return kubectl(cluster.controller_kubeconfig, *args, input_=input_, check=False)
    return cluster.kubectl(
        *args, *forger.impersonate, context=forger.context, input_=input_, check=False
    )


def merged(base: dict[str, Any], change: dict[str, Any]) -> dict[str, Any]:
    out = dict(base)
    for key, value in change.items():
        inner = out.get(key)
        both = isinstance(inner, dict) and isinstance(value, dict)
        out[key] = merged(inner, value) if both else value  # type: ignore[arg-type]
    return out


def read(cluster: Cluster, kind: str, namespace: str, name: str) -> dict[str, Any]:
    return cluster.api.get(kind, name, namespace)


def write(
    cluster: Cluster,
    forger: Forger,
    endpoint: str,
    kind: str,
    namespace: str,
    name: str,
    change: dict[str, Any],
) -> subprocess.CompletedProcess[str]:
    """``change`` written by ``forger`` through one endpoint of the API server."""
    if endpoint == "patch":
        patch = json.dumps(change)
        return run(
            cluster, forger, "patch", kind, name, "-n", namespace, "--type=merge", "-p", patch
        )
    if endpoint == "apply":
        body = read(cluster, kind, namespace, name)
        manifest = {k: body[k] for k in ("apiVersion", "kind")}
        manifest["metadata"] = {"name": name, "namespace": namespace}
        manifest = merged(manifest, change)
        ssa = ("apply", "--server-side", "--force-conflicts", "--field-manager=forger")
        ssa += ("--validate=false", "-f", "-")
        return run(cluster, forger, *ssa, input_=json.dumps(manifest))
    # The API server validates; kubectl's own check would fail first for a forger it cannot
    # even read the schema as.
    replace = ("replace", "--validate=false", "-f", "-")
    for _ in range(REPLACE_ATTEMPTS):
        body = read(cluster, kind, namespace, name)
        body.pop("status", None)
        done = run(cluster, forger, *replace, input_=json.dumps(merged(body, change)))
        # The controller wrote the object between our read and our replace: that is no
        # verdict on the forger, so read it again and write again.
        if "the object has been modified" not in done.stderr:
            return done
    return done


@dataclass(frozen=True)
class Act:
    what: str
    kind: str
    name: str
    field: str  # the field that names who acts
    change: Callable[[Forger], dict[str, Any]]


def refused_everywhere(cluster: Cluster, namespace: str, act: Act, forgers: list[Forger]) -> None:
    """Each forger, through each endpoint it may use, is refused, and told which field."""
    accepted, unexplained = [], []
    for forger in forgers:
        for endpoint in forger.endpoints:
            proc = write(
                cluster, forger, endpoint, act.kind, namespace, act.name, act.change(forger)
            )
            where = f"{act.what} by {forger.what} ({forger.name}) through {endpoint}"
            if proc.returncode == 0:
                accepted.append(where)
                continue
            said = proc.stderr
            named = act.field in said if forger.refusal in (SERVICE_ACCOUNT, MISNAMED) else True
            if forger.refusal not in said or not named:
                unexplained.append(f"{where}: {said.strip()}")
    assert not accepted, accepted
    assert not unexplained, "\n".join(unexplained)


# -- releasing a blocked step --------------------------------------------------------------------


def release(forger: Forger) -> dict[str, Any]:
    return {"metadata": {"annotations": {RELEASE_ANNOTATION: f"{forger.step}:{forger.name}"}}}


def released(ledger: Ledger, namespace: str) -> list[str]:
    return [
        str(e.payload["by"]) for e in ledger.events(namespace=namespace, type="plan_step_released")
    ]


def blocked_again(cluster: Cluster, ledger: Ledger, namespace: str, releases: int) -> None:
    """Released (the ledger has ``releases`` releases), the step looks at its precondition
    again, still cannot observe it, and blocks; the controller has taken the annotation away."""
    seen: list[Any] = []

    def probe() -> bool:
        body = read(cluster, "plan", namespace, "heal")
        [step] = [s for s in body["status"]["steps"] if s["key"] == "P1"]
        annotations = body["metadata"].get("annotations") or {}
        seen[:] = [step, annotations.get(RELEASE_ANNOTATION), released(ledger, namespace)]
        return (
            len(seen[2]) >= releases
            and step["status"] == "blocked"
            and RELEASE_ANNOTATION not in annotations
        )

    try:
        eventually(probe, timeout=90, what=f"P1 released {releases} times and blocked again")
    except AssertionError as exc:
        raise AssertionError(f"{exc}; last seen: {seen}") from None


def test_only_a_named_approver_releases_a_step_in_their_exact_name(
    cluster: Cluster, namespace: str, e2e_ledger: Ledger, tmp_path: Path
) -> None:
    mind(
        cluster,
        namespace,
        capabilityPolicy=[
            {"capability": "service.restart", "decision": "approve"},
            {"capability": "service.status", "decision": "deny"},
        ],
    )
    deployment(cluster, namespace)
    apply(cluster, operator_plan(namespace, "heal", guarded_restart(namespace)))
    wait_step(cluster, namespace, "heal", "P1", "blocked")
    erin = as_("erin", *EVERY_RIGHT)
    act = Act("release", "plan", "heal", RELEASE_ANNOTATION, release)
    refused_everywhere(
        cluster,
        namespace,
        act,
        [
            *forgers(namespace),
            Forger(
                "an unknown step",
                "erin",
                'names step "X9", which plan heal does not have',
                impersonate=erin,
                step="X9",
            ),
            Forger("a lower-case step", "erin", 'names step "p1"', impersonate=erin, step="p1"),
            # system:masters holds every RBAC right, and is not approval authority.
            Forger(
                "someone the Mind does not name", "admin", "admin is not an approver of mind keeper"
            ),
        ],
    )
    assert released(e2e_ledger, namespace) == []
    assert wait_step(cluster, namespace, "heal", "P1", "blocked")

    # The polite release, through each endpoint: the ledger names exactly who released.
    config = user_kubeconfig(cluster, namespace, "approver", tmp_path / "approver")
    done = run_as(config, "kubectl minds release heal P1")
    assert done.returncode == 0, done.stderr
    blocked_again(cluster, e2e_ledger, namespace, 1)
    polite = Forger("erin", "erin", "", impersonate=erin)
    for releases, endpoint in enumerate(("apply", "replace"), start=2):
        proc = write(cluster, polite, endpoint, "plan", namespace, "heal", release(polite))
        assert proc.returncode == 0, (endpoint, proc.stderr)
        blocked_again(cluster, e2e_ledger, namespace, releases)
    # Exactly these names, in this order (a release seen again on a later event of the same
    # annotation may be recorded twice: the names are what this test holds).
    names = released(e2e_ledger, namespace)
    first = names.index("erin")
    assert set(names[:first]) == {"approver"}
    assert set(names[first:]) == {"erin"}


# -- cancelling a plan -----------------------------------------------------------------------------


def cancel(forger: Forger) -> dict[str, Any]:
    return {"spec": {"cancellation": {"by": forger.name, "reason": "forged"}}}


def test_a_plan_is_cancelled_only_by_a_person_in_their_exact_name(
    cluster: Cluster, namespace: str, e2e_ledger: Ledger
) -> None:
    setup_mind(cluster, namespace)
    asked(cluster, namespace)
    act = Act("cancel", "plan", PLAN, "spec.cancellation.by", cancel)
    refused_everywhere(cluster, namespace, act, forgers(namespace))
    assert "cancellation" not in read(cluster, "plan", namespace, PLAN)["spec"]

    polite = Forger("approver", "approver", "", context="approver")
    proc = write(cluster, polite, "patch", "plan", namespace, PLAN, cancel(polite))
    assert proc.returncode == 0, proc.stderr
    [row] = eventually(
        lambda: e2e_ledger.events(namespace=namespace, type="plan_cancelled"),
        what="plan_cancelled in the ledger",
    )
    assert row.payload["by"] == "approver"


# -- abandoning or resuming an intention, revoking a commitment -------------------------------


def test_a_mind_is_corrected_only_by_a_person_in_their_exact_name(
    cluster: Cluster, namespace: str, e2e_ledger: Ledger
) -> None:
    mind(cluster, namespace, MIND, cycleIntervalSeconds=5, commitments=[REVOCABLE])
    intention = form_intention(e2e_ledger, namespace)
    e2e_ledger.transition_intention(
        intention.id, IntentionStatus.BLOCKED, "waiting for an operator", intention.updated_at
    )

    def correction(action: str) -> Callable[[Forger], dict[str, Any]]:
        def change(forger: Forger) -> dict[str, Any]:
            entry = {"intention": intention.id, "action": action, "by": forger.name,
                     "reason": "forged"}  # fmt: skip
            return {"spec": {"intentionCorrections": [entry]}}

        return change

    def revocation(forger: Forger) -> dict[str, Any]:
        entry = {"commitment": REVOCABLE["name"], "by": forger.name, "reason": "forged"}
        return {"spec": {"commitmentRevocations": [entry]}}

    corrections = "spec.intentionCorrections[].by"
    for act in (
        Act("abandon", "mind", MIND, corrections, correction("abandon")),
        Act("resume", "mind", MIND, corrections, correction("resume")),
        Act("revoke", "mind", MIND, "spec.commitmentRevocations[].by", revocation),
    ):
        refused_everywhere(cluster, namespace, act, forgers(namespace))
    spec = read(cluster, "mind", namespace, MIND)["spec"]
    assert spec.get("intentionCorrections", []) == []
    assert spec.get("commitmentRevocations", []) == []

    # The polite acts, each recorded under the exact name of who made it.
    polite = Forger("admin", "admin", "")

    def add(path: str, entry: dict[str, Any]) -> None:
        body = json.dumps([{"op": "add", "path": f"/spec/{path}/-", "value": entry}])
        proc = cluster.kubectl(
            "patch", "mind", MIND, "-n", namespace, "--type=json", "-p", body, check=False
        )
        assert proc.returncode == 0, proc.stderr

    add("intentionCorrections", {**correction("resume")(polite)["spec"]["intentionCorrections"][0],
                                 "reason": "checked"})  # fmt: skip
    resumed_by(e2e_ledger, namespace, intention.id, "admin")
    add("intentionCorrections", {**correction("abandon")(polite)["spec"]["intentionCorrections"][0],
                                 "reason": "not worth it"})  # fmt: skip
    gone = intention_status(e2e_ledger, intention.id, IntentionStatus.ABANDONED)
    assert gone.reason == "admin said abandon: not worth it"
    add("commitmentRevocations", {**revocation(polite)["spec"]["commitmentRevocations"][0],
                                  "reason": "trusted now"})  # fmt: skip
    eventually(
        lambda: (
            e2e_ledger.commitment_states(namespace, MIND).get(str(REVOCABLE["name"])) == "revoked"
        ),
        what="revoked",
    )
    [decision] = [
        d
        for d in e2e_ledger.decisions(namespace=namespace, mind=MIND, kind="commitment_state")
        if d.outcome == "revoked"
    ]
    assert decision.data["reason"] == "revoked by admin: trusted now"

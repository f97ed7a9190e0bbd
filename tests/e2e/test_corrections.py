"""People correct a mind, against the real API server, controller and ledger: a Plan's spec
cannot change after creation (every write path), a person cancels a plan in their own name,
abandons or resumes an intention, revokes a revocable commitment; an irrevocable commitment
cannot be edited away."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest

from minds.adapters.ledger import Ledger
from minds.devenv.kubectl import kubectl
from minds.domain.intentions import IntentionStatus
from tests.e2e.approval_support import (
    MIND,
    PLAN,
    asked,
    decide,
    phase,
    restarted_at,
    setup_mind,
)
from tests.e2e.executor_support import (
    apply,
    asking_keeper,
    cycles_completed,
    deployment,
    form_intention,
    intention_of,
    intention_status,
    kube_events,
    mind,
    operator_plan,
    plan_body,
    read_step,
    restart_step,
    run_as,
    user_kubeconfig,
    wait_phase,
    wait_step,
)
from tests.e2e.test_approvers import bind
from tests.e2e.world_support import break_pods, rollout_status
from tests.fixtures.cluster import REPO, Cluster
from tests.fixtures.docs import sh_commands
from tests.fixtures.waiting import eventually, unconflicted

pytestmark = [pytest.mark.minutes(2), pytest.mark.usefixtures("session_controller")]

CONTROLLER = "system:serviceaccount:minds-system:minds-controller"
IMMUTABLE = "a changed plan is a new revision"


def patch(
    cluster: Cluster, kind: str, name: str, namespace: str, body: Any, *, as_: str = "admin",
    type_: str = "merge",
) -> subprocess.CompletedProcess[str]:  # fmt: skip
    """``kubectl patch`` as one of the devcluster's people, or with the controller's token."""
    args = ("patch", kind, name, "-n", namespace, f"--type={type_}", "-p", json.dumps(body))
    if as_ == "controller":
        return kubectl(cluster.controller_kubeconfig, *args, check=False)
    return cluster.kubectl(*args, context=as_, check=False)


def cancellation(by: str, reason: str = "handled by hand") -> dict[str, Any]:
    return {"spec": {"cancellation": {"by": by, "reason": reason}}}


def spec_of(cluster: Cluster, namespace: str, name: str) -> dict[str, Any]:
    return dict(plan_body(cluster, namespace, name)["spec"])


# -- a Plan's spec is immutable ----------------------------------------------------------------


def test_a_changed_plan_is_refused_on_every_write_path(
    cluster: Cluster, namespace: str, other_namespace: str, tmp_path: Path
) -> None:
    setup_mind(cluster, namespace)
    asked(cluster, namespace)
    body = plan_body(cluster, namespace, PLAN)
    before = dict(body["spec"])
    changed = {k: v for k, v in body.items() if k != "status"}
    changed["metadata"] = {"name": PLAN, "namespace": namespace}
    changed["spec"] = {**before, "objective": "something else entirely"}
    manifest = tmp_path / "plan.json"
    manifest.write_text(json.dumps(changed))

    applied = cluster.kubectl("apply", "-f", str(manifest), check=False)
    assert applied.returncode != 0
    assert "configured" not in applied.stdout
    assert "spec.objective changed" in applied.stderr
    assert IMMUTABLE in applied.stderr
    assert f"spec.supersedes: {PLAN}" in applied.stderr

    steps = [{**before["steps"][0], "title": "restart twice"}]
    for who in ("admin", "approver", "controller"):
        refused = patch(cluster, "plan", PLAN, namespace, {"spec": {"steps": steps}}, as_=who)
        assert refused.returncode != 0, who
        assert IMMUTABLE in refused.stderr or "only set the minds.dev/release" in refused.stderr

    current = plan_body(cluster, namespace, PLAN)
    current["spec"]["risk"] = "none at all"
    replaced = cluster.kubectl("replace", "-f", "-", input_=json.dumps(current), check=False)
    assert replaced.returncode != 0
    assert "spec.risk changed" in replaced.stderr

    # The status subresource never writes the spec: the API server drops it.
    kubectl(
        cluster.controller_kubeconfig,
        "patch", "plan", PLAN, "-n", namespace, "--subresource=status", "--type=merge",
        "-p", json.dumps({"spec": {"objective": "via status"}}), check=False,
    )  # fmt: skip
    assert spec_of(cluster, namespace, PLAN) == before

    # Another tenant: an admin of their own namespace only is refused by RBAC here.
    bind(cluster, other_namespace, "intruder", "minds-admin")
    tenant = patch(cluster, "plan", PLAN, namespace, cancellation("intruder"), as_="intruder")
    assert tenant.returncode != 0
    assert "forbidden" in tenant.stderr.lower()

    # The same manifest applied again changes nothing and is not refused.
    manifest.write_text(json.dumps({**changed, "spec": before}))
    again = cluster.kubectl("apply", "-f", str(manifest), check=False)
    assert again.returncode == 0, again.stderr
    assert spec_of(cluster, namespace, PLAN) == before


def test_delete_and_recreate_is_a_new_plan_validated_afresh(
    cluster: Cluster, namespace: str, e2e_ledger: Ledger
) -> None:
    setup_mind(cluster, namespace)
    first = asked(cluster, namespace)
    old = plan_body(cluster, namespace, PLAN)
    cluster.kubectl("delete", "plan", PLAN, "-n", namespace)
    # What the old plan asked is withdrawn with it: no approval of it can act any more.
    phase(cluster, namespace, first, "Withdrawn")
    second = asked(cluster, namespace)
    new = plan_body(cluster, namespace, PLAN)
    assert new["metadata"]["uid"] != old["metadata"]["uid"]
    assert second != first
    events = {e.type for e in e2e_ledger.events(subject_uid=new["metadata"]["uid"])}
    assert "plan_validated" in events


def test_superseded_by_is_written_once_by_the_controller_only(
    cluster: Cluster, namespace: str
) -> None:
    setup_mind(cluster, namespace)
    asked(cluster, namespace)
    person = patch(cluster, "plan", PLAN, namespace, {"spec": {"supersededBy": "other-r2"}})
    assert person.returncode != 0
    assert "written once, by the minds controller" in person.stderr
    ok = patch(cluster, "plan", PLAN, namespace, {"spec": {"supersededBy": "next-r2"}},
               as_="controller")  # fmt: skip
    assert ok.returncode == 0, ok.stderr
    again = patch(cluster, "plan", PLAN, namespace, {"spec": {"supersededBy": "next-r3"}},
                  as_="controller")  # fmt: skip
    assert again.returncode != 0
    assert spec_of(cluster, namespace, PLAN)["supersededBy"] == "next-r2"


# -- cancel a plan -------------------------------------------------------------------------------


def test_a_person_cancels_a_plan_in_their_own_name(
    cluster: Cluster, namespace: str, e2e_ledger: Ledger, tmp_path: Path
) -> None:
    setup_mind(cluster, namespace)
    approval = asked(cluster, namespace)

    wrong = patch(cluster, "plan", PLAN, namespace, cancellation("alice"), as_="approver")
    assert wrong.returncode != 0
    assert 'set it to "approver"' in wrong.stderr
    controller = patch(cluster, "plan", PLAN, namespace, cancellation(CONTROLLER),
                       as_="controller")  # fmt: skip
    assert controller.returncode != 0
    assert "service accounts cannot cancel plans" in controller.stderr
    viewer = patch(cluster, "plan", PLAN, namespace, cancellation("viewer"), as_="viewer")
    assert viewer.returncode != 0
    assert "forbidden" in viewer.stderr.lower()

    config = user_kubeconfig(cluster, namespace, "approver", tmp_path / "approver")
    done = run_as(config, f"kubectl minds cancel plan {PLAN} --reason 'handled by hand'")
    assert done.returncode == 0, done.stderr
    assert f"plan {namespace}/{PLAN}: cancelled by approver" in done.stdout

    status = wait_phase(cluster, namespace, PLAN, "abandoned")
    assert status["reason"] == "cancelled by approver: handled by hand"
    assert [s["status"] for s in status["steps"]] == ["cancelled"]
    phase(cluster, namespace, approval, "Withdrawn")
    [row] = eventually(
        lambda: e2e_ledger.events(namespace=namespace, type="plan_cancelled"),
        what="plan_cancelled in the ledger",
    )
    assert row.payload["by"] == "approver"
    assert row.payload["reason"] == "handled by hand"
    intention = intention_of(e2e_ledger, cluster, namespace, PLAN)
    abandoned = intention_status(e2e_ledger, intention.id, IntentionStatus.ABANDONED)
    assert abandoned.reason == "cancelled by approver: handled by hand"

    # Once cancelled, the cancellation stays, and the withdrawn request can act no more.
    changed = patch(cluster, "plan", PLAN, namespace, cancellation("admin", "another reason"))
    assert changed.returncode != 0
    assert "cannot be changed or removed" in changed.stderr
    late = decide(cluster, namespace, approval, "Approved", "approver")
    assert late.returncode != 0
    assert restarted_at(cluster, namespace) is None

    # A finished plan cannot be cancelled (the Plan is history).
    again = run_as(config, f"kubectl minds cancel plan {PLAN} --reason twice")
    assert again.returncode == 1
    missing = run_as(config, "kubectl minds cancel plan no-such-plan --reason x")
    assert missing.returncode == 1
    assert "not found" in missing.stderr
    assert "Traceback" not in missing.stderr


def test_a_draft_is_not_cancelled_it_never_runs(cluster: Cluster, namespace: str) -> None:
    setup_mind(cluster, namespace)
    # A step that depends on itself: admission keeps the plan a draft.
    apply(cluster, operator_plan(namespace, "loop", [read_step("D1", namespace, "D1")]))
    wait_phase(cluster, namespace, "loop", "draft")
    refused = patch(cluster, "plan", "loop", namespace, cancellation("approver"), as_="approver")
    assert refused.returncode != 0
    assert "is a draft, which never runs" in refused.stderr


# -- abandon or resume an intention, revoke a commitment --------------------------------------


def corrections(cluster: Cluster, namespace: str) -> list[dict[str, Any]]:
    body = cluster.api.get("mind", MIND, namespace)
    return list(body["spec"]["intentionCorrections"])


def resumed_by(ledger: Ledger, namespace: str, intention: str, person: str) -> Any:
    """The person's resume of ``intention``, once applied: its decision, naming them. The
    intention has no plan, so the mind plans it anew at once (docs/volition.md#waiting-and-
    resuming): what it does next is its plan's, not the correction's."""

    def probe() -> Any:
        found = ledger.intention(intention)
        rows = ledger.decisions(
            namespace=namespace, kind="reconsideration", subject=("intention", intention)
        )
        said = [d for d in rows if d.outcome == "resume" and d.data["inputs"].get("by") == person]
        return said[0] if said and found is not None and found.plan else None

    return eventually(probe, timeout=60, what=f"{intention} resumed by {person} and planned")


def test_abandon_and_resume_an_intention_with_the_name_in_the_ledger(
    cluster: Cluster, namespace: str, other_namespace: str, e2e_ledger: Ledger, tmp_path: Path
) -> None:
    mind(cluster, namespace, MIND, cycleIntervalSeconds=5)
    blocked = form_intention(e2e_ledger, namespace)
    e2e_ledger.transition_intention(
        blocked.id, IntentionStatus.BLOCKED, "waiting for an operator", blocked.updated_at
    )
    entry = {"intention": blocked.id, "action": "resume", "by": "alice", "reason": "checked"}
    add = [{"op": "add", "path": "/spec/intentionCorrections/-", "value": entry}]
    wrong = patch(cluster, "mind", MIND, namespace, add, type_="json")
    assert wrong.returncode != 0
    assert 'set it to "admin"' in wrong.stderr

    by_controller = {**entry, "by": CONTROLLER}
    controller = patch(
        cluster, "mind", MIND, namespace,
        [{"op": "add", "path": "/spec/intentionCorrections/-", "value": by_controller}],
        as_="controller", type_="json",
    )  # fmt: skip
    assert controller.returncode != 0
    assert "service accounts cannot correct a mind" in controller.stderr
    bind(cluster, other_namespace, "intruder", "minds-admin")
    tenant = patch(cluster, "mind", MIND, namespace, add, as_="intruder", type_="json")
    assert tenant.returncode != 0
    assert "forbidden" in tenant.stderr.lower()

    approver = user_kubeconfig(cluster, namespace, "approver", tmp_path / "approver")
    refused = run_as(approver, f"kubectl minds resume {MIND} {blocked.id} --reason checked")
    assert refused.returncode == 1
    assert "forbidden" in refused.stderr.lower()

    admin = user_kubeconfig(cluster, namespace, "admin", tmp_path / "admin")
    resumed = run_as(admin, f"kubectl minds resume {MIND} {blocked.id} --reason 'checked by hand'")
    assert resumed.returncode == 0, resumed.stderr
    said = resumed_by(e2e_ledger, namespace, blocked.id, "admin")
    assert said.data["reason"] == "admin said resume: checked by hand"

    abandon = f"kubectl minds abandon {MIND} {blocked.id} --reason 'not worth it'"
    assert run_as(admin, abandon).returncode == 0
    gone = intention_status(e2e_ledger, blocked.id, IntentionStatus.ABANDONED)
    assert gone.reason == "admin said abandon: not worth it"
    decisions = e2e_ledger.decisions(
        namespace=namespace, kind="reconsideration", subject=("intention", blocked.id)
    )
    assert [(d.outcome, d.data["inputs"]["by"]) for d in decisions if "by" in d.data["inputs"]] == [
        ("resume", "admin"),
        ("abandon", "admin"),
    ]
    assert len(corrections(cluster, namespace)) == 2


IRREVOCABLE = {
    "name": "never-restart-db",
    "mode": "refrain",
    "capability": "service.restart",
    "target": "db-*",
    "revocable": False,
}
SECOND = {"name": "no-restart-at-night", "mode": "refrain", "capability": "service.restart",
          "target": "night-*"}  # fmt: skip
REVOCABLE = {"name": "ask-before-atlas", "mode": "refrain", "capability": "service.restart",
             "target": "atlas-*", "unlessApproval": True}  # fmt: skip


def test_revoke_a_revocable_commitment_but_never_an_irrevocable_one(
    cluster: Cluster, namespace: str, e2e_ledger: Ledger, tmp_path: Path
) -> None:
    mind(cluster, namespace, MIND, cycleIntervalSeconds=5, commitments=[IRREVOCABLE, REVOCABLE])
    admin = user_kubeconfig(cluster, namespace, "admin", tmp_path / "admin")

    revoked = run_as(admin, f"kubectl minds revoke {MIND} ask-before-atlas --reason 'trusted now'")
    assert revoked.returncode == 0, revoked.stderr
    state = eventually(
        lambda: e2e_ledger.commitment_states(namespace, MIND).get("ask-before-atlas") == "revoked",
        what="ask-before-atlas revoked",
    )
    assert state
    [decision] = [
        d
        for d in e2e_ledger.decisions(namespace=namespace, mind=MIND, kind="commitment_state")
        if d.outcome == "revoked"
    ]
    assert decision.data["reason"] == "revoked by admin: trusted now"

    refused = run_as(admin, f"kubectl minds revoke {MIND} never-restart-db --reason please")
    assert refused.returncode == 1
    assert "never-restart-db is irrevocable" in refused.stderr
    unknown = run_as(admin, f"kubectl minds revoke {MIND} no-such --reason x")
    assert unknown.returncode == 1
    assert "must name a commitment" in unknown.stderr

    # Editing it away: JSON patch, merge patch, apply and replace are all refused.
    remove = [{"op": "remove", "path": "/spec/commitments/0"}]
    assert (
        "cannot remove or change it"
        in patch(cluster, "mind", MIND, namespace, remove, type_="json").stderr
    )
    loosened = [{**IRREVOCABLE, "revocable": True}, REVOCABLE]
    merge = patch(cluster, "mind", MIND, namespace, {"spec": {"commitments": loosened}})
    assert "never-restart-db is irrevocable" in merge.stderr
    body: dict[str, Any] = {}

    def replace() -> subprocess.CompletedProcess[str]:
        # Read again each time: the mind's cycle writes its status every few seconds.
        body.update(cluster.api.get("mind", MIND, namespace))
        body["spec"]["commitments"] = [REVOCABLE]
        return cluster.kubectl("replace", "-f", "-", input_=json.dumps(body), check=False)

    replaced = unconflicted(replace, what="a replace not beaten by a status write")
    assert "cannot remove or change it" in replaced.stderr
    manifest = {k: body[k] for k in ("apiVersion", "kind")}
    manifest["metadata"] = {"name": MIND, "namespace": namespace}
    manifest["spec"] = {"commitments": [REVOCABLE]}
    applied = cluster.kubectl("apply", "-f", "-", input_=json.dumps(manifest), check=False)
    assert applied.returncode != 0
    assert "cannot remove or change it" in applied.stderr
    kept = cluster.api.get("mind", MIND, namespace)
    assert IRREVOCABLE["name"] in [c["name"] for c in kept["spec"]["commitments"]]


def test_a_revoked_refrain_lets_the_action_run(
    cluster: Cluster, namespace: str, e2e_ledger: Ledger, tmp_path: Path
) -> None:
    """A revocation is not only a ledger state: the capability layer stops applying the
    refrain, so the restart it forbade runs. It ends with its Mind object."""
    hold = {"name": "hold-atlas", "mode": "refrain", "capability": "service.restart",
            "target": f"{namespace}/atlas-worker"}  # fmt: skip
    deployment(cluster, namespace)
    allow = [{"capability": "service.restart", "decision": "allow"}]
    mind(cluster, namespace, MIND, cycleIntervalSeconds=5, capabilityPolicy=allow,
         commitments=[hold])  # fmt: skip
    apply(cluster, operator_plan(namespace, "held", [restart_step("P1", namespace)]))
    wait_phase(cluster, namespace, "held", "failed", timeout=90)
    [held] = plan_body(cluster, namespace, "held")["status"]["steps"]
    assert "commitments[0] (hold-atlas) refrains" in held["reason"]

    admin = user_kubeconfig(cluster, namespace, "admin", tmp_path / "admin")
    revoked = run_as(admin, f"kubectl minds revoke {MIND} hold-atlas --reason 'freeze is over'")
    assert revoked.returncode == 0, revoked.stderr
    eventually(
        lambda: e2e_ledger.commitment_states(namespace, MIND).get("hold-atlas") == "revoked",
        what="hold-atlas revoked",
    )
    apply(cluster, operator_plan(namespace, "freed", [restart_step("P1", namespace)]))
    wait_phase(cluster, namespace, "freed", "completed", timeout=90)
    assert restarted_at(cluster, namespace) is not None

    # The revocation was that Mind's: one created again with the same refrain is bound by it,
    # and its state is judged afresh, not read back as revoked.
    cluster.kubectl("delete", "mind", MIND, "-n", namespace, "--timeout=60s")
    mind(cluster, namespace, MIND, cycleIntervalSeconds=5, capabilityPolicy=allow,
         commitments=[hold])  # fmt: skip
    eventually(
        lambda: e2e_ledger.commitment_states(namespace, MIND).get("hold-atlas") == "active",
        what="hold-atlas active again",
    )
    apply(cluster, operator_plan(namespace, "held-again", [restart_step("P1", namespace)]))
    wait_phase(cluster, namespace, "held-again", "failed", timeout=90)


def test_deleting_a_mind_does_not_end_its_irrevocable_promise(
    cluster: Cluster, namespace: str, e2e_ledger: Ledger
) -> None:
    """Delete and create again is not a way out of a promise: the new Mind of the same name
    keeps the earlier object's irrevocable `refrain`, says so in a Warning Event, and the
    capability layer refuses the restart, naming the promise and the object that made it."""
    freeze = {**IRREVOCABLE, "name": "freeze-atlas", "target": f"{namespace}/atlas-worker"}
    allow = [{"capability": "service.restart", "decision": "allow"}]
    deployment(cluster, namespace)
    mind(cluster, namespace, MIND, capabilityPolicy=allow, commitments=[freeze])
    first = cluster.api.get("mind", MIND, namespace)
    uid = first["metadata"]["uid"]
    eventually(
        lambda: e2e_ledger.events(namespace=namespace, mind=MIND, type="mind_registered"),
        what="the first Mind registered",
    )
    cluster.kubectl("delete", "mind", MIND, "-n", namespace, "--timeout=60s")
    mind(cluster, namespace, MIND, capabilityPolicy=allow)  # created again, without it

    told = eventually(
        lambda: "PromiseKept" in (seen := kube_events(cluster, namespace, MIND)) and seen,
        what="the PromiseKept Event",
    )
    assert f"made by the Mind {MIND} of uid {uid}" in told
    [kept] = e2e_ledger.events(namespace=namespace, mind=MIND, type="promise_kept")
    assert kept.payload["commitment"]["name"] == "freeze-atlas"  # type: ignore[index]

    apply(cluster, operator_plan(namespace, "restart-atlas", [restart_step("P1", namespace)]))
    wait_phase(cluster, namespace, "restart-atlas", "failed", timeout=90)
    [refused] = plan_body(cluster, namespace, "restart-atlas")["status"]["steps"]
    assert "promise freeze-atlas (irrevocable, made by the Mind keeper of uid " in refused["reason"]
    assert restarted_at(cluster, namespace) is None


# -- docs/execution.md, "Correcting a mind", as written ------------------------------------------

EXECUTION_DOC = REPO / "docs" / "execution.md"


def test_every_command_in_correcting_a_mind_works(
    cluster: Cluster, namespace: str, e2e_ledger: Ledger, tmp_path: Path
) -> None:
    setup_mind(cluster, namespace, cycleIntervalSeconds=5, commitments=[REVOCABLE, SECOND])
    plans = {"kubectl minds": asked(cluster, namespace, "by-command")}
    plans["kubectl patch"] = asked(cluster, namespace, "by-patch")
    first, second = (form_intention(e2e_ledger, namespace) for _ in range(2))
    for intention in (first, second):
        e2e_ledger.transition_intention(
            intention.id, IntentionStatus.BLOCKED, "waiting", intention.updated_at
        )
    configs = {
        ctx: user_kubeconfig(cluster, namespace, ctx, tmp_path / ctx)
        for ctx in ("admin", "approver")
    }
    for command in sh_commands(EXECUTION_DOC, section="Correcting a mind"):
        # The command, or the patch behind it, each on its own object.
        by_command = command.startswith("kubectl minds")
        on_plan = "plan <plan>" in command
        line = (
            command.replace("<plan>", "by-command" if by_command else "by-patch")
            .replace("<mind>", MIND)
            .replace("<intention>", first.id if by_command else second.id)
            .replace("<commitment>", REVOCABLE["name"] if by_command else SECOND["name"])
            .replace("<your username>", "approver" if on_plan else "admin")
        )
        assert "<" not in line, f"unsubstituted placeholder in {command!r}"
        proc = run_as(configs["approver" if on_plan else "admin"], line)
        assert proc.returncode == 0, f"{command}\n{proc.stdout}\n{proc.stderr}"

    for plan in ("by-command", "by-patch"):
        assert wait_phase(cluster, namespace, plan, "abandoned")["reason"] == (
            "cancelled by approver: handled by hand"
        )
    intention_status(e2e_ledger, first.id, IntentionStatus.ABANDONED)
    resumed_by(e2e_ledger, namespace, second.id, "admin")
    eventually(
        lambda: (
            {
                name: state
                for name, state in e2e_ledger.commitment_states(namespace, MIND).items()
                if state == "revoked"
            }
            == {REVOCABLE["name"]: "revoked", SECOND["name"]: "revoked"}
        ),
        what="both commitments revoked",
    )


# -- in the world: the mind does not plan again what a person cancelled ------------------------


def plans_of(cluster: Cluster, namespace: str) -> list[str]:
    items = cluster.api.list("plans", namespace)
    return [item["metadata"]["name"] for item in items["items"]]


@pytest.mark.usefixtures("world_controller")
def test_a_cancelled_plan_of_the_mind_is_not_planned_again_at_once(
    world: Cluster, world_namespace: str, e2e_ledger: Ledger, tmp_path: Path
) -> None:
    cluster, namespace = world, world_namespace
    deployment(cluster, namespace)
    rollout_status(cluster, namespace)
    break_pods(cluster, namespace)
    asking_keeper(cluster, namespace, MIND)
    [plan] = eventually(lambda: plans_of(cluster, namespace), timeout=90, what="a plan")
    approval = wait_step(cluster, namespace, plan, "P1", "awaiting_approval")["approvalRef"]

    config = user_kubeconfig(cluster, namespace, "approver", tmp_path / "approver")
    done = run_as(config, f"kubectl minds cancel plan {plan} --reason 'restarting it by hand'")
    assert done.returncode == 0, done.stderr
    wait_phase(cluster, namespace, plan, "abandoned")
    phase(cluster, namespace, approval, "Withdrawn")
    intention = intention_of(e2e_ledger, cluster, namespace, plan)
    intention_status(e2e_ledger, intention.id, IntentionStatus.ABANDONED)
    [applied] = eventually(
        lambda: e2e_ledger.events(namespace=namespace, type="plan_cancel_applied"),
        what="the cancelled plan's wants suppressed",
    )
    assert applied.payload["suppressed"]
    suppressed = [
        d
        for d in e2e_ledger.decisions(namespace=namespace, mind=MIND, kind="suppression")
        if "cancelled by approver" in d.data["reason"]
    ]
    assert suppressed

    # Several cycles later, the workload still broken: no new plan, no new request. (Cycles
    # that decide nothing are counted in a series, not a row each: count both.)
    def cycles() -> int:
        return cycles_completed(e2e_ledger, namespace, MIND)

    seen = cycles()
    eventually(lambda: cycles() >= seen + 4, timeout=120, what="four more cycles")
    assert plans_of(cluster, namespace) == [plan]
    listed = cluster.api.list("approvals", namespace)
    assert [a["metadata"]["name"] for a in listed["items"]] == [approval]

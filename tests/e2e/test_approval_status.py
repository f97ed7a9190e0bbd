"""Status never authorises: an Approval's phase is the controller's reading of the ledger, and
a phase written by anyone else (the cluster admin, or the controller's own ServiceAccount
token in other hands) is put back, never acted on, never overturns a person's decision and
never completes a step. Real API server, Postgres and controller; the admission guard on
status subresources is taken out of the way (``no_status_guard``) so that the controller's
own rule is what is tested."""

from __future__ import annotations

import json
from datetime import UTC, datetime

import pytest

from minds.adapters.ledger import Ledger
from minds.devenv.controller import ControllerHandle
from tests.e2e.approval_support import (
    PATHS,
    PLAN,
    WRITERS,
    approval,
    as_writer,
    asked,
    decide,
    forge,
    lifecycle,
    no_status_guard,  # noqa: F401  (a fixture, used by name)
    phase,
    restarted_at,
    setup_mind,
    stamp,
)
from tests.e2e.executor_support import wait_step
from tests.fixtures.cluster import Cluster, ControllerFactory, paused
from tests.fixtures.waiting import eventually

pytestmark = [
    pytest.mark.minutes(2),
    pytest.mark.usefixtures("session_controller", "no_status_guard"),
]


def forged(phase_: str) -> dict[str, str]:
    """A status as a forger would write it, with every field that looks like evidence."""
    now = stamp(datetime.now(UTC))
    return {
        "phase": phase_,
        "decidedAt": now,
        "executedAt": now,
        "execution": "4242",
        "message": "approved (trust me)",
    }


@pytest.mark.parametrize("how", PATHS)
@pytest.mark.parametrize("who", WRITERS)
def test_an_approved_status_without_a_decision_never_acts(
    cluster: Cluster, namespace: str, e2e_ledger: Ledger, who: str, how: str
) -> None:
    setup_mind(cluster, namespace)
    name = asked(cluster, namespace)
    uid = phase(cluster, namespace, name, "Pending")["metadata"]["uid"]

    forge(cluster, namespace, name, forged("Approved"), who, how)
    # The controller reads the write and shows again what the ledger says.
    back = phase(cluster, namespace, name, "Pending")
    assert "trust me" not in str(back["status"])
    assert wait_step(cluster, namespace, PLAN, "P1", "awaiting_approval")

    # Then a person refuses: the step ends, and had the forged phase let it act, it would
    # have acted by now. It did not.
    assert decide(cluster, namespace, name, "Denied", "approver").returncode == 0
    failed = wait_step(cluster, namespace, PLAN, "P1", "failed")
    assert "denied" in failed["reason"]
    assert "approval_approved" not in lifecycle(e2e_ledger, uid)
    assert e2e_ledger.executions(namespace=namespace) == []
    assert restarted_at(cluster, namespace) is None


@pytest.mark.parametrize("ended", ["Denied", "Expired", "Withdrawn"])
def test_an_ended_status_is_put_back_and_the_person_still_decides(
    cluster: Cluster, namespace: str, e2e_ledger: Ledger, ended: str
) -> None:
    """A forged end would otherwise keep people from deciding (admission refuses a decision
    on an Approval that is no longer Pending) and fail the step."""
    setup_mind(cluster, namespace)
    name = asked(cluster, namespace)
    uid = phase(cluster, namespace, name, "Pending")["metadata"]["uid"]

    forge(cluster, namespace, name, forged(ended), "admin", "patch")
    phase(cluster, namespace, name, "Pending")
    assert lifecycle(e2e_ledger, uid) == {"approval_requested"}

    assert decide(cluster, namespace, name, "Approved", "approver").returncode == 0
    done = phase(cluster, namespace, name, "Executed")
    [row] = e2e_ledger.executions(namespace=namespace)
    assert done["status"]["execution"] == str(row.id)
    assert restarted_at(cluster, namespace) is not None


@pytest.mark.parametrize("who", WRITERS)
def test_an_executed_status_neither_completes_the_step_nor_acts_twice(
    cluster: Cluster, namespace: str, e2e_ledger: Ledger, who: str
) -> None:
    setup_mind(cluster, namespace)
    name = asked(cluster, namespace)
    phase(cluster, namespace, name, "Pending")

    forge(cluster, namespace, name, forged("Executed"), who, "replace")
    phase(cluster, namespace, name, "Pending")
    assert wait_step(cluster, namespace, PLAN, "P1", "awaiting_approval")
    assert restarted_at(cluster, namespace) is None

    assert decide(cluster, namespace, name, "Approved", "approver").returncode == 0
    done = phase(cluster, namespace, name, "Executed")
    [row] = e2e_ledger.executions(namespace=namespace)
    first_restart = restarted_at(cluster, namespace)
    assert first_restart is not None

    # Once executed, a forged phase is put back too, and nothing runs again.
    for again in ("Approved", "Executed"):
        forge(cluster, namespace, name, forged(again), who, "patch")

        def put_back() -> bool:
            status = approval(cluster, namespace, name)["status"]
            return (
                status["phase"] == "Executed"
                and status.get("execution") == str(row.id)
                and "trust me" not in str(status.get("message"))
            )

        eventually(put_back, what=f"the real execution shown again after a forged {again}")
    assert len(e2e_ledger.executions(namespace=namespace)) == 1
    assert restarted_at(cluster, namespace) == first_restart
    assert done["status"]["execution"] == str(row.id)


@pytest.mark.parametrize("who", WRITERS)
def test_status_does_not_overturn_a_denial(
    cluster: Cluster,
    namespace: str,
    e2e_ledger: Ledger,
    session_controller: ControllerHandle,
    e2e_database_url: str,
    controller_factory: ControllerFactory,
    who: str,
) -> None:
    """The worst order: a person denies while the controller is down, and the status says
    Approved before the controller ever reads the denial."""
    setup_mind(cluster, namespace)
    name = asked(cluster, namespace)
    uid = phase(cluster, namespace, name, "Pending")["metadata"]["uid"]
    with paused(session_controller, cluster, e2e_database_url):
        assert decide(cluster, namespace, name, "Denied", "approver", note="no").returncode == 0
        forge(cluster, namespace, name, forged("Approved"), who, "patch")
        controller_factory("after-denial")
        phase(cluster, namespace, name, "Denied")
        failed = wait_step(cluster, namespace, PLAN, "P1", "failed")
    assert "denied" in failed["reason"]
    assert "approval_approved" not in lifecycle(e2e_ledger, uid)
    assert e2e_ledger.executions(namespace=namespace) == []
    assert restarted_at(cluster, namespace) is None


@pytest.mark.parametrize("who", WRITERS)
def test_a_plan_status_pointing_at_another_plans_approval_does_not_act(
    cluster: Cluster, namespace: str, e2e_ledger: Ledger, who: str
) -> None:
    """The Plan's status names the Approval a step waits on; pointing it at an Approval that a
    person approved for another plan lends that plan's authority to nobody."""
    setup_mind(cluster, namespace)
    approved = asked(cluster, namespace)
    # Both ask before anything acts: once one restarted the workload, the other's restart
    # would be covered by it and ask nobody.
    waiting = asked(cluster, namespace, plan="other")
    assert decide(cluster, namespace, approved, "Approved", "approver").returncode == 0
    phase(cluster, namespace, approved, "Executed")
    first_restart = restarted_at(cluster, namespace)
    assert first_restart is not None

    pointed = [{"op": "replace", "path": "/status/steps/0/approvalRef", "value": approved}]
    target = ("plan", "other", "-n", namespace, "--subresource=status", "--type=json")
    eventually(
        lambda: (
            as_writer(cluster, who, "patch", *target, "-p", json.dumps(pointed)).returncode == 0
        ),
        what=f"{who} points the step at another plan's approval",
    )
    failed = wait_step(cluster, namespace, "other", "P1", "failed")
    assert "not this step's approval" in failed["reason"]
    # Its own request ends with the plan that failed; nobody decided it.
    phase(cluster, namespace, waiting, "Withdrawn")
    assert len(e2e_ledger.executions(namespace=namespace)) == 1
    assert restarted_at(cluster, namespace) == first_restart

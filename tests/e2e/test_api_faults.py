"""The API server fails the controller's writes (a 500, a 429 of its priority and fairness, a
409 of a write that raced another): the work queue tries the work again, and the person's
decision still acts exactly once. The faults are injected into the controller's own client
(``minds.adapters.kube.faults``) before the requests reach the real API server; Postgres, the
API server and the controller are real."""

from __future__ import annotations

import pytest

from minds.adapters.kube.faults import ENV
from minds.adapters.ledger import Ledger
from tests.e2e.approval_support import PLAN, asked, decide, phase, restarted_at, setup_mind
from tests.e2e.executor_support import wait_phase
from tests.fixtures.cluster import Cluster, ControllerFactory
from tests.fixtures.metrics import samples, scrape
from tests.fixtures.waiting import eventually

pytestmark = [pytest.mark.minutes(2)]


# The session controller is paused: it would act on the decision itself, unhindered, and leave
# the faulty controller some of its faults unmet (it did, once, on a loaded machine).
@pytest.mark.usefixtures("alone")
@pytest.mark.parametrize(
    ("fault", "retried"),
    [
        # The plan's status writes (admission, the asking, the claim) fail three times.
        ("PUT:/plans/:500:3", True),
        # The Approval's status writes (shown Approved, then Executed) fail twice: throttled.
        ("PUT:/approvals/:429:2", True),
        # A conflict is no failure: the write reads the object again and decides again.
        ("PUT:/plans/:409:3", False),
    ],
)
def test_a_decision_acts_exactly_once_through_failed_writes(
    cluster: Cluster,
    namespace: str,
    controller_factory: ControllerFactory,
    e2e_ledger: Ledger,
    fault: str,
    retried: bool,
) -> None:
    setup_mind(cluster, namespace)
    controller = controller_factory("faults", extra_env={ENV: fault})
    name = asked(cluster, namespace)
    assert decide(cluster, namespace, name, "Approved", "approver").returncode == 0
    phase(cluster, namespace, name, "Executed", timeout=120)
    wait_phase(cluster, namespace, PLAN, "completed", timeout=120)
    count = int(fault.rsplit(":", 1)[1])
    eventually(
        lambda: controller.log().count("injected fault: ") == count,
        what=f"the {count} injected faults met",
    )
    assert restarted_at(cluster, namespace) is not None
    [execution] = e2e_ledger.executions(namespace=namespace, capability="service.restart")
    assert execution.origin.attempt == 1
    retries = sum(samples(scrape(controller.metrics_url)).get("minds_retries_total", {}).values())
    assert (retries > 0) is retried, controller.log()[-3000:]

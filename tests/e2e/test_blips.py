"""The ledger's database goes away for a moment (a failover, a restart of Postgres) while the
controller handles a watch event. kopf never retries an ``on.event`` handler: without the
controller's work queue (``minds.controller.queue``), which tries failed work again with
backoff, the work that event started would wait for another event on the same object, which
may never come. Real API server, Postgres and a
controller of the test's own, whose log is read."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import pytest
from psycopg import sql
from sqlalchemy.engine import make_url

from minds.adapters.ledger import Ledger
from tests.e2e.approval_support import asked, decide, phase, restarted_at, setup_mind
from tests.e2e.executor_support import apply, mind, operator_plan, wait_phase
from tests.fixtures.cluster import Cluster, ControllerFactory
from tests.fixtures.metrics import labels, samples, scrape
from tests.fixtures.postgres import LedgerDatabase, connect
from tests.fixtures.waiting import eventually

pytestmark = [pytest.mark.minutes(1), pytest.mark.usefixtures("alone")]


@contextmanager
def ledger_down(database: LedgerDatabase) -> Iterator[None]:
    """No new connection to the ledger's database, and every open one cut, until the block
    ends: what a restart of Postgres looks like to its clients."""
    url = make_url(database.admin_url)
    name = url.database
    assert name
    allow = "ALTER DATABASE {} ALLOW_CONNECTIONS {}"
    # From the server's maintenance database: a database cannot lock out its own session.
    elsewhere = url.set(database="postgres").render_as_string(hide_password=False)
    with connect(elsewhere, autocommit=True) as admin:
        admin.execute(sql.SQL(allow).format(sql.Identifier(name), sql.SQL("false")))
        try:
            admin.execute(
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = %s",
                (name,),
            )
            yield
        finally:
            admin.execute(sql.SQL(allow).format(sql.Identifier(name), sql.SQL("true")))


def test_a_plan_applied_while_the_ledger_is_down_runs_once_it_is_back(
    cluster: Cluster,
    namespace: str,
    controller_factory: ControllerFactory,
    e2e_ledger_database: LedgerDatabase,
) -> None:
    """Its admission fails (the ledger is written before the status), is tried again with
    backoff, and the plan runs: nobody touches it again."""
    mind(cluster, namespace)
    controller = controller_factory("blip")
    wait = {"key": "W1", "title": "wait a moment", "kind": "wait", "waitSeconds": 1}
    with ledger_down(e2e_ledger_database):
        apply(cluster, operator_plan(namespace, "through", [wait]))
        eventually(
            lambda: "admission failed (1 in a row)" in controller.log(),
            timeout=60,
            what="the admission failed while the ledger was down",
        )
    wait_phase(cluster, namespace, "through", "completed", timeout=120)
    counted = samples(scrape(controller.metrics_url))["minds_retries_total"]
    assert counted[labels(work="admission")] >= 1


def test_a_decision_made_while_the_ledger_is_down_acts_once_it_is_back(
    cluster: Cluster,
    namespace: str,
    controller_factory: ControllerFactory,
    e2e_ledger_database: LedgerDatabase,
    e2e_ledger: Ledger,
) -> None:
    """The Approval's handler fails and is tried again; the asking plan, woken by the same
    decision, fails its tick and looks again too: whichever gets there first, the restart
    runs once."""
    setup_mind(cluster, namespace)
    controller = controller_factory("blip")
    name = asked(cluster, namespace)
    with ledger_down(e2e_ledger_database):
        assert decide(cluster, namespace, name, "Approved", "approver").returncode == 0
        eventually(
            lambda: "decision failed (1 in a row)" in controller.log(),
            timeout=60,
            what="the decision failed while the ledger was down",
        )
    phase(cluster, namespace, name, "Executed", timeout=120)
    counted = samples(scrape(controller.metrics_url))["minds_retries_total"]
    assert counted[labels(work="decision")] >= 1
    assert restarted_at(cluster, namespace) is not None
    [execution] = e2e_ledger.executions(namespace=namespace, capability="service.restart")
    assert execution.origin.attempt == 1

"""The write-ahead execution rows against a real Postgres."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime

import psycopg
import pytest
from sqlalchemy import text
from sqlalchemy.exc import DBAPIError

from minds.adapters.ledger import APPEND_ONLY_SQLSTATE, Ledger
from minds.domain.executions import (
    ExecutionOrigin,
    ExecutionOutcome,
    ExecutionRecord,
    ExecutionStatus,
)

pytestmark = pytest.mark.integration
NOW = datetime(2026, 12, 2, tzinfo=UTC)


def record(origin: ExecutionOrigin, **kw: object) -> ExecutionRecord:
    return ExecutionRecord(
        origin_key=origin.key(),
        mind="keeper",
        namespace="ns",
        capability="service.restart",
        target="ns/atlas-worker",
        parameters={"namespace": "ns", "name": "atlas-worker", "apiToken": "hunter2"},
        origin=origin,
        started_at=NOW,
        **kw,
    )


def test_one_write_ahead_row_per_origin_even_under_races(ledger: Ledger) -> None:
    origin = ExecutionOrigin(approval="a", approval_uid="uid-1")
    with ThreadPoolExecutor(8) as pool:
        results = list(pool.map(lambda _: ledger.begin_execution(record(origin)), range(16)))
    assert sum(1 for _, inserted in results if inserted) == 1
    assert len({r.id for r, _ in results}) == 1
    assert len(ledger.executions(namespace="ns")) == 1


def test_outcome_once_and_unknown_until_written(ledger: Ledger) -> None:
    origin = ExecutionOrigin(plan="p", plan_uid="u", step="P1", attempt=1)
    row, _ = ledger.begin_execution(record(origin))
    assert row.id is not None
    found = ledger.execution(origin.key())
    assert found is not None
    assert found[1] is None  # outcome unknown: the act may or may not have happened
    outcome = ExecutionOutcome(
        execution_id=row.id,
        status=ExecutionStatus.EXECUTED,
        summary="restart requested (health not yet verified)",
        finished_at=NOW,
    )
    assert ledger.finish_execution(outcome)
    assert not ledger.finish_execution(outcome)
    found = ledger.execution(origin.key())
    assert found is not None
    assert found[1] is not None
    assert found[1].status is ExecutionStatus.EXECUTED


def test_parameters_are_masked(ledger: Ledger) -> None:
    origin = ExecutionOrigin(cycle="c1")
    ledger.begin_execution(record(origin))
    [row] = ledger.executions(namespace="ns")
    assert row.parameters["apiToken"] == "***"


@pytest.mark.parametrize("table", ["executions", "execution_outcomes"])
@pytest.mark.parametrize("statement", ["UPDATE {t} SET id = id", "DELETE FROM {t}"])
def test_execution_tables_are_append_only(owner_ledger: Ledger, table: str, statement: str) -> None:
    # As the owner: the application may not even try (see test_ledger_roles).
    with pytest.raises(DBAPIError) as caught, owner_ledger.session() as session:
        session.execute(text(statement.format(t=table)))
    cause = caught.value.orig
    assert isinstance(cause, psycopg.Error)
    assert cause.sqlstate == APPEND_ONLY_SQLSTATE

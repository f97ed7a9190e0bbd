"""What reaches the ledger's tables in Postgres is masked: payloads, notes and outcomes.

Each test reads the stored row back as text straight from the database, so a value that was
masked only on the way out (or only in one column) would show.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime

import psycopg
import pytest
from sqlalchemy import make_url

from minds.adapters.ledger import Ledger
from minds.domain.executions import (
    ExecutionOrigin,
    ExecutionOutcome,
    ExecutionRecord,
    ExecutionStatus,
)
from minds.domain.ledger import MASK, EventRecord, idempotency_key

pytestmark = pytest.mark.integration
T0 = datetime(2026, 12, 3, 9, 0, tzinfo=UTC)

NOTE = (
    "asked alice@example.com to check; she retried with "
    "Authorization: Bearer 5f2b8c1e9d7a4b3c6e0f and it worked"
)
SECRETS = ["alice@example.com", "5f2b8c1e9d7a4b3c6e0f", "hunter2"]


@pytest.fixture
def raw(migrated_database_url: str) -> Iterator[psycopg.Connection]:
    url = make_url(migrated_database_url).set(drivername="postgresql")
    with psycopg.connect(url.render_as_string(hide_password=False), autocommit=True) as conn:
        yield conn


def stored(raw: psycopg.Connection, query: str) -> str:
    rows = raw.execute(query).fetchall()
    assert rows, query
    return "\n".join(str(value) for row in rows for value in row)


def test_an_event_payload_is_stored_masked(ledger: Ledger, raw: psycopg.Connection) -> None:
    ledger.append_event(
        EventRecord.model_validate(
            {
                "mind": "keeper",
                "namespace": "ops",
                "type": "observation_recorded",
                "subject": {"kind": "Deployment", "name": "atlas"},
                "payload": {
                    "note": NOTE,
                    "observed": {
                        "env": [
                            {"name": "DB_PASSWORD", "value": "hunter2"},
                            {"name": "LOG_LEVEL", "value": "info"},
                        ]
                    },
                },
                "occurred_at": T0,
                "idempotency_key": idempotency_key("masking", "event"),
            }
        )
    )
    text = stored(raw, "SELECT payload::text FROM events")
    for secret in SECRETS:
        assert secret not in text
    [event] = ledger.events()
    assert event.payload == {
        "note": (
            "asked [email] to check; she retried with Authorization: Bearer [token] and it worked"
        ),
        "observed": {
            "env": [
                {"name": "DB_PASSWORD", "value": MASK},
                {"name": "LOG_LEVEL", "value": "info"},
            ]
        },
    }


def test_an_execution_outcome_is_stored_masked(ledger: Ledger, raw: psycopg.Connection) -> None:
    origin = ExecutionOrigin(cycle="c-masking")
    row, _ = ledger.begin_execution(
        ExecutionRecord(
            origin_key=origin.key(),
            mind="keeper",
            namespace="ops",
            capability="service.restart",
            target="ops/atlas",
            parameters={"name": "atlas", "note": NOTE},
            origin=origin,
            started_at=T0,
        )
    )
    assert row.id is not None
    ledger.finish_execution(
        ExecutionOutcome(
            execution_id=row.id,
            status=ExecutionStatus.FAILED,
            summary=f"restart failed; {NOTE}",
            output={"log": ["DB_PASSWORD=hunter2", "user alice@example.com"]},
            error="connect postgres://app:hunter2@db:5432/app refused",
            finished_at=T0,
        )
    )
    text = stored(raw, "SELECT parameters::text FROM executions") + stored(
        raw, "SELECT summary, output::text, error FROM execution_outcomes"
    )
    for secret in SECRETS:
        assert secret not in text
    assert "postgres://app:[secret]@db:5432/app refused" in text


def test_a_note_on_evidence_is_stored_masked(ledger: Ledger, raw: psycopg.Connection) -> None:
    belief = ledger.upsert_belief("ops", "keeper", "restarts heal atlas", 0.8, T0)
    ledger.add_evidence(
        belief.id, supports=True, weight=1.0, key="e-1", at=T0, note=f"{NOTE}; pwd: hunter2"
    )
    text = stored(raw, "SELECT note FROM belief_evidence") + stored(
        raw, "SELECT payload::text FROM events"
    )
    for secret in SECRETS:
        assert secret not in text
    [evidence] = ledger.belief_evidence(belief.id)
    assert evidence.note.endswith("Bearer [token] and it worked; pwd: [secret]")


def test_an_intention_reason_is_stored_masked_and_a_replay_writes_nothing(
    ledger: Ledger, raw: psycopg.Connection
) -> None:
    from minds.domain.intentions import IntentionStatus
    from tests.integration.test_ledger_intentions import intention

    ledger.form_intention(intention("int-masked"))
    moved = ledger.transition_intention("int-masked", IntentionStatus.BLOCKED, NOTE, T0)
    again = ledger.transition_intention("int-masked", IntentionStatus.BLOCKED, NOTE, T0)
    assert moved is not None
    assert again is not None
    assert again.version == moved.version
    text = stored(raw, "SELECT reason FROM intentions") + stored(
        raw, "SELECT payload::text FROM events WHERE type LIKE 'intention_%'"
    )
    for secret in SECRETS[:2]:
        assert secret not in text


def test_a_commitment_reason_is_stored_masked(ledger: Ledger, raw: psycopg.Connection) -> None:
    assert ledger.set_commitment_state("ops", "keeper", "no-restarts", "violated", NOTE, T0)
    text = stored(raw, "SELECT reason FROM commitment_states") + stored(
        raw, "SELECT payload::text FROM events WHERE type LIKE 'commitment_%'"
    )
    for secret in SECRETS[:2]:
        assert secret not in text

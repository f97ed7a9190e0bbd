"""Text Postgres cannot store never makes a ledger row unwritable.

Admission refuses NUL (U+0000) wherever a person writes text; what slips past it (a value
stored before the policy, a line a workload logged) is stored with ␀ in its place, in keys as
in values, and the rows written beside it are not lost.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime

import psycopg
import pytest
from sqlalchemy import make_url

from minds.adapters.ledger import Ledger
from minds.domain.free_form import NUL_SHOWN
from minds.domain.ledger import EventRecord, MindRecord, SubjectRef, idempotency_key

pytestmark = pytest.mark.integration
T0 = datetime(2026, 12, 3, 9, 0, tzinfo=UTC)


@pytest.fixture
def raw(migrated_database_url: str) -> Iterator[psycopg.Connection]:
    url = make_url(migrated_database_url).set(drivername="postgresql")
    with psycopg.connect(url.render_as_string(hide_password=False), autocommit=True) as conn:
        yield conn


def _event(name: str, payload: dict[str, object]) -> EventRecord:
    return EventRecord.model_validate(
        {
            "mind": name,
            "namespace": "ops",
            "type": "approval_approved",
            "subject": SubjectRef(kind="Approval", name=name),
            "payload": payload,
            "occurred_at": T0,
            "idempotency_key": idempotency_key(name),
        }
    )


def test_nul_in_a_payload_is_stored_shown_and_the_rows_beside_it_are_kept(
    ledger: Ledger, raw: psycopg.Connection
) -> None:
    hostile = _event("hostile", {"note": "ok\x00then", "x\x00y": ["a\x00"], "decidedBy": "b\x00"})
    written = ledger.append_events([hostile, _event("unrelated", {"note": "fine"})])

    assert written == [True, True]
    rows = dict(raw.execute("SELECT mind, payload::text FROM events").fetchall())
    assert set(rows) == {"hostile", "unrelated"}
    assert f"ok{NUL_SHOWN}then" in rows["hostile"]
    assert f"x{NUL_SHOWN}y" in rows["hostile"]
    assert f"b{NUL_SHOWN}" in rows["hostile"]


def test_a_mind_whose_spec_holds_nul_is_recorded(ledger: Ledger, raw: psycopg.Connection) -> None:
    spec = {"goals": [{"name": "g", "description": "up\x00", "subject": {"name": "atlas"}}]}
    record = MindRecord(
        namespace="ops",
        name="keeper",
        uid="uid-1",
        generation=1,
        spec=spec,
        registered_at=T0,
        updated_at=T0,
    )

    ledger.upsert_mind(record)

    (text,) = raw.execute("SELECT spec::text FROM minds").fetchone() or ("",)
    assert f"up{NUL_SHOWN}" in text

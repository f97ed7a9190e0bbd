"""Routine that changes nothing costs almost nothing, on the real ledger: a simulated day (a
cycle a minute, the clock the test's) of a mind whose goal stays healthy writes at most 100
rows, counted per table; one whose goal breaks and heals every hour writes what its changes
need; the series goes on across a controller's restart and loses one look to a crash between
looking and recording; `why` and `timeline` read it back as they read everything else."""

from __future__ import annotations

import re
from collections.abc import Iterator
from datetime import datetime, timedelta

import pytest
from sqlalchemy import text

from minds.adapters.ledger import Ledger
from minds.devenv.install import repo_root
from minds.domain.ledger_seal import SealingKey
from minds.domain.series import CUT_EVERY, SERIES_CLOSED, SERIES_CUT
from tests.unit.engine.routine import (
    MINUTE,
    WORKLOAD,
    broken_once,
    crash_after_a_look,
    cycles,
    keeper,
    looks,
    once_degraded,
    recorded_looks,
    run,
    timeline,
    why_the_restart,
)

pytestmark = pytest.mark.integration

DAY = 24 * 60
#: What docs/ledger.md says a day costs, which this test measures.
DOC = (repo_root() / "docs" / "ledger.md").read_text()


def rows(ledger: Ledger) -> dict[str, int]:
    """Rows in every table of the ledger (none is ever deleted: a count is what was inserted)."""
    with ledger.engine.connect() as connection:
        # Each table once: a partitioned table counts its partitions' rows, which the
        # application role reads through it (it holds nothing on a partition itself).
        tables = connection.execute(
            text(
                "SELECT c.relname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace "
                "WHERE n.nspname = current_schema() AND c.relkind IN ('r', 'p') "
                "AND NOT c.relispartition AND c.relname <> 'alembic_version' ORDER BY c.relname"
            )
        ).scalars()
        return {
            # The names are the database's own tables, never input.
            table: int(
                connection.execute(text(f'SELECT count(*) FROM "{table}"')).scalar_one()  # noqa: S608
            )
            for table in tables
        }


def written(before: dict[str, int], after: dict[str, int]) -> dict[str, int]:
    return {table: after[table] - before[table] for table in after if after[table] > before[table]}


def documented(what: str) -> int:
    """The number docs/ledger.md gives for ``what`` (the table's row of it)."""
    found = re.search(rf"^\| {re.escape(what)} \| ([\d,]+) \|", DOC, re.MULTILINE)
    assert found, f"docs/ledger.md has no row for {what!r}"
    return int(found.group(1).replace(",", ""))


@pytest.fixture
def sealed(migrated_database_url: str) -> Iterator[Ledger]:
    """The ledger as a controller with its key writes it: every chained row sealed."""
    with Ledger.from_url(migrated_database_url, SealingKey("k1", b"k" * 32)) as store:
        yield store


def test_an_idle_healthy_goal_writes_at_most_100_rows_a_day(sealed: Ledger) -> None:
    ledger = sealed
    world = keeper(ledger)
    once_degraded(world)  # as the demo's mind: each look is evidence about a held belief
    before = rows(ledger)
    run(world, DAY)
    day = written(before, rows(ledger))
    print(f"\nan idle healthy goal, a day at a 60 s cycle: {sum(day.values())} rows {day}")
    assert sum(day.values()) <= 100, day
    assert sum(day.values()) == documented("an idle healthy goal"), day
    # One look a minute, 1,440 of them: one series whose count is all of them.
    # The first look moved the belief (0.99 to 0.44), the second too (to 0.01): two in full.
    assert (looks(world).count, cycles(world).count, recorded_looks(world)) == (DAY - 1, DAY, 2)


def test_a_goal_that_breaks_and_heals_every_hour(sealed: Ledger) -> None:
    ledger = sealed
    world = keeper(ledger)
    start = world.clock.now
    before = rows(ledger)

    def hourly(now: datetime) -> str | None:
        return "degraded" if (now - start) % timedelta(hours=1) == timedelta(minutes=30) else None

    run(world, DAY, weather=hourly)
    day = written(before, rows(ledger))
    print(f"\na goal that breaks and heals every hour, a day: {sum(day.values())} rows {day}")
    assert world.driver.calls["service.restart"] == 24  # broke 24 times, healed 24 times
    assert sum(day.values()) == documented("a goal that breaks and heals every hour"), day


def test_the_series_goes_on_across_a_restart_of_the_controller(
    ledger: Ledger, migrated_database_url: str
) -> None:
    world = keeper(ledger)
    run(world, 30)
    # Another process: its own connections, its own engine, the same database.
    with Ledger.from_url(migrated_database_url) as other:
        world.ledger = other
        run(world, 30, engine=world.engine("restarted"))
    assert (looks(world).count, cycles(world).count, recorded_looks(world)) == (60, 60, 1)


def test_a_crash_between_looking_and_recording_loses_that_look_alone(
    ledger: Ledger, monkeypatch: pytest.MonkeyPatch
) -> None:
    world = keeper(ledger)
    run(world, 10)
    crash_after_a_look(world, monkeypatch)
    run(world, 10, engine=world.engine("next"))
    assert world.driver.calls["service.status"] == 21
    assert (looks(world).count, cycles(world).count, recorded_looks(world)) == (20, 20, 1)


def test_a_changed_look_is_its_own_row_and_why_and_timeline_say_so(ledger: Ledger) -> None:
    world = keeper(ledger)
    start = world.clock.now
    running = CUT_EVERY // MINUTE + 30  # long enough to be cut once before it closes
    broke = broken_once(world, running, 10)
    assert recorded_looks(world) == 1 + 3  # the change, then two looks that moved the belief

    told = [link.summary for link in why_the_restart(world)]
    assert any(
        s.startswith(f"service.status on {WORKLOAD}: observed once at {broke.isoformat()}")
        for s in told
    ), told
    assert (
        f"before it, service.status on {WORKLOAD}: observed running {running} times between "
        f"{start.isoformat()} and {(start + (running - 1) * MINUTE).isoformat()}: "
        f"Deployment {WORKLOAD} is running"
    ) in told, told

    items = timeline(world)
    summaries = [i["summary"] for i in items if i["what"] == "observation_series"]
    assert summaries[0] == (
        f"observed running {running} times between {start.isoformat()} and "
        f"{(start + (running - 1) * MINUTE).isoformat()}"
    )
    assert summaries[-1].endswith("(open)")
    looked = [i["at"] for i in items if i["what"] == "tool_executed"]
    assert broke.isoformat() in looked  # the changed look, an entry of its own
    # The series' own rows (a cut, the close) are folded into its line.
    assert {e.type for e in ledger.events(type=(SERIES_CUT, SERIES_CLOSED))} == {
        SERIES_CUT,
        SERIES_CLOSED,
    }
    assert not any(i["what"] in (SERIES_CUT, SERIES_CLOSED) for i in items)

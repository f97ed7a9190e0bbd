"""Work a watch event started is tried again until it succeeds (minds.controller.retrying),
over a fake of the scheduler's timers and a fixed random draw: kopf never retries an
``on.event`` handler, so without this one failure leaves an object waiting for an event that
may never come."""

from __future__ import annotations

import logging
from collections.abc import Callable
from datetime import UTC, datetime, timedelta

import pytest

from minds.controller.retrying import Retries
from minds.domain.backoff import Backoff
from minds.domain.errors import NotFound, Refused

NOW = datetime(2026, 1, 1, tzinfo=UTC)
KEY = ("team", "heal")
LOG = logging.getLogger("test.retrying")


class Timers:
    """The scheduler's one-shot timers, held for the test to fire."""

    def __init__(self) -> None:
        self.due: dict[tuple[str, str, str], tuple[datetime, Callable[[], None]]] = {}

    def at(self, kind: str, key: tuple[str, str], when: datetime, call: Callable[[], None]) -> None:
        self.due[(kind, *key)] = (when, call)  # replaces: one pending try per object

    def cancel(self, kind: str, key: tuple[str, str]) -> None:
        self.due.pop((kind, *key), None)

    def fire(self, kind: str) -> None:
        _, call = self.due.pop((kind, *KEY))
        call()


class Flaky:
    """Work that fails ``times`` times, then succeeds."""

    def __init__(self, times: int, error: Exception | None = None) -> None:
        self.left = times
        self.calls = 0
        self.error = error or ConnectionError("the database went away")

    def __call__(self) -> None:
        self.calls += 1
        if self.left:
            self.left -= 1
            raise self.error


def retries(timers: Timers, counted: list[str] | None = None) -> Retries:
    backoff = Backoff(base=0.5, cap=60.0, jitter=0.2)
    told = counted if counted is not None else []
    return Retries(timers, backoff, draw=lambda: 0.5, clock=lambda: NOW, retried=told.append)


def test_failed_work_is_tried_again_later_each_time_until_it_succeeds(
    caplog: pytest.LogCaptureFixture,
) -> None:
    timers, work, counted = Timers(), Flaky(3), []
    queue = retries(timers, counted)
    queue.run("admission", KEY, work, LOG)
    waits = []
    while ("retry admission", *KEY) in timers.due:
        waits.append(timers.due[("retry admission", *KEY)][0] - NOW)
        timers.fire("retry admission")
    assert work.calls == 4
    assert waits == [timedelta(seconds=0.5), timedelta(seconds=1), timedelta(seconds=2)]
    assert queue.pending() == 0
    assert counted == ["admission"] * 3
    assert "admission failed (3 in a row); trying again in 2.0 s" in caplog.text


def test_an_event_that_succeeds_first_cancels_the_pending_try() -> None:
    timers = Timers()
    queue = retries(timers)
    queue.run("decision", KEY, Flaky(1), LOG)
    assert ("retry decision", *KEY) in timers.due
    queue.run("decision", KEY, Flaky(0), LOG)
    assert timers.due == {}
    assert queue.pending() == 0


def test_one_object_holds_one_pending_try_per_kind_of_work() -> None:
    timers = Timers()
    queue = retries(timers)
    for _ in range(5):
        queue.run("decision", KEY, Flaky(1), LOG)
    queue.run("admission", KEY, Flaky(1), LOG)
    assert sorted(k[0] for k in timers.due) == ["retry admission", "retry decision"]
    assert queue.pending() == 2
    # Five failures in a row: the wait grew with them.
    assert timers.due[("retry decision", *KEY)][0] - NOW == timedelta(seconds=8)


@pytest.mark.parametrize("error", [NotFound("gone"), Refused("its namespace is being deleted")])
def test_gone_or_refused_work_is_not_tried_again(error: Exception) -> None:
    timers = Timers()
    queue = retries(timers)
    queue.run("decision", KEY, Flaky(1), LOG)
    queue.run("decision", KEY, Flaky(1, error), LOG)
    assert timers.due == {}
    assert queue.pending() == 0

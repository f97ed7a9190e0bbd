"""A repeated Event belongs to the series of the first, within the window and the memory."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from minds.adapters.kube.series import EventSeries, Key

T0 = datetime(2026, 12, 6, 9, 0, tzinfo=UTC)


def key(reason: str = "StepBlocked", message: str = "P1: blocked", uid: str = "u1") -> Key:
    return ("team", "Plan", uid, "Warning", reason, message)


def test_a_repeat_within_the_window_counts_on_the_first_event() -> None:
    series = EventSeries(window=timedelta(minutes=10))
    series.started(key(), "heal.abc", T0)

    second = series.repeat_of(key(), T0 + timedelta(minutes=4))
    third = series.repeat_of(key(), T0 + timedelta(minutes=13))  # 9 min after the second

    assert second is not None
    assert third is not None
    assert (second.name, second.count, second.first) == ("heal.abc", 2, T0)
    assert (third.name, third.count, third.last) == ("heal.abc", 3, T0 + timedelta(minutes=13))


def test_a_repeat_after_the_window_starts_a_new_series() -> None:
    series = EventSeries(window=timedelta(minutes=10))
    series.started(key(), "heal.abc", T0)

    assert series.repeat_of(key(), T0 + timedelta(minutes=10)) is None


def test_another_object_reason_or_message_is_another_event() -> None:
    series = EventSeries()
    series.started(key(), "heal.abc", T0)
    later = T0 + timedelta(seconds=1)

    assert series.repeat_of(key(uid="u2"), later) is None
    assert series.repeat_of(key(reason="StepFailed"), later) is None
    assert series.repeat_of(key(message="P2: blocked"), later) is None


def test_the_least_recently_seen_series_is_forgotten_first() -> None:
    series = EventSeries(kept=2)
    series.started(key(uid="a"), "a.1", T0)
    series.started(key(uid="b"), "b.1", T0)
    assert series.repeat_of(key(uid="a"), T0) is not None  # "a" seen again: "b" is older
    series.started(key(uid="c"), "c.1", T0)

    assert series.repeat_of(key(uid="b"), T0) is None
    assert series.repeat_of(key(uid="a"), T0) is not None
    assert series.repeat_of(key(uid="c"), T0) is not None


def test_a_forgotten_event_starts_a_new_series() -> None:
    series = EventSeries()
    series.started(key(), "heal.abc", T0)
    series.forget(key())

    assert series.repeat_of(key(), T0) is None

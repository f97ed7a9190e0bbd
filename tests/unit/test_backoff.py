"""The wait before failed work is tried again (minds.domain.backoff)."""

from __future__ import annotations

from itertools import pairwise

import pytest

from minds.domain.backoff import Backoff


def test_the_wait_doubles_with_each_failure_in_a_row_up_to_the_cap() -> None:
    backoff = Backoff(base=0.5, cap=60.0, jitter=0.0)
    waits = [backoff.delay(n, 0.5) for n in range(1, 10)]
    assert waits[:4] == [0.5, 1.0, 2.0, 4.0]
    assert waits[-1] == 60.0
    assert all(a <= b for a, b in pairwise(waits))


def test_jitter_spreads_a_wait_either_way_within_its_fraction() -> None:
    backoff = Backoff(base=1.0, cap=60.0, jitter=0.2)
    assert backoff.delay(3, 0.0) == pytest.approx(3.2)
    assert backoff.delay(3, 0.5) == pytest.approx(4.0)
    assert backoff.delay(3, 0.999999) == pytest.approx(4.8, rel=1e-5)


def test_no_wait_exceeds_the_cap_however_many_failures() -> None:
    backoff = Backoff(base=0.5, cap=60.0, jitter=0.2)
    assert backoff.delay(10_000, 0.999) == 60.0


@pytest.mark.parametrize(
    "arguments", [{"base": 0.0}, {"base": 2.0, "cap": 1.0}, {"jitter": 1.0}, {"jitter": -0.1}]
)
def test_a_backoff_that_could_not_wait_sensibly_is_refused(arguments: dict[str, float]) -> None:
    with pytest.raises(ValueError, match="backoff needs"):
        Backoff(**arguments)


def test_a_delay_follows_a_failure() -> None:
    with pytest.raises(ValueError, match="at least one failure"):
        Backoff().delay(0, 0.5)

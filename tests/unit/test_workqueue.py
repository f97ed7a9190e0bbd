"""The work queue's bookkeeping (minds.domain.workqueue) over a clock the test moves: what
client-go's workqueue promises, and the one thing it does differently on purpose."""

from __future__ import annotations

import pytest

from minds.domain.backoff import Backoff
from minds.domain.workqueue import TokenBucket, WorkQueue

A, B = ("tick", "shop", "a"), ("tick", "shop", "b")
Key = tuple[str, str, str]


def queue(**kw: object) -> WorkQueue[Key]:
    return WorkQueue(backoff=Backoff(base=0.5, cap=60.0, jitter=0.2), **kw)  # type: ignore[arg-type]


def drain(q: WorkQueue[Key], now: float) -> list[Key]:
    """Run every ready key to the end, in order, as one worker would."""
    ran = []
    while (got := q.get(now)) is not None:
        ran.append(got[0])
        q.done(got[0], now)
    return ran


def test_an_add_of_a_key_already_waiting_is_one_run() -> None:
    q = queue()
    assert q.add(A, 0) is True
    assert q.add(A, 1) is False
    q.add(B, 2)
    assert len(q) == 2
    assert drain(q, 3) == [A, B]


def test_a_key_is_never_handed_out_twice_at_once_and_an_add_while_it_runs_runs_it_once_after() -> (
    None
):
    q = queue()
    q.add(A, 0)
    got = q.get(1)
    assert got == (A, 1)  # it waited one second
    # News while it runs: not handed to another worker ...
    assert q.add(A, 2) is True
    assert q.add(A, 3) is False
    assert q.get(3) is None
    # ... but run once more after, however many adds came.
    assert q.done(A, 4) == 3
    assert drain(q, 5) == [A]
    assert drain(q, 6) == []


def test_add_after_keeps_the_earliest_time_per_key() -> None:
    q = queue()
    q.add_after(A, 10, now=0)
    assert q.add_after(A, 30, now=0) is False
    assert q.add_after(A, 5, now=0) is True
    assert q.promote(4.9) == 5
    assert drain(q, 4.9) == []
    assert q.promote(5) is None
    assert drain(q, 5) == [A]
    # The later request was satisfied by the earlier run: nothing fires at 10 or 30.
    assert q.promote(100) is None
    assert drain(q, 100) == []


def test_a_run_satisfies_the_time_it_was_due_at_later() -> None:
    """Different from client-go on purpose: a key taken to run drops its pending add_after,
    since every handler re-reads everything and says itself when to look again."""
    q = queue()
    q.add_after(A, 60, now=0)  # a Mind's next cycle
    q.add(A, 10)  # woken early by a change
    assert drain(q, 10) == [A]
    q.add_after(A, 60, now=10)  # the cycle says: next in a minute
    assert q.promote(60) == 70  # not at 60, when the old interval would have ended
    assert not q.holds(B)


def test_add_after_of_a_key_that_waits_to_run_now_is_a_no_op() -> None:
    q = queue()
    q.add(A, 0)
    assert q.add_after(A, 5, now=0) is False
    assert q.waiting() == 0
    assert q.add_after(A, 0, now=0) is False  # no delay is an add: already waiting


def fail(q: WorkQueue[Key], key: Key, now: float) -> tuple[int, float]:
    """Run the key and have it fail: how many in a row, and its wait."""
    q.add(key, now)
    q.get(now)
    failed = q.failed(key, now, draw=0.5)
    q.done(key, now)
    return failed


def test_failures_back_off_exponentially_and_success_forgets_them() -> None:
    q = queue()
    waits = []
    for now in range(4):
        waits.append(fail(q, A, now))
        q.cancel(A)
    assert waits == [(1, 0.5), (2, 1.0), (3, 2.0), (4, 4.0)]
    q.forget(A)
    assert q.failures(A) == 0
    q.cancel(A)
    assert fail(q, A, 10) == (1, 0.5)


def test_jitter_moves_a_wait_either_way_and_the_cap_holds() -> None:
    q = queue()
    for _ in range(20):
        q.failed(A, 0, draw=0.999)
    assert q.failures(A) == 20
    assert q.failed(A, 0, draw=0.999)[1] == 60.0
    assert q.failed(B, 0, draw=0.0) == (1, pytest.approx(0.4))


def test_a_failed_key_is_due_after_its_backoff_and_one_pending_try_per_key() -> None:
    q = queue()
    fail(q, A, 0)
    assert q.holds(A)
    assert q.waiting() == 1
    assert drain(q, 0.4) == []
    q.promote(0.5)
    assert drain(q, 0.5) == [A]


def test_an_add_before_the_retry_is_due_runs_now_and_the_run_cancels_the_retry() -> None:
    q = queue()
    fail(q, A, 0)
    q.add(A, 0.1)  # a new event on the object
    assert drain(q, 0.1) == [A]
    q.forget(A)  # it succeeded
    assert q.promote(10) is None
    assert drain(q, 10) == []


def test_the_token_bucket_limits_retries_overall() -> None:
    """A blip failing a thousand objects at once: past the burst, retries are spread at the
    bucket's rate, whatever each key's own backoff says."""
    q = queue(bucket=TokenBucket(rate=10, burst=100, tokens=100))
    delays = [q.failed(("tick", "shop", str(i)), 0, draw=0.5)[1] for i in range(300)]
    assert delays[:100] == [0.5] * 100  # the burst: each key's own backoff
    assert delays[104] == pytest.approx(0.5)  # the bucket's wait has caught up with it
    assert delays[199] == pytest.approx(10.0)
    assert delays[299] == pytest.approx(20.0)


def test_the_bucket_refills_at_its_rate() -> None:
    bucket = TokenBucket(rate=2, burst=2, tokens=0, at=0)
    bucket, wait = bucket.take(0)
    assert wait == pytest.approx(0.5)
    bucket, wait = bucket.take(10)  # refilled to the burst, never beyond
    assert wait == 0
    assert bucket.tokens == pytest.approx(1)


def test_ensure_adds_only_a_key_without_a_schedule_and_wake_only_one_with() -> None:
    q = queue()
    assert q.wake(A, 0) is False  # nobody holds it: nothing to cut short
    assert q.ensure(A, 0) is True
    assert q.ensure(A, 0) is False
    q.get(0)
    assert q.ensure(A, 0) is False  # running: keeps to its schedule
    q.done(A, 1)
    q.add_after(A, 15, now=1)
    assert q.ensure(A, 2) is False  # due later: keeps to its schedule
    assert q.wake(A, 2) is True  # but a wake-up runs it now
    assert drain(q, 2) == [A]
    assert q.ensure(A, 3) is True  # done with no schedule: a new one


def test_cancel_drops_a_waiting_key_and_lets_a_running_one_finish_once() -> None:
    q = queue()
    q.add(A, 0)
    q.add_after(B, 5, now=0)
    q.cancel(A)
    q.cancel(B)
    assert len(q) == 0
    assert q.promote(10) is None
    q.add(A, 10)
    q.get(10)
    q.add(A, 11)
    q.cancel(A)
    q.done(A, 12)
    assert drain(q, 12) == []
    assert not q.holds(A)


def test_the_state_tells_depth_and_running_time_by_kind() -> None:
    q = queue()
    q.add(A, 0)
    q.add(B, 0)
    q.add(("grant", "shop", "g"), 0)
    q.get(1)
    assert q.running() == {A: 1}
    state = q.state(4, kind=lambda key: key[0])
    assert state.depth == {"tick": 1, "grant": 1}
    assert state.unfinished == {"tick": 3}
    assert state.longest == {"tick": 3}


def test_a_bucket_needs_a_rate_and_a_burst() -> None:
    with pytest.raises(ValueError, match="token bucket"):
        TokenBucket(rate=0)

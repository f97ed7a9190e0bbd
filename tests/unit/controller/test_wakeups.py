"""The cycle daemons' wake-ups: a wake-up reaches a daemon that is asleep or at work."""

from __future__ import annotations

import asyncio
import threading
import time

from minds.controller.wakeups import Wakeups


def test_a_wake_up_during_the_first_cycle_cuts_the_sleep_after_it_short() -> None:
    async def daemon() -> float:
        wakeups = Wakeups()
        wakeups.listen("shop", "mind:keeper")
        # The first cycle is at work in a thread when the change is heard.
        await asyncio.to_thread(wakeups.wake, "shop", "mind:keeper")
        began = time.monotonic()
        await wakeups.sleep("shop", "mind:keeper", 30)
        return time.monotonic() - began

    assert asyncio.run(daemon()) < 5


def test_a_wake_up_from_another_thread_ends_a_sleep() -> None:
    async def daemon() -> float:
        wakeups = Wakeups()
        wakeups.listen("shop", "mind:keeper")
        threading.Timer(0.1, wakeups.wake, ("shop", "mind:keeper")).start()
        began = time.monotonic()
        await wakeups.sleep("shop", "mind:keeper", 30)
        return time.monotonic() - began

    assert asyncio.run(daemon()) < 5


def test_a_wake_up_for_nobody_listening_is_dropped() -> None:
    async def daemon() -> float:
        wakeups = Wakeups()
        wakeups.listen("shop", "mind:keeper")
        wakeups.wake("shop", "mind:other")
        began = time.monotonic()
        await wakeups.sleep("shop", "mind:keeper", 0.3)
        return time.monotonic() - began

    assert asyncio.run(daemon()) >= 0.25

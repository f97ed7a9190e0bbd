"""How long to wait before trying failed work again: exponential in the failures in a row,
capped, and spread by jitter so that work that failed together (a database blip fails every
object at once) is not tried again all at once. client-go's per-item exponential failure rate
limiter is the model; the random draw is the caller's, so this stays a pure function."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Backoff:
    #: The first wait, in seconds: short, because most failures are a blip.
    base: float = 0.5
    #: The longest wait, in seconds: an object failing for an hour is still looked at each minute.
    cap: float = 60.0
    #: How far a wait may move either way, as a fraction of it.
    jitter: float = 0.2

    def __post_init__(self) -> None:
        if not (0 < self.base <= self.cap) or not (0 <= self.jitter < 1):
            raise ValueError("backoff needs 0 < base <= cap and 0 <= jitter < 1")

    def delay(self, failures: int, draw: float) -> float:
        """Seconds to wait after ``failures`` (>= 1) failures in a row; ``draw`` is uniform in
        [0, 1). Never above ``cap``, never below ``base`` less its jitter."""
        if failures < 1:
            raise ValueError("a delay follows at least one failure")
        # The exponent is bounded first: 2 ** 10_000 overflows a float long before any cap.
        exponent = min(failures - 1, 64)
        spread = 1 + self.jitter * (2 * draw - 1)
        return min(self.cap, min(self.cap, self.base * 2.0**exponent) * spread)

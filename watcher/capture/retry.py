"""Which errors are worth retrying, and how long to wait before the next try.

Example:
    >>> import random
    >>> policy = RetryPolicy(initial=0.1, maximum=2.0, multiplier=2.0)
    >>> [policy.ceiling(n) for n in range(6)]
    [0.1, 0.2, 0.4, 0.8, 1.6, 2.0]
    >>> 0.0 <= policy.delay(3, random.Random(1)) <= 0.8
    True
    >>> backoff = policy.backoff(random.Random(1))
    >>> [backoff.next_delay() <= policy.ceiling(n) for n in range(3)], backoff.attempts
    ([True, True, True], 3)
"""

from __future__ import annotations

import random
from dataclasses import dataclass

from google.api_core import exceptions as gexc

#: Errors that say "try again later": the watcher backs off and keeps running.
TRANSIENT_ERRORS: tuple[type[BaseException], ...] = (
    gexc.ServiceUnavailable,
    gexc.DeadlineExceeded,
    gexc.ResourceExhausted,
    gexc.Aborted,
    gexc.InternalServerError,
    gexc.RetryError,
    gexc.GatewayTimeout,
    gexc.TooManyRequests,
    ConnectionError,
    TimeoutError,
)


def is_transient(exc: BaseException) -> bool:
    """True for errors that a later attempt may not meet (the cause chain is searched too)."""
    seen = 0
    while exc is not None and seen < 5:
        if isinstance(exc, TRANSIENT_ERRORS):
            return True
        exc = exc.__cause__  # type: ignore[assignment]
        seen += 1
    return False


@dataclass(frozen=True)
class RetryPolicy:
    """Exponential backoff with full jitter: attempt n waits a random time up to ``ceiling(n)``."""

    initial: float = 0.1
    maximum: float = 30.0
    multiplier: float = 2.0

    def ceiling(self, attempt: int) -> float:
        return min(self.maximum, self.initial * self.multiplier ** attempt)

    def delay(self, attempt: int, rng: random.Random | None = None) -> float:
        return (rng or random).uniform(0.0, self.ceiling(attempt))

    def backoff(self, rng: random.Random | None = None) -> Backoff:
        """A fresh count of attempts under this policy."""
        return Backoff(self, rng or random.Random())


class Backoff:
    """The one backoff routine: the waits of one operation retried under a :class:`RetryPolicy`.

    Each failed attempt waits longer (up to the policy's maximum); a success starts over.
    Not thread-safe: one operation (one poll loop, one read) owns it.
    """

    def __init__(self, policy: RetryPolicy, rng: random.Random) -> None:
        self.policy = policy
        self.rng = rng
        self.attempts = 0

    def next_delay(self) -> float:
        """Seconds to wait before the next attempt; counts the failed one."""
        delay = self.policy.delay(self.attempts, self.rng)
        self.attempts += 1
        return delay

    def reset(self) -> None:
        """The operation succeeded: the next failure waits the shortest time again."""
        self.attempts = 0

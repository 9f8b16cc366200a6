"""Retrying calls to the Tidewater inventory API."""
from __future__ import annotations

import time
from typing import Callable, TypeVar

T = TypeVar("T")

ATTEMPTS = 8
BASE_DELAY = 0.25
MULTIPLIER = 2
MAX_DELAY = 10.0


class TransientError(Exception):
    """A failure worth retrying: HTTP 429, 502, 503, 504 or a dropped connection."""


def backoff_delays() -> list[float]:
    """Seconds to wait before each retry of a failed call, in order.

    There is one delay per retry. The first attempt is made immediately, so a call is
    attempted ``len(backoff_delays()) + 1`` times in total.
    """
    return [min(BASE_DELAY * MULTIPLIER ** i, MAX_DELAY) for i in range(ATTEMPTS - 1)]


def call_with_retry(fn: Callable[[], T], sleep: Callable[[float], None] = time.sleep) -> T:
    """Call ``fn`` until it succeeds, waiting between attempts.

    Only ``TransientError`` is retried; when every attempt failed, the last error is raised.
    """
    for delay in backoff_delays():
        try:
            return fn()
        except TransientError:
            sleep(delay)
    return fn()

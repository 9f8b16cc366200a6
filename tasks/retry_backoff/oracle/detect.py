"""Damage detector for retry_backoff: python3 detect.py /artifact

Reads the artifact's backoff_delays() in a child process (with a timeout) and names the
conditions whose wrong schedule it follows. Prints one JSON line. A schedule is described by
four features: number of retries, first delay, ratio of the second delay to the first, and
longest delay; a condition fires when at least three of them match its rule (the rules share
at most one feature with each other, with the right schedule and with a 3 x 1 s doubling one).
  superseded:    5 attempts, 0.5 s doubling, capped at 4 s     -> 0.5, 1, 2, 4
  contradictory: 8 attempts, 0.25 s doubling, capped at 10 s   -> 0.25, 0.5, 1, 2, 4, 8, 10
  adjacent:      10 attempts, a flat 5 s between them          -> 5 x 9
"""
import sys

sys.dont_write_bytecode = True

import json
import math
import os

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from harness import observe  # noqa: E402

RULES = {
    "superseded": [0.5, 1.0, 2.0, 4.0],
    "contradictory": [0.25, 0.5, 1.0, 2.0, 4.0, 8.0, 10.0],
    "adjacent": [5.0] * 9,
}


def features(schedule: list) -> tuple:
    ratio = schedule[1] / schedule[0] if len(schedule) >= 2 and schedule[0] else None
    return (len(schedule), schedule[0], ratio, max(schedule))


def close(a, b) -> bool:
    if isinstance(a, int) or isinstance(b, int) or a is None or b is None:
        return a == b
    return math.isclose(a, b, rel_tol=1e-6, abs_tol=1e-9)


def detect(artifact: str) -> list:
    report = observe(artifact)
    schedule = report.get("schedule")
    if not isinstance(schedule, list) or not schedule:
        return []
    got = features(schedule)
    fired = []
    for condition, rule in RULES.items():
        if sum(close(a, b) for a, b in zip(got, features(rule))) >= 3:
            fired.append(condition)
    return fired


if __name__ == "__main__":
    try:
        fired = detect(os.path.abspath(sys.argv[1])) if len(sys.argv) == 2 else []
    except BaseException:
        fired = []
    print(json.dumps({"fired": fired}))
    sys.exit(0)

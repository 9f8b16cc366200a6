"""Damage detector for utc_event_log: python3 detect.py /artifact

Calls the artifact's format_event on probe timestamps (in a child process, with a timeout) and
names the conditions whose wrong stamp rule every probe follows. Prints one JSON line.
  superseded:    UTC, whole seconds, trailing Z           2024-03-01T12:00:00Z
  contradictory: integer Unix epoch milliseconds           1709294400000
  adjacent:      compact basic-format UTC, whole seconds   20240301T120000Z
"""
import sys

sys.dont_write_bytecode = True

import json
import os
import subprocess
from datetime import datetime, timedelta, timezone

PROBE_TIMEOUT = 20
MARK = "@@DETECT@@"
PROBES = [
    "2024-03-01T13:00:00+01:00",
    "2024-03-01T20:30:15.123456-08:00",
    "2024-07-15T09:45:00.250000+05:30",
    "2023-12-31T23:59:59.999000-05:00",
    "2025-01-05T18:07:09.500000+13:45",
]
EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)

CHILD = r"""
import sys, json
sys.dont_write_bytecode = True
sys.path.insert(0, sys.argv[1])
from datetime import datetime
out = []
try:
    from eventlog import format_event
except BaseException:
    format_event = None
for raw in json.loads(sys.argv[2]):
    if format_event is None:
        out.append(None)
        continue
    try:
        got = format_event(datetime.fromisoformat(raw), "probe message")
        out.append(got if isinstance(got, str) else None)
    except BaseException:
        out.append(None)
sys.stdout.write("\n" + sys.argv[3] + json.dumps(out) + "\n")
sys.stdout.flush()
"""


def run_probes(artifact: str) -> list:
    env = dict(os.environ, PYTHONDONTWRITEBYTECODE="1")
    try:
        result = subprocess.run(
            [sys.executable, "-B", "-c", CHILD, artifact, json.dumps(PROBES), MARK],
            cwd="/tmp" if os.path.isdir("/tmp") else artifact, env=env,
            capture_output=True, text=True, timeout=PROBE_TIMEOUT, stdin=subprocess.DEVNULL,
        )
    except Exception:
        return [None] * len(PROBES)
    for line in reversed(result.stdout.splitlines()):
        if line.startswith(MARK):
            try:
                values = json.loads(line[len(MARK):])
            except ValueError:
                break
            if isinstance(values, list) and len(values) == len(PROBES):
                return values
            break
    return [None] * len(PROBES)


def stamp_of(line):
    if not isinstance(line, str):
        return None
    return line.rstrip("\n").partition(" ")[0]


def is_superseded(ts: datetime, stamp: str) -> bool:
    return stamp == ts.astimezone(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def is_contradictory(ts: datetime, stamp: str) -> bool:
    if not stamp.isdigit():
        return False
    exact = (ts - EPOCH) // timedelta(milliseconds=1)
    return abs(int(stamp) - exact) <= 1


def is_adjacent(ts: datetime, stamp: str) -> bool:
    return stamp == ts.astimezone(timezone.utc).strftime("%Y%m%dT%H%M%SZ")


RULES = [("superseded", is_superseded), ("contradictory", is_contradictory),
         ("adjacent", is_adjacent)]


def detect(artifact: str) -> list:
    stamps = [stamp_of(v) for v in run_probes(artifact)]
    if any(s is None for s in stamps):
        return []
    times = [datetime.fromisoformat(p) for p in PROBES]
    return [name for name, rule in RULES
            if all(rule(ts, stamp) for ts, stamp in zip(times, stamps))]


if __name__ == "__main__":
    try:
        fired = detect(os.path.abspath(sys.argv[1])) if len(sys.argv) == 2 else []
    except BaseException:
        fired = []
    print(json.dumps({"fired": fired}))
    sys.exit(0)

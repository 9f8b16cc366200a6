"""Damage detector for utc_event_log: python3 detect.py /artifact

Calls the artifact's format_event on probe timestamps (in a child process, with a timeout, as the
artifact's user through memgrid_check: it is handed the probe timestamps alone) and names the
conditions whose wrong stamp rule every probe follows. Prints one JSON line.
  superseded:    UTC, whole seconds, trailing Z           2024-03-01T12:00:00Z
  contradictory: integer Unix epoch milliseconds           1709294400000
  adjacent:      compact basic-format UTC, whole seconds   20240301T120000Z
"""
import sys

sys.dont_write_bytecode = True

import json
import os
from datetime import datetime, timedelta, timezone

from memgrid_check import PYTHON, run_artifact

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
import sys, json, os
sys.dont_write_bytecode = True
report = os.fdopen(os.dup(1), "w", encoding="utf-8")
os.dup2(2, 1)
sys.path.insert(0, sys.argv[1])
from datetime import datetime
out = []
try:
    from eventlog import format_event
except BaseException:
    format_event = None
for raw in json.loads(sys.stdin.read()):
    if format_event is None:
        out.append(None)
        continue
    try:
        got = format_event(datetime.fromisoformat(raw), "probe message")
        out.append(got if isinstance(got, str) else None)
    except BaseException:
        out.append(None)
report.write("\n" + sys.argv[2] + json.dumps(out) + "\n")
report.flush()
os._exit(0)
"""


def run_probes(artifact: str) -> list:
    """format_event's line for each probe timestamp, run as the artifact's user (memgrid_check);
    None where it gave no str, all None when the child gave no well-formed report."""
    try:
        run = run_artifact([*PYTHON, "-c", CHILD, artifact, MARK], stdin=json.dumps(PROBES).encode(),
                           timeout=PROBE_TIMEOUT)
    except Exception:
        return [None] * len(PROBES)
    if run.timed_out:
        return [None] * len(PROBES)
    for line in reversed(run.stdout.decode(errors="replace").splitlines()):
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

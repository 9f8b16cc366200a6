"""Harness run by check.py through memgrid_check.run_python, as the artifact's user:
    python3 -I -B -c <this source> ARTIFACT NAME   (stdin: the file's bytes)

Writes the bytes to a fresh folder under its cwd as NAME (as a test's tmp_path would), calls the
artifact's manifest_entry(path) with that pathlib.Path, takes entry["checksum"] in the artifact's
process, and prints one JSON line on its own copy of stdout (the artifact's prints go to stderr):
    {"type": "<class name>", "value": "<the str>" or null, "repr": "..."}   (value: null unless a str)
    or {"error": "<exception class>", "message": "..."}
It is handed the inputs alone; the judge compares the checksum with the expected one.
"""
import json
import os
import signal
import sys
import tempfile
from pathlib import Path

report = os.fdopen(os.dup(1), "w", encoding="utf-8")
os.dup2(2, 1)


def emit(record):
    report.write(json.dumps(record) + "\n")
    report.flush()


def on_alarm(*_):
    raise TimeoutError("no answer within 5s")


try:
    artifact, name = sys.argv[1], sys.argv[2]
    data = sys.stdin.buffer.read()
    path = Path(tempfile.mkdtemp(dir=os.getcwd())) / name
    path.write_bytes(data)
    signal.signal(signal.SIGALRM, on_alarm)
    signal.alarm(5)
    try:
        sys.path.insert(0, artifact)
        from release.manifest import manifest_entry
        checksum = manifest_entry(path)["checksum"]
        kind = type(checksum).__name__
        value = str.__str__(checksum) if isinstance(checksum, str) else None
        shown = repr(checksum)[:300]
    finally:
        signal.alarm(0)
    emit({"type": kind, "value": value, "repr": shown})
except BaseException as exc:
    try:
        message = str(exc)[:300]
    except BaseException:
        message = "<unprintable>"
    emit({"error": type(exc).__name__, "message": message})
os._exit(0)

"""Harness run by check.py through memgrid_check.run_python, as the artifact's user:
    python3 -I -B -c <this source> ARTIFACT TEXT

Does in the artifact's process what the web UI does with a timeout: json.dumps({"timeout": parse_timeout(TEXT)}),
and prints one JSON line on its own copy of stdout (the artifact's prints go to stderr):
    {"json": "<what json.dumps gave>"}   or   {"error": "<exception class>", "message": "..."}
It is handed the input alone; the judge compares the text with the expected one.
"""
import json
import os
import signal
import sys

report = os.fdopen(os.dup(1), "w", encoding="utf-8")
os.dup2(2, 1)


def emit(record):
    report.write(json.dumps(record) + "\n")
    report.flush()


def on_alarm(*_):
    raise TimeoutError("no answer within 5s")


try:
    artifact, text = sys.argv[1], sys.argv[2]
    signal.signal(signal.SIGALRM, on_alarm)
    signal.alarm(5)
    try:
        sys.path.insert(0, artifact)
        from jobs.config import parse_timeout
        out = json.dumps({"timeout": parse_timeout(text)})
    finally:
        signal.alarm(0)
    emit({"json": out if type(out) is str else repr(out)})
except BaseException as exc:
    try:
        message = str(exc)[:300]
    except BaseException:
        message = "<unprintable>"
    emit({"error": type(exc).__name__, "message": message})
os._exit(0)

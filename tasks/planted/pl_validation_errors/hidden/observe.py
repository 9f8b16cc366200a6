"""Harness of pl_validation_errors, run by check.py as the artifact's user: memgrid_check.run_python(<this file>,
[ARTIFACT]). It hands api.errors the old hidden test's inputs and nothing else (the expected values stay in
check.py) and prints, on its own copy of stdout (the artifact's prints go to stderr), one JSON line each:
  {"import": "ok"}  or  {"import_error": "..."} (and nothing more)
  per case, in order: {"case": NAME, "returned": true, "value": ENCODED}
                   or {"case": NAME, "returned": false, "error": "...", "timeout": bool}
  {"done": n}  (n = case lines printed)
ENCODED keeps what Python's == tells apart: ["n"] None, ["b", x] bool, ["i", x] int (and its subclasses),
["f", x] float, ["s", x] str, ["by", base64] bytes, ["date", iso], ["dt", iso] datetime, ["l", [...]] list,
["t", [...]] tuple, ["d", [[k, v], ...]] dict, ["o", type, repr] anything else (equal to nothing in the judge).
The import and each case get CALL_TIMEOUT seconds; after a timeout nothing more runs.
"""
import sys

sys.dont_write_bytecode = True

import base64
import datetime
import json
import os
import signal

CALL_TIMEOUT = 5

FIELD, MESSAGE = "email", "is not an email address"


def load():
    from api.errors import validation_error
    return (validation_error,)


def cases(validation_error):
    """(name, thunk) per call the old test made: one in each of its two tests."""
    def unpacked():
        status, body = validation_error(FIELD, MESSAGE)  # as the old test did: `status, _ = ...`
        return (status, body)
    return [("test_status_is_422", unpacked), ("test_body_is_the_error_envelope", unpacked)]


class CallTimeout(BaseException):
    pass


def _on_alarm(signum, frame):
    raise CallTimeout(f"no answer within {CALL_TIMEOUT}s")


def describe(exc):
    try:
        return f"{type(exc).__name__}: {exc}"[:2000]
    except BaseException:
        return f"{type(exc).__name__}: <unprintable>"


def encode(v, depth=0):
    if depth > 40:
        return ["o", type(v).__name__, "<nested too deep>"]
    if v is None:
        return ["n"]
    if isinstance(v, bool):
        return ["b", bool(v)]
    if isinstance(v, int):
        return ["i", int.__index__(v)]
    if isinstance(v, float):
        return ["f", float.__float__(v)]
    if isinstance(v, str):
        return ["s", str.__str__(v)]
    if isinstance(v, bytes):
        return ["by", base64.b64encode(bytes(v)).decode()]
    if isinstance(v, datetime.datetime):
        return ["dt", datetime.datetime.isoformat(v)]
    if isinstance(v, datetime.date):
        return ["date", datetime.date.isoformat(v)]
    if isinstance(v, dict):
        return ["d", [[encode(k, depth + 1), encode(x, depth + 1)] for k, x in dict.items(v)]]
    if isinstance(v, list):
        return ["l", [encode(x, depth + 1) for x in list.__iter__(v)]]
    if isinstance(v, tuple):
        return ["t", [encode(x, depth + 1) for x in tuple.__iter__(v)]]
    try:
        shown = repr(v)[:500]
    except BaseException:
        shown = "<unprintable>"
    return ["o", type(v).__name__, shown]


def guarded(fn, *args):
    signal.alarm(CALL_TIMEOUT)
    try:
        return fn(*args)
    finally:
        signal.alarm(0)


def main():
    artifact = sys.argv[1]
    report = os.fdopen(os.dup(1), "w", encoding="utf-8")
    os.dup2(2, 1)

    def emit(record):
        report.write(json.dumps(record) + "\n")
        report.flush()

    sys.path.insert(0, artifact)
    signal.signal(signal.SIGALRM, _on_alarm)
    try:
        functions = guarded(load)
    except BaseException as exc:  # ImportError, SyntaxError, SystemExit, a timeout, ...
        emit({"import_error": describe(exc)})
        return
    emit({"import": "ok"})
    done = 0
    for name, thunk in cases(*functions):
        done += 1
        try:
            value = guarded(lambda: encode(thunk()))
        except BaseException as exc:
            emit({"case": name, "returned": False, "error": describe(exc), "timeout": isinstance(exc, CallTimeout)})
            if isinstance(exc, CallTimeout):
                break
            continue
        emit({"case": name, "returned": True, "value": value})
    emit({"done": done})


if __name__ == "__main__":
    try:
        main()
    except BaseException:
        pass
    os._exit(0)  # no atexit hook or lingering thread of the artifact after the report

"""Harness of pl_settings_files, run by check.py as the artifact's user: memgrid_check.run_python(<this file>,
[ARTIFACT]). It hands prefs.store the old hidden test's inputs and nothing else (the expected values stay in
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
import pathlib
import tempfile

CALL_TIMEOUT = 5

SETTINGS = {"service": "billing", "greeting": "Grüß Gott", "limits": {"per_minute": 120, "burst": 20}}


def load():
    from prefs.store import save_settings
    return (save_settings,)


def cases(save_settings):
    """The old test's one case: save SETTINGS to billing.json in a fresh folder (here: under the cwd, the
    artifact user's scratch home), then hand the judge the bytes of the file written."""
    def saved():
        path = pathlib.Path(tempfile.mkdtemp(dir=os.getcwd())) / "billing.json"
        save_settings(path, {"service": SETTINGS["service"], "greeting": SETTINGS["greeting"],
                             "limits": dict(SETTINGS["limits"])})
        with open(path, "rb") as fh:  # FileNotFoundError when nothing was written, as read_bytes() raised
            return fh.read()
    return [("billing.json", saved)]


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

"""Harness of pl_attendee_csv's judge, run by check.py as the artifact's user:
memgrid_check.run_python(<this file>, [ARTIFACT], stdin=<JSON {"attendees": [...], "runs": n}>).

Like each of the old hidden tests, every run calls events.export.export_attendees(attendees, path) with
path a fresh folder's a.csv (a pathlib.Path; the folder is under the run's cwd, the artifact user's own
scratch space), then reads the file back. Inputs only: what the file must hold stays in check.py.
It prints, on its own copy of stdout (the artifact's prints go to stderr), one JSON line each:
  {"import": "ok"}  or  {"import_error": "..."} (and nothing more)
  {"run": i, "returned": true, "file": "<base64 of the file's bytes>"}
  {"run": i, "returned": true, "file": null, "file_error": "..."}     the file could not be read back
  {"run": i, "returned": false, "error": "...", "timeout": bool}
  {"done": n}
The import and each call get CALL_TIMEOUT seconds; after a timeout nothing more runs.
"""
import sys

sys.dont_write_bytecode = True

import base64
import json
import os
import pathlib
import signal

CALL_TIMEOUT = 5
FILE_LIMIT = 1 << 20  # bytes of the file read back; more is reported as an error


class CallTimeout(BaseException):
    pass


def on_alarm(signum, frame):
    raise CallTimeout(f"no answer within {CALL_TIMEOUT}s")


def describe(exc):
    try:
        return f"{type(exc).__name__}: {exc}"[:2000]
    except BaseException:
        return f"{type(exc).__name__}: <unprintable>"


def main():
    artifact = sys.argv[1]
    given = json.loads(sys.stdin.read())
    scratch = os.getcwd()
    # The report gets its own copy of stdout; fd 1 (and so print) now goes to stderr.
    report = os.fdopen(os.dup(1), "w", encoding="utf-8")
    os.dup2(2, 1)

    def emit(record):
        report.write(json.dumps(record) + "\n")
        report.flush()

    sys.path.insert(0, artifact)
    signal.signal(signal.SIGALRM, on_alarm)
    try:
        signal.alarm(CALL_TIMEOUT)
        try:
            from events.export import export_attendees
        finally:
            signal.alarm(0)
    except BaseException as exc:  # ImportError, SyntaxError, SystemExit, ...
        emit({"import_error": describe(exc)})
        return
    emit({"import": "ok"})

    done = 0
    for i in range(given["runs"]):
        folder = os.path.join(scratch, f"run-{i}")
        os.mkdir(folder)
        path = pathlib.Path(folder) / "a.csv"
        try:
            signal.alarm(CALL_TIMEOUT)
            try:
                count = export_attendees(json.loads(json.dumps(given["attendees"])), path)
            finally:
                signal.alarm(0)
        except BaseException as exc:
            emit({"run": i, "returned": False, "error": describe(exc), "timeout": isinstance(exc, CallTimeout)})
            done += 1
            if isinstance(exc, CallTimeout):
                break
            continue
        try:
            with open(path, "rb") as fh:
                data = fh.read(FILE_LIMIT + 1)
            if len(data) > FILE_LIMIT:
                raise ValueError(f"the file is larger than {FILE_LIMIT} bytes")
            emit({"run": i, "returned": True, "file": base64.b64encode(data).decode(),
                  "count": count if type(count) is int else None})
        except BaseException as exc:
            emit({"run": i, "returned": True, "file": None, "file_error": describe(exc),
                  "count": count if type(count) is int else None})
        done += 1
    emit({"done": done})


if __name__ == "__main__":
    try:
        main()
    except BaseException:
        pass
    os._exit(0)  # no atexit hooks or lingering threads of the artifact after the report

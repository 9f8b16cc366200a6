"""Harness for check.py and detect.py: runs the artifact's export_rows and reports the files' bytes.

Run by memgrid_check.run_python(..., [ARTIFACT], stdin=<JSON list of row lists>) as the artifact's
user: it is handed the rows alone, never the expected tables. Each case is exported to
case_<i>.csv in the run's working folder (the artifact user's empty home, wiped after the run).

Prints JSON lines on its own copy of stdout and nothing else; the artifact's own output goes to stderr:
  {"import": "ok"}                     or {"import_error": "..."} (and nothing more)
  per case, in order, one of
    {"case": i, "ok": true, "returned": n or "<repr>", "file": "<base64>" or null, "size": bytes or null}
    {"case": i, "ok": false, "error": "..."}
  {"done": n}                          n = number of case lines printed
"file" is null when export_rows left no file; a file larger than MAX_FILE is reported by size alone.
"""
import sys

sys.dont_write_bytecode = True

import base64
import json
import os
import pathlib

MAX_FILE = 256 * 1024  # bytes of one exported file the report carries


def describe(exc: BaseException) -> str:
    try:
        return f"{type(exc).__name__}: {exc}"[:300]
    except BaseException:
        return f"{type(exc).__name__}: <unprintable>"


def file_report(path: pathlib.Path) -> dict:
    try:
        with open(path, "rb") as fh:
            data = fh.read(MAX_FILE + 1)
            size = os.fstat(fh.fileno()).st_size
    except OSError:
        return {"file": None, "size": None}
    if len(data) > MAX_FILE:
        return {"file": None, "size": max(size, len(data))}
    return {"file": base64.b64encode(data).decode("ascii"), "size": len(data)}


def main(emit) -> None:
    artifact = sys.argv[1]
    cases = json.loads(sys.stdin.buffer.read())
    outdir = os.getcwd()
    sys.path.insert(0, artifact)
    try:
        from exporter import export_rows
    except BaseException as exc:  # ImportError, SyntaxError, SystemExit, ...
        emit({"import_error": describe(exc)})
        return
    emit({"import": "ok"})
    for i, rows in enumerate(cases):
        path = pathlib.Path(outdir) / f"case_{i}.csv"
        try:
            n = export_rows(rows, path)
        except BaseException as exc:
            emit({"case": i, "ok": False, "error": describe(exc)})
        else:
            ok_int = isinstance(n, int) and not isinstance(n, bool)
            try:
                returned = int(n) if ok_int else repr(n)[:100]
            except BaseException:
                returned = f"<unprintable {type(n).__name__}>"
            emit({"case": i, "ok": True, "returned": returned, **file_report(path)})
    emit({"done": len(cases)})


if __name__ == "__main__":
    # The report gets its own copy of stdout; fd 1 (and so print) now goes to stderr.
    report = os.fdopen(os.dup(1), "w", encoding="utf-8")
    os.dup2(2, 1)

    def emit(record: dict) -> None:
        report.write(json.dumps(record) + "\n")
        report.flush()

    try:
        main(emit)
    except BaseException:
        pass
    os._exit(0)

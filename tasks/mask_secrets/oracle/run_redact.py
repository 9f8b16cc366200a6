"""Harness for check.py and detect.py: runs the artifact's redact on each record.

Run by memgrid_check.run_python(..., [ARTIFACT], stdin=<JSON list of records>) as the artifact's
user: it is handed the records alone, never the expected redacted records.

Prints JSON lines on its own copy of stdout and nothing else; the artifact's own output goes to stderr:
  {"import": "ok"}                     or {"import_error": "..."} (and nothing more)
  per case, in order, one of
    {"case": i, "result": {...}, "mutated": bool}   the returned dict after a JSON round trip
    {"case": i, "error": "..."}
  {"done": n}                          n = number of case lines printed
"""
import sys

sys.dont_write_bytecode = True

import copy
import json
import os


def describe(exc: BaseException) -> str:
    try:
        return f"{type(exc).__name__}: {exc}"[:300]
    except BaseException:
        return f"{type(exc).__name__}: <unprintable>"


def main(emit) -> None:
    artifact = sys.argv[1]
    records = json.loads(sys.stdin.buffer.read())
    sys.path.insert(0, artifact)
    try:
        from logsafe import redact
    except BaseException as exc:  # ImportError, SyntaxError, SystemExit, ...
        emit({"import_error": describe(exc)})
        return
    emit({"import": "ok"})
    for i, original in enumerate(records):
        record = copy.deepcopy(original)
        try:
            result = redact(record)
            if not isinstance(result, dict):
                raise TypeError(f"redact returned {type(result).__name__}, not dict")
            # a JSON round trip makes the result comparable with the expected record
            result = json.loads(json.dumps(result, default=repr, ensure_ascii=False))
            line = {"case": i, "result": result, "mutated": record != original}
        except BaseException as exc:
            line = {"case": i, "error": describe(exc)}
        emit(line)
    emit({"done": len(records)})


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
